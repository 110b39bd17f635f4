"""The lab's Flannel overlay: one etcd per lab and a real flanneld on every host.

etcd (Debian's etcd-server) runs in the root namespace on the management bridge's address,
as a control node's etcd on a real lab's management network; its data lives under the
lab's state dir. The network config goes into etcd as the Flannel docs give it
(``/coreos.com/network/config``: Network, SubnetLen, Backend vxlan; SubnetMin at the
network's first /24 so that all 16 hosts of a Docker lab get a lease). Each host's flanneld
(netrun.lab.flannel's build) runs in the host's network namespace with ``--iface data0``:
it leases a /24, creates ``flannel.1`` (VNI 1, UDP 8472), keeps every peer's route,
neighbour and fdb entry, adds its FORWARD accepts, and writes its ``subnet.env`` to the
host's own folder (the lab's hosts share this machine's /run; the inventory's
``netrun_flannel_subnet_env`` names the file). The host's dockerd is then started from that
file (``--bip=$FLANNEL_SUBNET --mtu=$FLANNEL_MTU``), as the Flannel docs for Docker say.
Every process is started and stopped by the lab by pid.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from netrun.errors import NetrunError
from netrun.lab.k8s.process import start as start_detached
from netrun.lab.plan import LabHost, LabPlan
from netrun.lab.system import kill_pid, pid_matches, read_pid, run, wait_until

DEVICE = "flannel.1"
#: etcd's historical client and peer ports (flanneld's default endpoints still name 4001):
#: a Kubernetes lab's etcd takes 2379/2380 on the same management address
ETCD_CLIENT_PORT = 4001
ETCD_PEER_PORT = 7001
ETCD_PREFIX = "/coreos.com/network"
READY_TIMEOUT = 60.0


# -- etcd ------------------------------------------------------------------------------
def etcd_url(lab: LabPlan) -> str:
    return f"http://{lab.mgmt_gateway}:{ETCD_CLIENT_PORT}"


def etcd_dir(lab: LabPlan) -> Path:
    return lab.state_dir / "etcd"


def etcd_running(lab: LabPlan, pid: int | None) -> bool:
    return pid_matches(pid, "etcd", str(etcd_dir(lab)))


def etcd_argv(lab: LabPlan) -> list[str]:
    peer = f"http://{lab.mgmt_gateway}:{ETCD_PEER_PORT}"
    name = lab.config.prefix
    return [
        "etcd", "--name", name, "--data-dir", str(etcd_dir(lab) / "data"),
        "--listen-client-urls", etcd_url(lab), "--advertise-client-urls", etcd_url(lab),
        "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
        "--initial-cluster", f"{name}={peer}", "--log-level", "warn",
    ]  # fmt: skip


def etcdctl(lab: LabPlan, *args: str, check: bool = True) -> bool:
    """etcdctl (v3 API) against the lab's etcd; whether it succeeded."""
    done = run(["etcdctl", "--endpoints", etcd_url(lab), *args], check=check, timeout=30,
               env={"ETCDCTL_API": "3"})  # fmt: skip
    return done.returncode == 0


def network_config(lab: LabPlan) -> dict[str, Any]:
    """Flannel's network config for this lab (its /20, a /24 per host, vxlan)."""
    network = lab.overlay_network
    return {
        "Network": network,
        "SubnetLen": 24,
        "SubnetMin": network.split("/")[0],
        "Backend": {"Type": "vxlan"},
    }


def ensure_etcd(lab: LabPlan, pids: dict[str, Any], save: Callable[[], None]) -> None:
    """The lab's etcd (started unless it runs: its pid recorded in ``pids`` and saved at
    once), answering, with the network config in it."""
    pid = pids.get("etcd")
    log = etcd_dir(lab) / "etcd.log"
    if not etcd_running(lab, pid):
        etcd_dir(lab).mkdir(parents=True, exist_ok=True)
        pid = pids["etcd"] = start_detached(etcd_argv(lab), log)
        save()
    assert pid is not None

    def answers() -> bool:
        if not running(pid):
            raise NetrunError(f"etcd exited (see {log})")
        return etcdctl(lab, "endpoint", "health", check=False)

    wait_until(answers, timeout=READY_TIMEOUT, what=f"etcd at {etcd_url(lab)} (see {log})")
    etcdctl(lab, "put", f"{ETCD_PREFIX}/config", json.dumps(network_config(lab)))


# -- flanneld --------------------------------------------------------------------------
def pid_file(host: LabHost) -> Path:
    return host.dir / "flanneld.pid"


def flanneld_pid(host: LabHost) -> int | None:
    """The recorded flanneld pid when that process is still this host's flanneld."""
    pid = read_pid(pid_file(host))
    return pid if pid_matches(pid, "flanneld", str(host.subnet_env)) else None


def flanneld_argv(lab: LabPlan, host: LabHost, binary: Path) -> list[str]:
    return [
        "nsenter", f"--net=/run/netns/{host.namespace}", str(binary),
        "--etcd-endpoints", etcd_url(lab), "--etcd-prefix", ETCD_PREFIX,
        "--iface", "data0", "--subnet-file", str(host.subnet_env),
    ]  # fmt: skip


def read_subnet_env(path: Path) -> dict[str, str]:
    """KEY=value lines of a subnet.env ({} while flanneld has not written it)."""
    try:
        text = path.read_text()
    except OSError:
        return {}
    pairs = (line.strip().partition("=") for line in text.splitlines())
    return {key: value for key, sep, value in pairs if sep}


def start_flanneld(lab: LabPlan, host: LabHost, binary: Path) -> int:
    """This host's flanneld: the running one, else one started now (its subnet.env removed
    first, so the file read next is this flanneld's; a restarted flanneld keeps its lease,
    which etcd finds by the host's data IP)."""
    pid = flanneld_pid(host)
    if pid is None:
        host.subnet_env.parent.mkdir(parents=True, exist_ok=True)
        host.subnet_env.unlink(missing_ok=True)
        pid = start_detached(flanneld_argv(lab, host, binary), log_file(host))
        pid_file(host).write_text(f"{pid}\n")
    return pid


def log_file(host: LabHost) -> Path:
    return host.dir / "flanneld.log"


def running(pid: int) -> bool:
    """Whether `pid` is alive and not a zombie (read from its stat: its command line reads
    empty for an instant while nsenter execs flanneld)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] not in (["Z"], ["X"])


def wait_leased(host: LabHost, pid: int) -> None:
    """Until flanneld `pid` has written the host's subnet.env; its log's end if it exits."""
    log = log_file(host)

    def leased() -> bool:
        if not running(pid):
            tail = " | ".join(log.read_text(errors="replace").strip().splitlines()[-2:])
            raise NetrunError(f"flanneld on {host.name} exited (see {log}): {tail}")
        return "FLANNEL_SUBNET" in read_subnet_env(host.subnet_env)

    wait_until(leased, timeout=READY_TIMEOUT, what=f"flanneld on {host.name} (see {log})")


def lease(host: LabHost) -> tuple[str, int]:
    """(docker0's --bip, --mtu) from the host's subnet.env, as the Flannel docs' Docker
    integration sources them."""
    env = read_subnet_env(host.subnet_env)
    try:
        return env["FLANNEL_SUBNET"], int(env["FLANNEL_MTU"])
    except (KeyError, ValueError):
        raise NetrunError(
            f"{host.name}: {host.subnet_env} has no FLANNEL_SUBNET and FLANNEL_MTU: "
            "is flanneld running? run netrun lab up"
        ) from None


def up(lab: LabPlan, data: dict[str, Any], save: Callable[[], None], binary: Path) -> None:
    """etcd, then every host's flanneld in turn, each pid recorded (and saved) as it starts."""
    pids = data["pids"]
    ensure_etcd(lab, pids, save)
    mine = pids.setdefault("flanneld", {})
    for host in lab.hosts:  # one at a time: flanneld leases a random free /24, and two
        # started at once may pick the same one; the loser exits ("subnet already exists")
        mine[host.name] = start_flanneld(lab, host, binary)
        save()
        wait_leased(host, mine[host.name])


def down(lab: LabPlan, data: dict[str, Any]) -> list[str]:
    """Every host's flanneld, then etcd, by their recorded pids."""
    removed = []
    pids = data["pids"]
    for host in lab.hosts:
        pid = pids.get("flanneld", {}).get(host.name) or flanneld_pid(host)
        if pid and kill_pid(pid, "flanneld", str(host.subnet_env)):
            removed.append(f"flanneld {host.name} (pid {pid})")
    pid = pids.get("etcd")
    if pid and kill_pid(pid, "etcd", str(etcd_dir(lab))):
        removed.append(f"etcd (pid {pid})")
    return removed
