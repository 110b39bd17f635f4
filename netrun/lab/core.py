"""`netrun lab up|down|inventory`: build, share and remove the emulated lab (its status:
netrun.lab.status).

State lives in state_dir/lab.json (netrun.lab.state), written before anything is created,
so `down` removes a half-made lab too and never needs the flags `up` was given.

One lab may serve several checkouts. An `up` that asks for the running lab with another
``--inventory`` reuses it and writes its inventory there too; an `up` that asks for a
different lab is refused with what differs and how to run one beside it. Every inventory
file the lab wrote is recorded: `release` lets go of one checkout's, and `down` removes
the lab and every inventory that still holds exactly what the lab wrote, never another.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from netrun.errors import NetrunError
from netrun.lab import docker, freeflow, inventory, netperf, network, sharing, sshd, state
from netrun.lab import iperf3 as lab_iperf3
from netrun.lab.k8s import cluster as k8s_cluster
from netrun.lab.plan import MGMT_NET, SWITCHABLE, LabConfig, LabPlan, plan
from netrun.lab.state import BY_EXPORT, BY_UP
from netrun.lab.status import LabStatus, status
from netrun.lab.system import end_netns_processes, netns_exists, require_root, require_tools

Progress = Callable[[str], None] | None
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
    "etcd": "etcd-server",
    "etcdctl": "etcd-client",
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
def up(cfg: LabConfig, progress: Progress = None, netperf_src: Path | None = None) -> LabStatus:
    """Build the lab, or repair what is missing when it is already up; returns its status.

    `netperf_src` (a netperf clone or bundle) is built first when the cache lacks it; the
    newest cached netperf build is what the inventory names either way (netrun.lab.netperf).
    """
    say = progress or (lambda _msg: None)
    require_root()
    require_tools(
        TOOLS | (DOCKER_TOOLS if cfg.docker else {}) | (k8s_cluster.TOOLS if cfg.k8s else {})
    )
    cfg = replace(cfg, state_dir=cfg.state_dir.absolute(), inventory=cfg.inventory.absolute())
    _check_paths(cfg)
    if cfg.freeflow_src is not None:  # a wrong source is reported before anything is made
        cfg = replace(cfg, freeflow_src=freeflow.source(cfg.freeflow_src).path)
    iperf3_build = None
    if cfg.iperf3 is not None:  # built (or found in the cache) before anything is made
        src = lab_iperf3.source(cfg.iperf3_src or lab_iperf3.default_source(), cfg.iperf3)
        cfg = replace(cfg, iperf3_src=src.path)
        iperf3_build = lab_iperf3.build(src, say)
    lab = plan(cfg)
    data = state.load(cfg.state_dir)
    if data is not None:
        lab = plan(_reusable(cfg, data, say))
    else:
        _refuse_foreign(lab)
        data = state.record(lab)
    cfg.state_dir.mkdir(parents=True, exist_ok=True)
    cfg.state_dir.chmod(0o700)
    state.save(lab, data)

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
        state.save(lab, data)
        say(f"{host.name}: {host.namespace} mgmt {host.mgmt_ip} data {host.data_ip} sshd {pid}")
    sshd.write_known_hosts(lab)
    built = netperf.build(netperf.source(netperf_src), say) if netperf_src else netperf.cached()
    data["netperf"] = {"build": str(built)} if built else {}
    say(f"netperf: {built / 'bin'}" if built else "netperf: none built (netrun lab netperf)")
    if cfg.docker:
        docker.up(lab, data, lambda: state.save(lab, data), say, built)
    if cfg.k8s:
        k8s_cluster.up(lab, data, lambda: state.save(lab, data), say)
    if iperf3_build is not None:
        say(f"iperf3 {cfg.iperf3}: {lab_iperf3.install(iperf3_build, cfg.state_dir)}")
    else:
        lab_iperf3.remove(cfg.state_dir)
    write_inventories(lab, data, cfg.inventory, say)
    say(f"inventory: {cfg.inventory}")
    return status(cfg.state_dir)


def _render(lab: LabPlan, data: dict[str, Any]) -> str:
    """The lab's inventory text, with the router image and the netperf build it uses."""
    build = data.get("netperf", {}).get("build")
    return inventory.render(
        lab,
        data.get("freeflow", {}).get("image"),
        netperf.host_vars(Path(build) if build else None),
    )


def _reusable(cfg: LabConfig, data: dict[str, Any], say: Callable[[str], None]) -> LabConfig:
    """The running lab's config when `cfg` asks for that lab (from any checkout), else a
    NetrunError naming each field that differs and how to run a second lab beside it.

    Only a checkout the lab already serves (or anyone, once no checkout uses it) may
    switch its FreeFlow source: a joining `up` must not change the lab under the others.
    """
    running = LabConfig.from_json(data["config"])
    users = state.users(data, cfg.state_dir)
    own = cfg.inventory in users
    diffs = running.differences(cfg, loose=SWITCHABLE if own or not users else ())
    if diffs:
        beside = sharing.beside(cfg)
        only_mine = own and len(users) == 1
        raise NetrunError(sharing.different_lab(running, cfg, diffs, users, beside, own=only_mine))
    if cfg.inventory not in {Path(row["path"]) for row in state.records(data)}:
        say(sharing.reused(cfg.state_dir, users, cfg.inventory))
    for key in SWITCHABLE:
        data["config"][key] = cfg.to_json()[key]
    return LabConfig.from_json(data["config"])


def write_inventories(
    lab: LabPlan, data: dict[str, Any], asked: Path, say: Callable[[str], None]
) -> None:
    """Write the asked inventory, and rewrite each other one the lab wrote while it still
    holds what the lab wrote (so every checkout sees the same lab); one edited or written
    over since is left alone, and one whose file is gone is forgotten."""
    text = _render(lab, data)
    for row in list(state.records(data)):
        path = Path(row["path"])
        if path == asked:
            continue
        found = inventory.state_of(row, lab.state_dir)
        if found == inventory.MISSING:
            state.forget(data, path)
        elif found == inventory.WRITTEN and row.get("sha256") != inventory.digest(text):
            state.register(data, inventory.write(path, text), row.get("by", BY_UP))
            say(f"inventory: {path} (rewritten: the lab wrote it for another checkout)")
    state.register(data, inventory.write(asked, text), BY_UP)
    state.save(lab, data)


def _refuse_foreign(lab: LabPlan) -> None:
    """Refuse to adopt namespaces, bridges or a management net that another lab owns."""
    taken = [
        ns for ns in [h.namespace for h in lab.hosts] + [lab.switch_namespace] if netns_exists(ns)
    ]
    if network.link_exists(lab.mgmt_bridge):
        taken.append(lab.mgmt_bridge)
    elif lab.config.net_index in sharing.nets_in_use():
        taken.append(f"net {lab.config.net_index} ({MGMT_NET.format(n=lab.config.net_index)})")
    if not taken:
        return
    owners = {o for ns in taken if netns_exists(ns) and (o := sharing.owner_of(ns))}
    whose = (
        f"the lab in {', '.join(map(str, sorted(owners)))} uses them (--state-dir names it "
        "for lab status)"
        if owners
        else "another lab uses them"
    )
    beside = sharing.beside(lab.config)
    second = f"netrun lab up {sharing.up_flags(lab.config, where=False)} {beside.flags()}"
    raise NetrunError(
        f"{', '.join(taken)} already in use but {lab.state_file} does not exist: {whose}; "
        f"to run a second lab beside it: {' '.join(second.split())}"
    )


# -- the inventory of a running lab ---------------------------------------------------------
def running(state_dir: Path) -> tuple[LabPlan, dict[str, Any]]:
    """The plan and state of the lab in `state_dir`; one line when there is none."""
    data = state.load(state_dir.absolute())
    if data is None:
        raise NetrunError(
            f"no lab in {state_dir.absolute()}: run netrun lab up (or name its --state-dir)"
        )
    return plan(LabConfig.from_json(data["config"])), data


def inventory_text(state_dir: Path) -> str:
    """The inventory of the lab in `state_dir`, as `up` writes it."""
    lab, data = running(state_dir)
    return _render(lab, data)


def export_inventory(state_dir: Path, path: Path) -> Path:
    """Write the running lab's inventory to `path` and record it, so `down` removes it
    (while unchanged) with the lab; an export keeps no lab up (only an `up`'s file does)."""
    require_root()
    lab, data = running(state_dir)
    path = path.absolute()
    _check_paths(replace(lab.config, inventory=path))
    text = _render(lab, data)
    state.register(data, inventory.write(path, text), BY_EXPORT)
    state.save(lab, data)
    return path


# -- down ------------------------------------------------------------------------------
def down(state_dir: Path, progress: Progress = None) -> list[str]:
    """Remove everything the lab in `state_dir` made, for every checkout it serves (see
    `release` to let go of one); returns what was removed."""
    say = progress or (lambda _msg: None)
    require_root()
    state_dir = state_dir.absolute()
    data = state.load(state_dir)
    if data is None:
        return []
    cfg = LabConfig.from_json(data["config"])
    lab = plan(cfg)
    removed: list[str] = []

    def note(what: str) -> None:
        removed.append(what)
        say(f"removed {what}")

    if cfg.k8s or data.get("k8s"):
        for what in k8s_cluster.down(lab, data):
            note(what)
    if cfg.docker or data["pids"].get("dockerd"):
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
    for row in state.records(data):  # only what still holds exactly what the lab wrote
        if inventory.remove(row, state_dir):
            note(f"inventory {row['path']}")
        elif Path(row["path"]).exists():
            say(f"left inventory {row['path']}: changed since the lab wrote it")
    shutil.rmtree(state_dir, ignore_errors=True)
    if state_dir.exists():
        raise NetrunError(f"could not remove {state_dir}: check for mounts under it")
    note(f"state {state_dir}")
    return removed
