"""`netrun lab status`: what of a lab is present and answering, read without changing it.

`up` ends with it (netrun.lab.core); the tests and the bench read a lab's hosts (their
namespaces, addresses and daemons' pids) from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from netrun.errors import NetrunError
from netrun.lab import docker, network, overlay, sshd, state
from netrun.lab.k8s import cluster as k8s_cluster
from netrun.lab.plan import LabConfig, plan
from netrun.lab.state import InventoryFile
from netrun.lab.system import netns_exists


@dataclass(frozen=True)
class HostStatus:
    """What is alive on one lab host."""

    name: str
    namespace: str
    mgmt_ip: str
    data_ip: str
    namespace_present: bool
    sshd_pid: int | None
    sshd_answers: bool
    docker_pid: int | None = None
    docker_answers: bool | None = None  # None: the lab runs no docker
    flanneld_running: bool | None = None  # None: the lab runs no docker (so no Flannel)
    node_ready: bool | None = None  # None: the lab runs no Kubernetes

    @property
    def ok(self) -> bool:
        return (
            self.namespace_present
            and self.sshd_answers
            and self.docker_answers is not False
            and self.flanneld_running is not False
            and self.node_ready is not False
        )


@dataclass(frozen=True)
class LabStatus:
    """The lab as found on the machine; `config` is None when no lab state exists."""

    state_dir: Path
    config: LabConfig | None
    hosts: tuple[HostStatus, ...] = ()
    bridge_present: bool = False
    switch_present: bool = False
    #: Every inventory file the lab wrote, in the order written (the first `up`'s first).
    inventories: tuple[InventoryFile, ...] = ()
    #: The cluster's admin kubeconfig (kubectl --kubeconfig), when the lab runs one.
    kubeconfig: Path | None = None

    @property
    def exists(self) -> bool:
        return self.config is not None

    @property
    def inventory(self) -> Path | None:
        """The first inventory a checkout still uses the lab through (else the first one)."""
        used = [f.path for f in self.inventories if f.in_use]
        return used[0] if used else (self.config.inventory if self.config else None)

    @property
    def key_file(self) -> Path:
        return self.state_dir / "id_ed25519"

    @property
    def known_hosts(self) -> Path:
        return self.state_dir / "known_hosts"

    @property
    def ok(self) -> bool:
        return (
            self.exists
            and self.bridge_present
            and self.switch_present
            and all(host.ok for host in self.hosts)
        )

    def host(self, name: str) -> HostStatus:
        for host in self.hosts:
            if host.name == name:
                return host
        raise NetrunError(f"no lab host named {name!r}")

    def problems(self) -> list[str]:
        """One line per broken piece, each saying how to fix it."""
        if not self.exists:
            return [f"no lab in {self.state_dir}: run netrun lab up"]
        found = []
        if not self.bridge_present:
            found.append("management bridge missing: run netrun lab up")
        if not self.switch_present:
            found.append("data-plane switch namespace missing: run netrun lab up")
        for host in self.hosts:
            if not host.namespace_present:
                found.append(f"{host.name}: namespace {host.namespace} missing: run netrun lab up")
            elif not host.sshd_answers:
                found.append(f"{host.name}: sshd not answering: run netrun lab up")
            if host.docker_answers is False:
                found.append(f"{host.name}: dockerd not answering: run netrun lab up")
            if host.flanneld_running is False:
                found.append(f"{host.name}: flanneld not running: run netrun lab up")
            if host.node_ready is False:
                found.append(f"{host.name}: kubernetes node not Ready: run netrun lab up")
        return found


def status(state_dir: Path) -> LabStatus:
    """What of the lab in `state_dir` is present and answering (reads only)."""
    state_dir = state_dir.absolute()
    data = state.load(state_dir)
    if data is None:
        return LabStatus(state_dir=state_dir, config=None)
    cfg = LabConfig.from_json(data["config"])
    lab = plan(cfg)
    docker_mod = docker if cfg.docker else None
    kubeconfig: Path | None = None
    ready: dict[str, bool] = {}
    if cfg.k8s:
        kubeconfig, ready = k8s_cluster.status(lab, data)
    hosts = []
    for host in lab.hosts:
        present = netns_exists(host.namespace)
        pid = sshd.sshd_pid(host)
        dpid: int | None = None
        danswers: bool | None = None
        if docker_mod is not None:
            dpid = docker_mod.dockerd_pid(host)
            danswers = present and dpid is not None and docker_mod.answers(host)
        hosts.append(
            HostStatus(
                name=host.name,
                namespace=host.namespace,
                mgmt_ip=host.mgmt_ip,
                data_ip=host.data_ip,
                namespace_present=present,
                sshd_pid=pid,
                sshd_answers=present and pid is not None and sshd.answers(host.mgmt_ip, timeout=2),
                docker_pid=dpid,
                docker_answers=danswers,
                flanneld_running=overlay.flanneld_pid(host) is not None if cfg.docker else None,
                node_ready=ready.get(host.name, False) if cfg.k8s else None,
            )
        )
    return LabStatus(
        state_dir=state_dir,
        config=cfg,
        hosts=tuple(hosts),
        bridge_present=network.link_exists(lab.mgmt_bridge),
        switch_present=netns_exists(lab.switch_namespace),
        inventories=state.files(data, state_dir),
        kubeconfig=kubeconfig,
    )
