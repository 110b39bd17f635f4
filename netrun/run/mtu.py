"""MTU settings of a run: set for the tests that ask (``mtu:``), check the path, restore.

A test with ``mtu: N`` runs with the data NIC of every role's host at N; in container
modes the overlay device (Flannel's VXLAN) gets ``overlay_mtu`` (default N - 50) and the
containers' interfaces and bridge the overlay's MTU. Each change is written down as an
undo record on the host (and in the run journal) before it is made, in a scope of the run's
ledger that lives the whole run (netrun.cleanup.ledger, as a mode's changes), so a SIGKILLed run's
MTUs are restored by the next run or ``netrun cleanup``; a normal run restores them after
the last test in a row that wants them (netrun.core.mtuplan), and on Ctrl-C, SIGTERM or a
failed test in the runner's teardown. Before measuring, don't-fragment pings at the full
size, both ways, prove the path carries it: a switch port at a lower MTU drops jumbo
frames silently, and the figures would be nonsense.
"""

from __future__ import annotations

import shlex
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from netrun.cleanup import undo as undo_records
from netrun.cleanup.undo import Record
from netrun.core.mtuplan import MtuWant, next_wants, overlay_problem
from netrun.errors import MtuError
from netrun.tools.ip import (
    first_int,
    parse_state,
    path_failure,
    ping_script,
    set_script,
    state_script,
)

if TYPE_CHECKING:
    from netrun.core.spec import TestSpec
    from netrun.hosts.command import CommandResult
    from netrun.hosts.host import Host
    from netrun.modes.base import Mode, RunContext
    from netrun.run.plan import TestPlan

#: IPv4 (20) and ICMP (8) headers: a ping of MTU - 28 bytes fills a full-size packet.
ICMP_OVERHEAD = 28


@dataclass(frozen=True)
class Applied:
    """One MTU this run set on a host: which layer, the device, the value, and its undo."""

    layer: str  # "underlay" (the data NIC) or "overlay" (the VXLAN device)
    dev: str
    mtu: int
    original: int
    host: Host
    record: Record


class MtuSettings:
    """The run's MTU changes: what is set on each host, its undo records, and the plan."""

    def __init__(self, ctx: RunContext, plans: Sequence[TestPlan], grouped: bool) -> None:
        self.ctx = ctx
        #: Per test (by name: a sweep's tests share an index): host -> what the next test
        #: on that host wants (grouped runs).
        tests = [p.spec for p in plans]
        after = next_wants(tests, [p.mtu for p in plans])
        self.after = {t.name: n for t, n in zip(tests, after, strict=True)}
        self.grouped = grouped
        #: host name -> what this run set there, oldest first
        self.applied: dict[str, list[Applied]] = {}
        #: The undo records of those changes: the run's, since an MTU outlives its test.
        self.undo = ctx.ledger.scope("mtu")
        self._lock = threading.Lock()

    # -- before the mode starts ---------------------------------------------------------------
    def enter(self, plan: TestPlan, hosts: Mapping[str, Host], mode: Mode) -> None:
        """Set the test's MTUs on its hosts (restoring what another group set) and check the
        data path both ways; a test without ``mtu:`` gets the hosts' own MTUs back."""
        test, w = plan.spec, plan.mtu
        wants = {"underlay": w.underlay, "overlay": w.overlay} if w else {}
        unique = list({h.name: h for h in hosts.values()}.values())
        for host in unique:
            stale = self._stale(host.name, wants)
            if stale:
                self.restore(host.name, stale, strict=True)
        if w is None:
            return
        if why := overlay_problem(test, w):
            raise MtuError(why)
        details: dict[str, Any] = {
            "underlay": w.underlay,
            "overlay": w.overlay,
            "container": None,
            "original": {},
            "path_checked": [],
        }
        mode.details["mtu"] = details
        for host in unique:
            self._apply(host, w, mode, test, details)
        data = [(h.name, h.data_ip) for h in unique]
        details["path_checked"] += self.check_path(unique, data, w.underlay)

    def _apply(
        self, host: Host, w: MtuWant, mode: Mode, test: TestSpec, details: dict[str, Any]
    ) -> None:
        nic = getattr(self.ctx.known.facts.get(host.name), "nic", None)
        iface = getattr(nic, "iface", None)
        if not iface:
            raise MtuError(f"{host.name}: the data NIC is unknown; set netrun_iface")
        overlay = str(mode.value("flannel_iface", host)) if w.overlay else None
        res = host.run(state_script(iface, overlay, host.address), timeout=30, check=False)
        state = parse_state(res.stdout)
        if iface in state.get("mgmt", []) and not test.options.get("allow_management_mtu"):
            raise MtuError(
                f"{host.name}: {iface} carries netrun's SSH session, so test {test.name} may "
                "not change its MTU; give the host a separate data NIC (netrun_iface, "
                "netrun_data_ip) or set allow_management_mtu: true"
            )
        root = state.get("uid") == ["0"]
        if not root and not host.become:
            raise MtuError(
                f"{host.name}: changing the MTU of {iface} needs root; connect as root or "
                "set ansible_become: true for this host"
            )
        now = {iface: first_int(state.get("mtu"))}
        if overlay:
            if first_int(state.get("overlay")) is None:
                raise MtuError(
                    f"{host.name}: no overlay device {overlay} (is flanneld running?); set "
                    "flannel_iface (inventory netrun_flannel_iface) to its VXLAN device"
                )
            now[overlay] = first_int(state.get("overlay"))
        if now[iface] is None:
            raise MtuError(f"{host.name}: cannot read the MTU of {iface}")
        held = {a.dev: a for a in self.applied.get(host.name, [])}
        details["original"][host.name] = {
            d: held[d].original if d in held else m for d, m in now.items()
        }
        steps = [("underlay", iface, w.underlay)]
        if overlay and w.overlay:
            steps.append(("overlay", overlay, w.overlay))
        if w.underlay < int(now[iface] or 0):
            steps.reverse()  # lowering: the overlay first, it must fit in the underlay
        for layer, dev, mtu in steps:
            old = int(now[dev] or 0)
            if dev in held:
                continue  # set by an earlier test of this group
            record, done = self._change(
                host,
                set_script(dev, mtu),
                f"ip link set dev {shlex.quote(dev)} mtu {old}",
                what=f"MTU of {dev} back to {old}",
                sudo=not root,
            )
            with self._lock:
                self.applied.setdefault(host.name, []).append(
                    Applied(layer, dev, mtu, old, host, record)
                )
            if not done.ok:
                why = (done.stderr or done.stdout).strip()[-200:]
                raise MtuError(f"{host.name}: could not set the MTU of {dev} to {mtu}: {why}")

    def _change(
        self, host: Host, command: str, undo: str, *, what: str, sudo: bool
    ) -> tuple[Record, CommandResult]:
        """Like Mode.change, but in the run's MTU scope: the record outlives the test."""
        record = self.undo.record(host, undo, what=what, sudo=sudo)
        script = undo_records.guarded(record, command)
        return record, host.run(script, timeout=30, sudo=sudo, check=False)

    def check_path(
        self,
        hosts: Sequence[Host],
        ends: Sequence[tuple[str, str]],
        mtu: int,
        pids: Sequence[int | None] | None = None,
    ) -> list[str]:
        """Don't-fragment pings at the full size from each end to every other; raises the
        first failure as its one line. ``ends`` are (name, address); ``pids`` the
        container each end pings from (container modes), by its host's nsenter."""
        checked = []
        for i, (src, _) in enumerate(ends):
            for j, (dst, address) in enumerate(ends):
                if i == j or address == ends[i][1]:
                    continue
                pid = pids[i] if pids else None
                source = None if pid else ends[i][1]
                script = ping_script(source, address, mtu - ICMP_OVERHEAD, pid)
                res = hosts[i].run(script, timeout=30, check=False)
                if not res.ok:
                    small_ping = ping_script(source, address, 56, pid)
                    small = hosts[i].run(small_ping, timeout=30, check=False)
                    if not small.ok:  # not the MTU: the peer does not answer at all
                        raise MtuError(
                            f"{src} -> {dst}: no reply even to a small ping ({address} "
                            "unreachable, or ICMP blocked), so the path MTU cannot be checked"
                        )
                    raise MtuError(path_failure(src, dst, mtu, res.stdout + res.stderr))
                checked.append(f"{src} -> {dst} {mtu}")
        return checked

    # -- after the mode's setup: the containers ------------------------------------------
    def check_containers(self, plan: TestPlan, mode: Mode) -> None:
        """Record the MTU seen inside each container (it must be the overlay's) and check
        the path between the containers both ways."""
        w = plan.mtu
        if w is None or w.containers is None:
            return
        details = mode.details["mtu"]
        containers = mode.details.get("containers") or {}
        seen = {role: c.get("mtu") for role, c in containers.items()}
        details["container"] = seen
        for role, mtu in seen.items():
            if mtu != w.containers:
                raise MtuError(
                    f"{containers[role]['host']}: the {role} container's MTU is {mtu}, not the "
                    f"{w.containers} set for the overlay"
                )
        mode.details["overlay_mtu"] = w.containers  # the ceiling's inner MTU
        roles = [r for r in ("client", "server") if r in containers]
        hosts = [mode.hosts[r] for r in roles]
        ends = [
            (f"{containers[r]['host']}:{r}", next(iter(containers[r]["ips"].values()), ""))
            for r in roles
        ]
        pids = [getattr(mode, "pids", {}).get(r) for r in roles]
        details["path_checked"] += self.check_path(hosts, ends, w.containers, pids)

    # -- restoring ---------------------------------------------------------------------------
    def leave(self, test: TestSpec) -> list[str]:
        """After a test: restore what its hosts' next test does not want as it is."""
        problems: list[str] = []
        nxt = self.after.get(test.name, {})
        for name in dict.fromkeys(test.hosts):
            later = nxt.get(name) if self.grouped else None
            wants = {"underlay": later[0], "overlay": later[1]} if later else {}
            stale = self._stale(name, wants)
            if stale:
                problems += self.restore(name, stale)
        return problems

    def _stale(self, name: str, wants: Mapping[str, int | None]) -> set[str]:
        """The layers set on a host that are not what ``wants`` asks for."""
        return {a.layer for a in self.applied.get(name, []) if wants.get(a.layer) != a.mtu}

    def restore(self, name: str, layers: set[str] | None = None, strict: bool = False) -> list[str]:
        """Run a host's MTU undo records (of ``layers``, default all), newest first; the
        problems, one line each (with ``strict``, raised: a test must not run on MTUs that
        could not be put back)."""
        with self._lock:
            held = self.applied.get(name, [])
            going = [a for a in held if layers is None or a.layer in layers]
            self.applied[name] = [a for a in held if a not in going]
            if not self.applied[name]:
                del self.applied[name]
        problems = self.undo.run([a.record for a in going]) if going else []
        if strict and problems:
            raise MtuError("; ".join(problems))
        return problems

    def restore_all(self) -> list[str]:
        """Every host's MTUs back (the end of the run, however it ends)."""
        return [p for name in list(self.applied) for p in self.restore(name)]
