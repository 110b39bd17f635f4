"""`netrun lab up|down|status`: build, inspect and remove the emulated lab.

State lives in state_dir/lab.json, written before anything is created, so `down`
removes a half-made lab too and never needs the flags `up` was given.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Any

from netrun.errors import NetrunError
from netrun.lab import inventory, network, sshd
from netrun.lab.plan import LabConfig, LabPlan, plan
from netrun.lab.system import end_netns_processes, netns_exists, require_root, require_tools

Progress = Callable[[str], None] | None
STATE_VERSION = 1
TOOLS = {
    "ip": "iproute2",
    "tc": "iproute2",
    sshd.SSHD: "openssh-server",
    "ssh-keygen": "openssh-client",
    sshd.SFTP_SERVER: "openssh-sftp-server",
}

DOCKER_TOOLS = {
    "dockerd": "docker.io",
    "docker": "docker.io",
    "/usr/sbin/runc": "runc",
    "nsenter": "util-linux",
    "setsid": "util-linux",
    "gcc": "gcc",
    "iptables": "iptables",
    "bridge": "iproute2",
    "ldd": "libc-bin",
}


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

    @property
    def ok(self) -> bool:
        return self.namespace_present and self.sshd_answers and self.docker_answers is not False


@dataclass(frozen=True)
class LabStatus:
    """The lab as found on the machine; `config` is None when no lab state exists."""

    state_dir: Path
    config: LabConfig | None
    hosts: tuple[HostStatus, ...] = ()
    bridge_present: bool = False
    switch_present: bool = False

    @property
    def exists(self) -> bool:
        return self.config is not None

    @property
    def inventory(self) -> Path | None:
        return self.config.inventory if self.config else None

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
        return found


# -- state -----------------------------------------------------------------------------
def _load(state_dir: Path) -> dict[str, Any] | None:
    path = state_dir / "lab.json"
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise NetrunError(f"{path} is unreadable ({err}): remove it and the lab by hand") from err
    if not isinstance(data, dict) or data.get("version") != STATE_VERSION:
        raise NetrunError(f"{path} is not a netrun lab state file (version {STATE_VERSION})")
    return data


def _save(lab: LabPlan, data: dict[str, Any]) -> None:
    path = lab.state_file
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)


def _record(lab: LabPlan) -> dict[str, Any]:
    """The state written before anything is made: every name `down` will remove."""
    return {
        "version": STATE_VERSION,
        "config": lab.config.to_json(),
        "namespaces": [h.namespace for h in lab.hosts] + [lab.switch_namespace],
        "root_links": [h.mgmt_veth for h in lab.hosts] + [lab.mgmt_bridge],
        "hosts": {
            h.name: {"namespace": h.namespace, "mgmt_ip": h.mgmt_ip, "data_ip": h.data_ip}
            for h in lab.hosts
        },
        "pids": {"sshd": {}, "dockerd": {}},
    }


def _check_paths(cfg: LabConfig) -> None:
    for path in (cfg.state_dir, cfg.inventory):
        if any(ch.isspace() or ch in "\"'\\" for ch in str(path)):
            raise NetrunError(f"lab path {path} has spaces or quotes: choose a plain path")
    # docker.sock must fit in a unix socket address (108 bytes)
    longest = len(str(cfg.state_dir / "hosts" / "foxtrot" / "docker.sock"))
    if cfg.docker and longest > 100:
        raise NetrunError(f"lab state dir {cfg.state_dir} is too long for docker sockets")


# -- up --------------------------------------------------------------------------------
def up(cfg: LabConfig, progress: Progress = None) -> LabStatus:
    """Build the lab, or repair what is missing when it is already up; returns its status."""
    say = progress or (lambda _msg: None)
    require_root()
    require_tools(TOOLS | (DOCKER_TOOLS if cfg.docker else {}))
    cfg = replace(cfg, state_dir=cfg.state_dir.absolute(), inventory=cfg.inventory.absolute())
    _check_paths(cfg)
    if cfg.freeflow_src is not None:  # a wrong source is reported before anything is made
        from netrun.lab import freeflow

        cfg = replace(cfg, freeflow_src=freeflow.source(cfg.freeflow_src).path)
    lab = plan(cfg)
    data = _load(cfg.state_dir)
    if data is not None:
        old = LabConfig.from_json(data["config"])
        if not old.same_lab(cfg):
            raise NetrunError(
                f"a different lab is up in {cfg.state_dir} ({old.hosts} hosts, prefix "
                f"{old.prefix}, net {old.net_index}, docker {old.docker}): "
                "run netrun lab down first"
            )
        data["config"] = cfg.to_json()  # the FreeFlow source may change on a running lab
    else:
        _refuse_foreign(lab)
        data = _record(lab)
    cfg.state_dir.mkdir(parents=True, exist_ok=True)
    cfg.state_dir.chmod(0o700)
    _save(lab, data)

    say(f"network: bridge {lab.mgmt_bridge}, switch {lab.switch_namespace}")
    network.ensure_mgmt_bridge(lab)
    network.ensure_switch(lab)
    for host in lab.hosts:
        network.ensure_netns(host.namespace)
        network.ensure_host_links(lab, host)
    sshd.ensure_key(lab.key_file, "netrun-lab-client")
    sshd.write_login_rc(lab)
    for host in lab.hosts:
        pid = sshd.ensure_sshd(lab, host)
        data["pids"]["sshd"][host.name] = pid
        _save(lab, data)
        say(f"{host.name}: {host.namespace} mgmt {host.mgmt_ip} data {host.data_ip} sshd {pid}")
    sshd.write_known_hosts(lab)
    if cfg.docker:
        from netrun.lab import docker

        docker.up(lab, data, lambda: _save(lab, data), say)
    inventory.write(lab, data.get("freeflow", {}).get("image"))
    say(f"inventory: {cfg.inventory}")
    return status(cfg.state_dir)


def _refuse_foreign(lab: LabPlan) -> None:
    """Refuse to adopt namespaces or bridges with our names that another lab state owns."""
    taken = [
        ns for ns in [h.namespace for h in lab.hosts] + [lab.switch_namespace] if netns_exists(ns)
    ]
    if network.link_exists(lab.mgmt_bridge):
        taken.append(lab.mgmt_bridge)
    if taken:
        raise NetrunError(
            f"{', '.join(taken)} already exist but {lab.state_file} does not: another lab uses "
            "this prefix; pick another --prefix/--net-index or run netrun lab down on its state dir"
        )


def _docker() -> ModuleType:
    """The docker part of the lab, imported only when a lab uses it."""
    from netrun.lab import docker

    return docker


# -- status ----------------------------------------------------------------------------
def status(state_dir: Path) -> LabStatus:
    """What of the lab in `state_dir` is present and answering (reads only)."""
    state_dir = state_dir.absolute()
    data = _load(state_dir)
    if data is None:
        return LabStatus(state_dir=state_dir, config=None)
    cfg = LabConfig.from_json(data["config"])
    lab = plan(cfg)
    docker_mod = _docker() if cfg.docker else None
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
            )
        )
    return LabStatus(
        state_dir=state_dir,
        config=cfg,
        hosts=tuple(hosts),
        bridge_present=network.link_exists(lab.mgmt_bridge),
        switch_present=netns_exists(lab.switch_namespace),
    )


# -- down ------------------------------------------------------------------------------
def down(state_dir: Path, progress: Progress = None) -> list[str]:
    """Remove everything the lab in `state_dir` made; returns what was removed."""
    say = progress or (lambda _msg: None)
    require_root()
    state_dir = state_dir.absolute()
    data = _load(state_dir)
    if data is None:
        return []
    cfg = LabConfig.from_json(data["config"])
    lab = plan(cfg)
    removed: list[str] = []

    def note(what: str) -> None:
        removed.append(what)
        say(f"removed {what}")

    if cfg.docker or data["pids"].get("dockerd"):
        from netrun.lab import docker

        for what in docker.down(lab, data):
            note(what)
    for host in lab.hosts:
        pid = data["pids"]["sshd"].get(host.name) or sshd.sshd_pid(host)
        if sshd.stop_sshd(host, pid):
            note(f"sshd {host.name} (pid {pid})")
    for name in data["root_links"]:
        if network.delete_link(name):
            note(f"link {name}")
    for ns in data["namespaces"]:
        for pid in end_netns_processes(ns):
            note(f"process {pid} in {ns}")
        if network.delete_netns(ns):
            note(f"namespace {ns}")
    if inventory.remove(cfg.inventory):
        note(f"inventory {cfg.inventory}")
    shutil.rmtree(state_dir, ignore_errors=True)
    if state_dir.exists():
        raise NetrunError(f"could not remove {state_dir}: check for mounts under it")
    note(f"state {state_dir}")
    return removed
