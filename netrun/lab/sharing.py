"""One lab, several checkouts: what `up` says when it reuses a running lab, or why it
cannot, and how to run a second lab beside it; `release` lets one checkout go.

The rule: a lab serves every checkout whose `up` asked for it (each has its own inventory
file, recorded in lab.json). `lab down` from one of them only releases it (removes its
inventory) while another still uses the lab; the last one's `lab down` removes the lab;
`lab down --all` removes it for everyone. No `down` removes an inventory file that no
longer holds exactly what the lab wrote.

The messages are pure (tested without root); `beside` and `owner_of` only read the
machine (namespaces, addresses, processes) to name free values and a lab's owner.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from netrun.errors import NetrunError
from netrun.lab import inventory, state
from netrun.lab.plan import MAX_DOCKER_NET_INDEX, MAX_NET_INDEX, MGMT_NET, LabConfig, plan
from netrun.lab.system import cmdline, ip_json, pids_in_netns, require_root

#: The `lab up` flag of each field of a lab's identity, as the messages name them.
FLAGS = {
    "hosts": "--hosts",
    "rate": "--rate",
    "prefix": "--prefix",
    "net_index": "--net-index",
    "docker": "--docker",
    "login_cost": "--login-cost",
    "freeflow_src": "--freeflow-src",
    "host_rates": "--host-rate",
    "state_dir": "--state-dir",
    "inventory": "--inventory",
    "iperf3": "--iperf3",
    "iperf3_src": "--iperf3-src",
    "k8s": "--k8s",
    "k8s_version": "--k8s-version",
    "cni": "--cni",
    "mtu": "--mtu",
}
#: The fields that are a flag alone (on) or absent (off).
SWITCHES = ("docker", "k8s")
DEFAULT = LabConfig()


@dataclass(frozen=True)
class Beside:
    """Values under which a second lab would not meet the running one."""

    prefix: str
    net_index: int
    state_dir: Path

    def flags(self) -> str:
        return f"--prefix {self.prefix} --net-index {self.net_index} --state-dir {self.state_dir}"


def shown(key: str, value: Any) -> str:
    """A config value as a person reads it in a message."""
    if key == "docker":
        return "yes" if value else "no"
    if key == "host_rates":
        return ",".join(f"{k}={v}" for k, v in dict(value).items()) or "none"
    if key == "freeflow_src":
        return str(value) if value else "none (the stand-in)"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def up_flags(cfg: LabConfig, *, where: bool = True) -> str:
    """The `netrun lab up` flags that ask for the lab `cfg` describes (defaults left out;
    ``where=False`` leaves out --prefix, --net-index and --state-dir too)."""
    parts: list[str] = []
    for f in fields(LabConfig):
        value, default = getattr(cfg, f.name), getattr(DEFAULT, f.name)
        if value == default or f.name == "inventory":
            continue
        if not where and f.name in ("prefix", "net_index", "state_dir"):
            continue
        flag = FLAGS[f.name]
        if f.name in SWITCHES:
            parts.append(flag)
        elif f.name == "host_rates":
            parts += [f"{flag} {k}={v}" for k, v in value]
        else:
            parts.append(f"{flag} {shown(f.name, value)}")
    return " ".join(parts)


def _command(flags: str) -> str:
    return f"netrun lab up {flags}".rstrip()


def different_lab(
    running: LabConfig,
    asked: LabConfig,
    diffs: list[tuple[str, Any, Any]],
    users: list[Path],
    beside: Beside,
    *,
    own: bool,
) -> str:
    """Why `up` cannot reuse the running lab: each field that differs (running vs asked,
    from LabConfig.differences), who uses it, how to share it and how to run a second lab
    beside it. `own`: the asking inventory is the lab's only user: only then is `lab down`
    offered, since only then is the lab the asker's to remove."""
    listed = "; ".join(
        f"{FLAGS[key]}: running {shown(key, mine)} vs asked {shown(key, theirs)}"
        for key, mine, theirs in diffs
    )
    who = ", ".join(map(str, users)) if users else "an inventory since removed"
    shared = _command(up_flags(running))
    if asked.inventory not in (DEFAULT.inventory, DEFAULT.inventory.absolute()):
        shared += f" --inventory {asked.inventory}"
    second = _command(f"{up_flags(asked, where=False)} {beside.flags()}".strip())
    text = (
        f"a different lab is up in {running.state_dir} ({listed}), used by {who}: "
        f"to share it, ask for the same lab ({shared}); to run a second lab beside it: "
        f"{second}, then give --state-dir {beside.state_dir} to lab status and lab down too"
    )
    if own:
        text += "; or, as only this inventory uses it, netrun lab down first"
    elif not users:  # nobody's: any checkout's `lab down` removes it
        text += "; no checkout uses it any more: netrun lab down removes it"
    return text


def reused(state_dir: Path, users: list[Path], path: Path) -> str:
    """The one line a `lab up` from a second checkout says when it joins the running lab."""
    who = ", ".join(map(str, users)) or "an inventory since removed"
    return (
        f"reusing the lab already up in {state_dir} (used by {who}); "
        f"wrote its inventory to {path} too"
    )


def not_a_user(state_dir: Path, path: Path, users: list[Path]) -> str:
    """Why `lab down` from a checkout the lab did not come up for removes nothing."""
    where = "that checkout" if len(users) == 1 else "one of those checkouts"
    return (
        f"the lab in {state_dir} was not brought up for {path}: it is used by "
        f"{', '.join(map(str, users))}; run netrun lab down from {where} (or with "
        f"--inventory {users[0]}), or netrun lab down --all to remove it for everyone"
    )


def still_used(state_dir: Path, path: Path, others: list[Path]) -> str:
    """What `lab down` says when it only let go of one checkout's inventory."""
    return (
        f"lab left up in {state_dir}: still used by {', '.join(map(str, others))}; "
        f"only {path} let go of it (netrun lab down --all removes the lab for everyone)"
    )


# -- release: one checkout lets go of a shared lab -----------------------------------------
def release(
    state_dir: Path, inventory_path: Path, progress: Callable[[str], None] | None = None
) -> list[Path]:
    """Let go of the lab for the checkout whose `up` wrote `inventory_path`.

    Returns the inventories of the other checkouts that still use the lab: the lab then
    stays up for them, and only `inventory_path` (if unchanged) is removed and forgotten.
    Returns [] when no other checkout uses it: the caller may then `down` it. Raises when
    `inventory_path` is not one the lab came up for while others use it (it is not the
    caller's lab to remove).
    """
    say = progress or (lambda _msg: None)
    require_root()
    state_dir = state_dir.absolute()
    path = inventory_path.absolute()
    data = state.load(state_dir)
    if data is None:
        return []
    users = state.users(data, state_dir)
    others = [u for u in users if u != path]
    if not others:
        return []
    if path not in users:
        raise NetrunError(not_a_user(state_dir, path, users))
    lab = plan(LabConfig.from_json(data["config"]))
    row = next(r for r in state.records(data) if Path(r["path"]) == path)
    if inventory.remove(row, state_dir):
        say(f"removed inventory {path}")
    elif path.exists():
        say(f"left inventory {path}: changed since the lab wrote it")
    state.forget(data, path)
    state.save(lab, data)
    return others


# -- reading the machine ------------------------------------------------------------------
def _netns_names() -> set[str]:
    try:
        return set(os.listdir("/run/netns"))
    except OSError:
        return set()


def nets_in_use() -> set[int]:
    """Net indexes whose management /24 already has an address in the root namespace."""
    used = set()
    first = ipaddress.ip_network(MGMT_NET.format(n=0))
    for link in ip_json("addr", "show"):
        for addr in link.get("addr_info", []):
            try:
                ip = ipaddress.ip_address(addr.get("local", ""))
            except ValueError:
                continue
            if ip.version == 4 and ip.packed[:2] == first.network_address.packed[:2]:
                used.add(ip.packed[2])
    return used


def beside(asked: LabConfig) -> Beside:
    """The first prefix, net index and state dir that no lab on this machine uses."""
    names = _netns_names()
    links = {link.get("ifname", "") for link in ip_json("link", "show")}
    prefix = next(
        p
        for p in (f"nr{k}" for k in range(2, 10000))
        if not any(n.startswith(f"{p}-") for n in names)
        and f"{p}mgmt" not in links
        and not Path(f"/run/netrun-lab-{p}").exists()
    )
    top = MAX_DOCKER_NET_INDEX if asked.docker else MAX_NET_INDEX
    used = nets_in_use()
    free = [n for n in range(1, top + 1) if n not in used]
    net = free[0] if free else asked.net_index
    return Beside(prefix, net, Path(f"/run/netrun-lab-{prefix}"))


def owner_of(namespace: str) -> Path | None:
    """The state dir of the lab whose sshd runs in `namespace` (its -f config lives at
    STATE/hosts/NAME/sshd_config), or None. A listening sshd shows its argv as one
    string ("sshd: /usr/sbin/sshd -f ... [listener] ..."), so the words are split again."""
    for pid in pids_in_netns(namespace):
        argv = " ".join(cmdline(pid)).split()
        if "-f" in argv[:-1]:
            conf = Path(argv[argv.index("-f") + 1])
            if conf.name == "sshd_config" and conf.parent.parent.name == "hosts":
                return conf.parents[2]
    return None
