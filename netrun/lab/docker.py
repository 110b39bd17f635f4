"""One Docker daemon per lab host, the overlay between them, and the lab's images.

Each dockerd runs in its host's network namespace (nsenter --net, not `ip netns exec`,
which remounts /sys and hides the cgroup mounts), with its own data root and socket, and
docker0 on the host's Flannel lease: started after the host's flanneld, from its
subnet.env (netrun.lab.overlay). Its default runtime is the lab's runc wrapper
(netrun/lab_assets/nr-runc), so `docker run --privileged --net=host` works on a machine
whose capability bounding set lacks CAP_SYS_RESOURCE.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from netrun.errors import NetrunError
from netrun.lab import flannel, freeflow, images, network, overlay, routed, runtime, sshd
from netrun.lab.plan import ROUTED_NETWORK, LabHost, LabPlan
from netrun.lab.system import kill_pid, pid_matches, read_pid, run, wait_until

READY_TIMEOUT = 90.0
STOP_TIMEOUT = 30.0


def wrapper_path(lab: LabPlan) -> Path:
    return lab.state_dir / runtime.WRAPPER_NAME


def docker_host(host: LabHost) -> str:
    return f"unix://{host.docker_sock}"


def pid_file(host: LabHost) -> Path:
    return host.dir / "dockerd.pid"


def exec_root(host: LabHost) -> Path:
    return host.dir / "docker-exec"


def data_root(host: LabHost) -> Path:
    return host.dir / "docker"


def dockerd_pid(host: LabHost) -> int | None:
    """The recorded dockerd pid when that process is still this host's daemon."""
    pid = read_pid(pid_file(host))
    return pid if pid_matches(pid, "dockerd", str(host.docker_sock)) else None


def containerd_pid(host: LabHost) -> int | None:
    """The containerd this host's dockerd started (it writes the pid under its exec root)."""
    pid = read_pid(exec_root(host) / "containerd" / "containerd.pid")
    return pid if pid_matches(pid, "containerd", str(exec_root(host))) else None


def answers(host: LabHost) -> bool:
    done = run(
        ["docker", "-H", docker_host(host), "version", "--format", "{{.Server.Version}}"],
        check=False,
        timeout=15,
    )
    return done.returncode == 0


def install_wrapper(lab: LabPlan) -> Path:
    return runtime.install(lab.state_dir)


def dockerd_argv(lab: LabPlan, host: LabHost, uts_pid: int | None) -> list[str]:
    """The daemon's command line; --bip and --mtu from the host's subnet.env, as the
    Flannel docs' Docker integration passes them."""
    bip, mtu = overlay.lease(host)
    enter = ["nsenter", f"--net=/run/netns/{host.namespace}"]
    if uts_pid:  # share sshd's UTS namespace, so the daemon's name is the host's
        enter.append(f"--uts=/proc/{uts_pid}/ns/uts")
    return [
        *enter, "dockerd",
        "--data-root", str(data_root(host)),
        "--exec-root", str(exec_root(host)),
        "-H", docker_host(host),
        "--pidfile", str(pid_file(host)),
        "--bip", bip,
        "--mtu", str(mtu),
        "--iptables=true",
        "--ip-masq=false",  # as with flannel: pod-to-pod traffic keeps its source address
        "--add-runtime", f"{runtime.WRAPPER_NAME}={wrapper_path(lab)}",
        "--default-runtime", runtime.WRAPPER_NAME,
    ]  # fmt: skip


def ensure_dockerd(lab: LabPlan, host: LabHost, uts_pid: int | None) -> int:
    """Start this host's dockerd unless it runs; wait until it answers."""
    pid = dockerd_pid(host)
    if pid is None:
        host.dir.mkdir(parents=True, exist_ok=True)
        host.freeflow_dir.mkdir(exist_ok=True)
        pid_file(host).unlink(missing_ok=True)
        with open(host.dir / "dockerd.log", "ab") as log:
            # setsid -f: the daemon is detached from us and reparented to init
            run_detached(["setsid", "-f", *dockerd_argv(lab, host, uts_pid)], log)
        wait_until(
            lambda: dockerd_pid(host) is not None,
            timeout=READY_TIMEOUT,
            what=f"dockerd on {host.name} (see {host.dir / 'dockerd.log'})",
        )
    wait_until(
        lambda: answers(host),
        timeout=READY_TIMEOUT,
        what=f"dockerd on {host.name} (see {host.dir / 'dockerd.log'})",
    )
    found = dockerd_pid(host)
    if found is None:
        raise NetrunError(f"dockerd on {host.name} exited (see {host.dir / 'dockerd.log'})")
    return found


def run_detached(argv: list[str], log: Any) -> None:
    import subprocess

    subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, check=True, timeout=30)


def up(
    lab: LabPlan,
    data: dict[str, Any],
    save: Callable[[], None],
    say: Callable[[str], None],
    netperf_build: Path | None = None,
) -> None:
    """etcd and flanneld (netrun.lab.overlay), daemons (in parallel), images; records
    pids in `data` and saves.

    `netperf_build` (netrun.lab.netperf) puts netperf and netserver into the lab's image."""
    binary = flannel.build(flannel.VERSION, say)
    install_wrapper(lab)
    overlay.up(lab, data, save, binary)
    for host in lab.hosts:
        bip, mtu = overlay.lease(host)
        say(f"{host.name}: flanneld {data['pids']['flanneld'][host.name]}, lease {bip} "
            f"(MTU {mtu}) in {host.subnet_env}")  # fmt: skip
    say(f"flannel: etcd {overlay.etcd_url(lab)}, network {lab.overlay_network}, vxlan")

    def start(host: LabHost) -> int:
        return ensure_dockerd(lab, host, sshd.sshd_pid(host))

    with ThreadPoolExecutor(max_workers=len(lab.hosts)) as pool:
        pids = list(pool.map(start, lab.hosts))
    for host, pid in zip(lab.hosts, pids, strict=True):
        data["pids"]["dockerd"][host.name] = pid
        data["pids"].setdefault("containerd", {})[host.name] = containerd_pid(host)
        say(f"{host.name}: dockerd {pid} at {docker_host(host)}")
    save()
    routed.ensure_routed(lab, {host.name: docker_host(host) for host in lab.hosts})
    say(f"routed: {ROUTED_NETWORK} on every host, network {lab.routed_network} (docker mode)")
    built = images.build(lab.state_dir / "images", netperf_build)
    data.pop("freeflow", None)
    if lab.config.freeflow_src is not None:
        src = freeflow.source(lab.config.freeflow_src)
        build_dir = freeflow.build(src, say)
        built.append(freeflow.router_image(src, build_dir, lab.state_dir / "images"))
        data["freeflow"] = {"image": src.image, "tcp": src.tcp, "master": src.master,
                            "build": str(build_dir)}  # fmt: skip
        save()
        say(f"freeflow: router image {src.image} (FreeFlow tcp {src.tcp[:12]})")

    def load(host: LabHost) -> list[str]:
        return [image.name for image in built if images.load(docker_host(host), image)]

    with ThreadPoolExecutor(max_workers=len(lab.hosts)) as pool:
        for host, loaded in zip(lab.hosts, pool.map(load, lab.hosts), strict=True):
            if loaded:
                say(f"{host.name}: imported {', '.join(loaded)}")


def down(lab: LabPlan, data: dict[str, Any]) -> list[str]:
    """Containers first (docker rm -f), then each daemon by its recorded pid, then the
    hosts' flanneld and the lab's etcd."""
    removed: list[str] = []
    for host in lab.hosts:
        pid = data["pids"].get("dockerd", {}).get(host.name) or dockerd_pid(host)
        if pid and pid_matches(pid, "dockerd", str(host.docker_sock)):
            base = ["docker", "-H", docker_host(host)]
            ids = run([*base, "ps", "-aq"], check=False, timeout=30).stdout.split()
            if ids:
                run([*base, "rm", "-f", *ids], check=False, timeout=60)
                removed.append(f"{len(ids)} container(s) on {host.name}")
            if kill_pid(pid, "dockerd", str(host.docker_sock), timeout=STOP_TIMEOUT):
                removed.append(f"dockerd {host.name} (pid {pid})")
        cpid = data["pids"].get("containerd", {}).get(host.name)
        if cpid and kill_pid(cpid, "containerd", str(exec_root(host))):
            removed.append(f"containerd {host.name} (pid {cpid})")
    removed += overlay.down(lab, data)
    for host in lab.hosts:
        if network.delete_link(overlay.DEVICE, host.namespace):
            removed.append(f"{overlay.DEVICE} on {host.name}")
    for mount in mounts_under(lab.state_dir):
        run(["umount", "-l", mount], check=False)
        removed.append(f"mount {mount}")
    return removed


def mounts_under(path: Path) -> list[str]:
    """Mount points below `path` (deepest first), e.g. a daemon's leftover overlay mounts."""
    found = []
    prefix = str(path).rstrip("/") + "/"
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if point.startswith(prefix):
            found.append(point)
    return sorted(found, key=len, reverse=True)
