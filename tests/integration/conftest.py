"""Shared integration fixtures: an emulated lab of network namespaces with sshd.

`lab` is one 3-host lab for the whole session (prefix "nrt", net 1), so tests share its
~1 s start-up. Tests that need a clean slate build their own small lab with another prefix.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from netrun.lab import core as netrun_lab_core
from netrun.lab import plan as netrun_lab_plan
from netrun.lab import state as netrun_lab_state
from netrun.lab import status as netrun_lab_status
from netrun.lab.system import cmdline, netns_inode, pid_netns_inode

# A suite started in the background by a non-interactive shell (`make test &`, nohup, some
# CI runners) inherits SIGINT ignored, and so would every netrun it starts: its Ctrl-C tests
# would then test nothing but the shell's job control. A Python handler here is reset to the
# default on exec, so each netrun the tests start meets SIGINT as a terminal user's would.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

#: NETRUN_TEST_SLOT=k (0..5; 6 for bare-metal labs only: a Docker lab has no net index of its
#: own there) gives a pytest session its own prefixes and address ranges, so two sessions (two
#: developers, or CI beside a benchmark) can run on one machine at once.
SLOT = int(os.environ.get("NETRUN_TEST_SLOT", "0") or 0)
_SUFFIX = str(SLOT) if SLOT else ""
LAB_PREFIX = f"nrt{_SUFFIX}"
LAB_NET_INDEX = 1 + 3 * SLOT
DOCKER_LAB_PREFIX = f"nrtd{_SUFFIX}"
#: Docker labs need a net index of at most 15 (the overlay's /20s): slot 5 takes the last one.
DOCKER_LAB_NET_INDEX = 2 + 3 * SLOT if SLOT < 5 else 15
#: The 12-host lab of the load tests (bare metal only; bench/ uses net 3 with prefix nrb).
BIG_LAB_PREFIX = f"nrtl{_SUFFIX}"
BIG_LAB_NET_INDEX = 20 + SLOT
#: The labs of test_iperf3_versions_lab (one at a time, one per iperf3 release).
VERSIONS_LAB_PREFIX = f"nrtv{_SUFFIX}"
VERSIONS_LAB_NET_INDEX = 40 + SLOT


@dataclass(frozen=True)
class LabHandle:
    """What tests need from a running lab: its inventory, state and hosts."""

    config: netrun_lab_plan.LabConfig
    state_dir: Path
    inventory: Path
    hosts: tuple[str, ...]
    details: dict[str, netrun_lab_status.HostStatus]  # name -> namespace, mgmt_ip, data_ip, pids

    @property
    def key_file(self) -> Path:
        return self.state_dir / "id_ed25519"

    @property
    def known_hosts(self) -> Path:
        return self.state_dir / "known_hosts"

    @property
    def namespaces(self) -> list[str]:
        return [self.details[name].namespace for name in self.hosts]

    def host(self, name: str) -> netrun_lab_status.HostStatus:
        return self.details[name]

    def bin_dir(self, name: str) -> Path:
        """Put a fake tool here to shadow the real one for SSH sessions on host `name`."""
        return self.state_dir / "hosts" / name / "bin"

    # -- docker labs only -------------------------------------------------------------
    def docker_host(self, name: str) -> str:
        """DOCKER_HOST of host `name`'s own daemon (SSH sessions there already have it)."""
        return f"unix://{self.state_dir / 'hosts' / name / 'docker.sock'}"

    def docker(self, name: str, *args: str, timeout: float = 120) -> str:
        """Run the docker CLI against host `name`'s daemon; raise on failure."""
        done = subprocess.run(
            ["docker", "-H", self.docker_host(name), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if done.returncode != 0:
            raise AssertionError(f"docker {' '.join(args)} on {name}: {done.stderr[-500:]}")
        return done.stdout

    def freeflow_dir(self, name: str) -> Path:
        return self.state_dir / "hosts" / name / "freeflow"

    def subnet_env(self, name: str) -> Path:
        return self.state_dir / "hosts" / name / "flannel" / "subnet.env"

    def flanneld_logs(self, lines: int = 15) -> str:
        """Each host's flanneld log, its last ``lines``: why a flanneld exited, for a
        failure that names one (the lab's state dir goes at lab down)."""
        out = []
        for name in self.hosts:
            log = self.state_dir / "hosts" / name / "flanneld.log"
            try:
                tail = log.read_text(errors="replace").splitlines()[-lines:]
            except OSError:
                continue
            out.append(f"--- {name}: {log}\n" + "\n".join(tail))
        return "\n".join(out)


def lab_skip_reason(docker: bool = False) -> str | None:
    """Why the lab cannot run here, or None."""
    if os.geteuid() != 0:
        return "the emulated lab needs root (network namespaces)"
    needs = {
        "/usr/sbin/sshd": "openssh-server",
        "iperf3": "iperf3",
        "ip": "iproute2",
        "tc": "iproute2",
        "ssh-keygen": "openssh-client",
    }
    if docker:
        needs |= {
            "dockerd": "docker.io",
            "docker": "docker.io",
            "runc": "runc",
            "nsenter": "util-linux",
            "gcc": "gcc",
            "etcd": "etcd-server",
            "etcdctl": "etcd-client",
        }
    for tool, pkg in needs.items():
        if not (Path(tool).exists() if tool.startswith("/") else shutil.which(tool)):
            return f"{tool} not found: apt-get install {pkg}"
    return None


OWNER = "owner.pid"  # beside a test lab's state dir: the pytest process that made it


def _owner_alive(tmp: Path) -> bool:
    try:
        pid = int((tmp / OWNER).read_text().strip())
    except (OSError, ValueError):
        return False
    return pid != os.getpid() and Path(f"/proc/{pid}").exists()


def _lab_states() -> list[Path]:
    """Test labs' state files under every pytest basetemp. Another session's pytest may
    remove an old basetemp while the glob walks it (FileNotFoundError): walk again."""
    for _ in range(5):
        try:
            return list(Path("/tmp").glob("pytest-of-*/pytest-*/*/state/lab.json"))
        except FileNotFoundError:
            continue
    return []


def sweep_stale_labs(prefix: str) -> None:
    """Take down a lab with this prefix that a killed pytest session left behind.

    A lab whose pytest process still runs belongs to another session and is left alone
    (that session's lab then makes ours fail to start, with a clear message).
    """
    for state in _lab_states():
        if _owner_alive(state.parent.parent):
            continue
        try:
            status = netrun_lab_status.status(state.parent)
        except Exception:  # unreadable leftovers are not ours to judge
            continue
        if status.config is not None and status.config.prefix == prefix:
            netrun_lab_core.down(state.parent)


def handle(status: netrun_lab_status.LabStatus) -> LabHandle:
    assert status.config is not None
    return LabHandle(
        config=status.config,
        state_dir=status.state_dir,
        inventory=status.config.inventory,
        hosts=tuple(host.name for host in status.hosts),
        details={host.name: host for host in status.hosts},
    )


def start_lab(tmp: Path, **kwargs: object) -> LabHandle:
    """Bring up a lab under `tmp` (state in tmp/state, inventory tmp/inventory.yaml)."""
    cfg = netrun_lab_plan.LabConfig(
        state_dir=tmp / "state", inventory=tmp / "inventory.yaml", **kwargs
    )  # type: ignore[arg-type]
    sweep_stale_labs(cfg.prefix)
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / OWNER).write_text(f"{os.getpid()}\n")
    try:
        status = netrun_lab_core.up(cfg)
    except BaseException:
        netrun_lab_core.down(cfg.state_dir)
        raise
    assert status.ok, status.problems()
    return handle(status)


@pytest.fixture(scope="session", autouse=True)
def own_data_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Each pytest session gets its own history, run lock and run journal.

    Without it two sessions (or a developer's own nightly job) would share
    ~/.local/share/netrun: one run would wait on, or sweep for, the other's.
    Tests that need a particular folder still set XDG_DATA_HOME themselves.
    """
    old = os.environ.get("XDG_DATA_HOME")
    os.environ["XDG_DATA_HOME"] = str(tmp_path_factory.mktemp("xdg"))
    # where the labs' hosts keep run folders (helpers.remote_tmps), --basetemp or not
    os.environ["NETRUN_TEST_BASETEMP"] = str(tmp_path_factory.getbasetemp())
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("XDG_DATA_HOME", None)
        else:
            os.environ["XDG_DATA_HOME"] = old


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabHandle]:
    """A 3-host lab (alpha, bravo, charlie) for the session; torn down at the end."""
    reason = lab_skip_reason()
    if reason:
        pytest.skip(reason)
    handle_ = start_lab(
        tmp_path_factory.mktemp("lab"), hosts=3, prefix=LAB_PREFIX, net_index=LAB_NET_INDEX
    )
    try:
        yield handle_
    finally:
        netrun_lab_core.down(handle_.state_dir)


@pytest.fixture(scope="session")
def docker_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabHandle]:
    """A 3-host lab with one dockerd per host, a real flanneld per host (and the lab's
    etcd), the flannel.1 overlay they make, and the lab images.

    Images: netrun-lab/iperf3:latest (entrypoint iperf3) and the FreeFlow stand-in
    netrun-lab/freeflow-standin:latest. Container names and labels are the tests' own.
    """
    reason = lab_skip_reason(docker=True)
    if reason:
        pytest.skip(reason)
    handle_ = start_lab(
        tmp_path_factory.mktemp("dlab"),
        hosts=3,
        prefix=DOCKER_LAB_PREFIX,
        net_index=DOCKER_LAB_NET_INDEX,
        docker=True,
    )
    pids = [host.docker_pid for host in handle_.details.values()]
    recorded = (netrun_lab_state.load(handle_.state_dir) or {})["pids"]
    overlay = [recorded["etcd"], *recorded["flanneld"].values()]
    try:
        yield handle_
    finally:
        netrun_lab_core.down(handle_.state_dir)
        left = [pid for pid in pids if pid and cmdline(pid)]
        assert not left, f"dockerd still running after lab down: {left}"
        left = [pid for pid in overlay if pid and cmdline(pid)]
        assert not left, f"etcd or flanneld still running after lab down: {left}"


@pytest.fixture(scope="session")
def big_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabHandle]:
    """A 12-host lab (alpha .. lima) at 200 Mbit/s, for many pairs at once on 2 cores."""
    reason = lab_skip_reason()
    if reason:
        pytest.skip(reason)
    handle_ = start_lab(
        tmp_path_factory.mktemp("biglab"),
        hosts=12,
        rate="200mbit",
        prefix=BIG_LAB_PREFIX,
        net_index=BIG_LAB_NET_INDEX,
    )
    try:
        yield handle_
    finally:
        netrun_lab_core.down(handle_.state_dir)


def lab_iperf3_pids(lab: LabHandle) -> list[int]:
    """iperf3 processes running inside the lab's namespaces (to check nothing is left)."""
    inodes = {netns_inode(ns) for ns in lab.namespaces} - {None}
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        argv = cmdline(pid)
        if argv and Path(argv[0]).name == "iperf3" and pid_netns_inode(pid) in inodes:
            found.append(pid)
    return found
