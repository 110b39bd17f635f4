"""Byte counters along a container test's path: the proof of where its bytes went.

A loaded LD_PRELOAD library proves nothing about acceleration (the lab's pass-through
stand-in is loaded too). What proves it is where the bytes went: under FreeFlow the data
leaves the overlay, so the host's data NIC carries the test's bytes while the overlay
device (flannel.1) and the container's interface carry a few hundred bytes of setup; on
Flannel the same bytes cross the overlay device, then the NIC encapsulated. netrun reads
the three devices' counters on both ends just before and just after each measurement.
"""

from __future__ import annotations

import dataclasses
import logging
import shlex
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from netrun.hosts import counters, cpustat
from netrun.modes.docker.launch import sections

if TYPE_CHECKING:
    from netrun.core.measurement import Measurement
    from netrun.hosts.command import CommandResult
    from netrun.hosts.host import Host
    from netrun.modes.docker.base import ContainerMode

#: A device "carried the test" when it moved at least this share of the test's bytes, and
#: "stayed out of it" below the other: the counters also see headers, ACKs and setup.
CARRIED = 0.9
BYPASSED = 0.1
CONTAINER_IFACE = "eth0"
log = logging.getLogger(__name__)
_MARK = "@@netrun-container@@"

Counters = dict[str, tuple[int, int]]  # device -> (rx_bytes, tx_bytes)
#: name -> host pid (None: not known yet) of a process the mode runs on a host beside the
#: containers, whose CPU each reading reads too (ContainerMode.own_procs: FreeFlow's router).
Own = Mapping[str, int | None]
_CPU_MARK = "@@netrun-cpu@@"
#: Starts the counters reading (netrun.hosts.counters' own mark is a section marker here).
_COUNTERS_MARK = "@@netrun-counters@@"
#: An end's CPU reading is its test's when its interval is at most this many times the
#: client's (plus a second): a server's reading from its container's start is not.
CPU_WINDOW = 1.5


class Snapshot(NamedTuple):
    """One reading of a host: its devices, its container's, its per-core CPU time, and
    the kernel's drop counters where the container's sockets live (its network
    namespace: UDP, its eth0) with the host NIC's qdisc (netrun.hosts.counters)."""

    host: Counters
    container: Counters
    cpu: cpustat.Reading | None = None
    counters: counters.Reading | None = None


def command(container_pid: int | None, own: Own | None = None) -> str:
    """One shell line: the host's /proc/net/dev, then the container's (by its PID 1)."""
    if not container_pid:
        return "cat /proc/net/dev"
    return shell_reading(str(int(container_pid)), own=own)


def own_var(name: str) -> str:
    """The shell variable that may hold the pid of the mode's own process ``name`` (the
    FreeFlow router's start script sets ``nr_p_router``; an armed client reads it from
    its line, netrun.modes.docker.savers.client); unset, the reading takes the pid the mode knew."""
    if not name.isidentifier() or not name.isascii():
        raise ValueError(f"not a process name for a shell variable: {name!r}")
    return f"nr_p_{name}"


def own_words(own: Own | None) -> dict[str, str]:
    """name -> the shell word giving the pid of each of the mode's own processes."""
    return {name: f"${{{own_var(name)}:-{int(pid or 0)}}}" for name, pid in (own or {}).items()}


def parse_net_dev(text: str) -> Counters:
    """rx/tx bytes per device of a /proc/net/dev table (its two header lines skipped)."""
    out: Counters = {}
    for line in text.splitlines():
        name, sep, rest = line.partition(":")
        fields = rest.split()
        if not sep or len(fields) < 9 or not (fields[0].isdigit() and fields[8].isdigit()):
            continue
        out[name.strip()] = (int(fields[0]), int(fields[8]))
    return out


def parse(text: str) -> Snapshot:
    """The host's counters, the container's and the CPU's, from the output of `command`."""
    text, _, cpu = text.partition(_CPU_MARK)
    host, _, container = text.partition(_MARK)
    found = counters.parse(cpu, _COUNTERS_MARK)  # older readings had the CPU snippet alone
    ticks = found.cpu if found is not None else cpustat.parse(cpu)
    return Snapshot(parse_net_dev(host), parse_net_dev(container), ticks, found)


def delta(
    devices: dict[str, str | None],
    before: Snapshot,
    after: Snapshot,
) -> dict[str, Any]:
    """{role: {device, rx_bytes, tx_bytes}} for overlay, host_nic (host) and container.

    A device that is missing from either reading is recorded with null bytes and a reason.
    """
    out: dict[str, Any] = {}
    for role, name in devices.items():
        old_side = before.container if role == "container" else before.host
        new_side = after.container if role == "container" else after.host
        old = old_side.get(name) if name else None
        new = new_side.get(name) if name else None
        if old is None or new is None:
            out[role] = {"device": name, "rx_bytes": None, "tx_bytes": None,
                         "unavailable": f"no counters for {name or 'the device'}"}  # fmt: skip
            continue
        out[role] = {"device": name, "rx_bytes": new[0] - old[0], "tx_bytes": new[1] - old[1]}
    return out


def _moved(path: dict[str, Any], end: str, device: str, direction: str) -> int | None:
    entry = path.get(end, {}).get(device) or {}
    value = entry.get(f"{direction}_bytes")
    return value if isinstance(value, int) else None


def verdict(path: dict[str, Any], test_bytes: int, sender: str) -> tuple[bool, bool, str]:
    """(accelerated, crossed_overlay, why) from both ends' counters and the test's bytes.

    Accelerated: on the sender (tx) and the receiver (rx), the host NIC carried the test's
    bytes while the overlay device and the container's interface did not. Crossed overlay:
    the overlay device carried them on both ends (Flannel's normal path).
    """
    receiver = "server" if sender == "client" else "client"
    ends = ((sender, "tx"), (receiver, "rx"))
    if test_bytes <= 0:
        return False, False, "the test moved no bytes"
    share: dict[str, list[float]] = {"host_nic": [], "overlay": [], "container": []}
    for end, direction in ends:
        for device in share:
            moved = _moved(path, end, device, direction)
            if moved is None:
                return False, False, f"no {device} counters on the {end} host"
            share[device].append(moved / test_bytes)
    crossed = min(share["overlay"]) >= CARRIED
    nic = min(share["host_nic"]) >= CARRIED
    bypassed = max(share["overlay"] + share["container"]) < BYPASSED
    test = size(test_bytes)
    top = size(max(share["overlay"]) * test_bytes)
    if nic and bypassed:
        return True, crossed, f"the host NICs carried the test's {test}, the overlay {top}"
    if crossed:
        return False, True, f"the test's {test} crossed the overlay device ({top})"
    return (
        False,
        crossed,
        (
            f"the host NICs carried {size(min(share['host_nic']) * test_bytes)} of the "
            f"test's {test}, the overlay and container interfaces up to "
            f"{size(max(share['overlay'] + share['container']) * test_bytes)}"
        ),
    )


def size(count: float) -> str:
    """A byte count in the unit its magnitude reads in (decimal: a netperf TCP_RR moves a
    few KB, an iperf3 run GB): "494 bytes", "18.4 KB", "231.2 MB", "11.3 GB"."""
    count = round(count)
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if count >= scale or round(count / scale * 1000, 1) >= 1000:  # 999,960: 1.0 MB
            return f"{count / scale:.1f} {unit}"
    return f"{count} byte{'' if count == 1 else 's'}"


def read(host: Host, pid: int | None, tries: int = 3, own: Own | None = None) -> Snapshot:
    """Host and container counters now; empty when the host cannot tell.

    Tried again when a part is missing: once in a long run a reading came back without the
    container's table (seen on the lab under load), and one bad reading would otherwise
    cost the repeat its verdict.
    """
    found = Snapshot({}, {})
    for attempt in range(tries):
        res = host.run(command(pid, own), timeout=30, check=False)
        found = parse(res.stdout)
        if found[0] and (found[1] or not pid):
            return found
        log.debug("%s: counters incomplete (try %d): %s", host.name, attempt + 1, res.stderr)
        time.sleep(0.1)
    return found


def devices(mode: ContainerMode, host: Host) -> dict[str, str | None]:
    """The overlay device (flannel_iface), the host's data NIC, the container's eth0."""
    return {
        "overlay": str(mode.value("flannel_iface", host)),
        "host_nic": host_nic(mode, host),
        "container": CONTAINER_IFACE,
    }


def host_nic(mode: ContainerMode, host: Host) -> str | None:
    """The host's data NIC (netrun_iface, else the probe's): where a container's traffic
    leaves the host, and its qdisc drops."""
    nic = getattr(getattr(mode.ctx.known.facts.get(host.name), "nic", None), "iface", None)
    return str(host.vars.get("netrun_iface") or nic or "") or None


def shell_reading(pid_var: str = "$pid", nic: str | None = None, own: Own | None = None) -> str:
    """sh printing the host's and the container's counters, the container being the one
    whose PID 1 is ``pid_var`` (a shell variable, or a number); tried again while the
    container's table comes back without its interface (see ``read``: a run on the
    loaded lab saw one such reading in a few hundred). Then, in one awk, the drop
    counters of the container's network namespace (where its sockets count UDP errors),
    the per-core CPU and the CPU time of the container's PID 1 and of its runtime shim
    (containerd-shim: its parent), and of the mode's ``own`` processes on the host (the
    FreeFlow router: ``own_words``), and the host ``nic``'s qdisc
    (netrun.hosts.counters.script)."""
    dev = f'"/proc/{pid_var}/net/dev"'
    return (
        f"cat /proc/net/dev; echo {shlex.quote(_MARK)}; "
        f"for i in 1 2 3 4 5; do t=$(cat {dev} 2>/dev/null); "
        f'case "$t" in *{CONTAINER_IFACE}:*) break;; esac; sleep 0.05; done; echo "$t"; '
        f"echo {shlex.quote(_CPU_MARK)}; "
        # the container runtime's shim: the parent of the container's PID 1 (proc(5)
        # field 4), read with builtins only
        f'nr_s=; {{ read -r nr_s <"/proc/{pid_var}/stat"; }} 2>/dev/null; '
        "nr_s=${nr_s##*[)] }; nr_s=${nr_s#* }; nr_shim=${nr_s%% *}; "
        + counters.script(
            CONTAINER_IFACE,
            net=f"/proc/{pid_var}/net",
            qdisc=nic,
            mark=_COUNTERS_MARK,
            procs={"container": pid_var, "shim": "${nr_shim:-0}", **own_words(own)},
        )
    )


def wrap(argv: list[str], pid: int | None, nic: str | None = None, own: Own | None = None) -> str:
    """The client's command with the client end's counters read just before and just
    after it, in the same round trip (sections before, out, after; its exit status)."""
    reading = shell_reading(nic=nic, own=own) if pid else command(None)
    return f"pid={int(pid or 0)}; " + wrap_line(shlex.join(argv), reading)


def wrap_line(line: str, reading: str) -> str:
    """``wrap`` of a command line, ``reading`` the sh that reads the counters."""
    return (
        f"echo ==netrun:before==; {reading}; echo ==netrun:out==\n"
        f"{line}; rc=$?; echo; echo ==netrun:after==; {reading}; exit $rc"
    )


def unwrap(res: CommandResult) -> tuple[CommandResult, Snapshot | None, Any]:
    """The client's own result, and the counters read before and after it (None: missing)."""
    found = sections(res.stdout)
    if "out" not in found:
        return res, None, None
    out = found["out"][:-1] if found["out"].endswith("\n") else found["out"]
    before = parse(found.get("before", ""))
    after = parse(found["after"]) if "after" in found else None
    return dataclasses.replace(res, stdout=out), before, after


def around(
    mode: ContainerMode, measure: Callable[[], Measurement], *, ride_only: bool = False
) -> tuple[Measurement, dict]:
    """Run `measure` between two readings of both ends; returns it and the path bytes
    (none with ``ride_only``).

    The client end's readings ride on its own command (``wrap``). The server end's reading
    before is the last one taken there (the container's start, or the previous repeat's
    reading after: nothing else runs in the container or on the pair in between); the
    one after is taken on the server's host as soon as its iperf3 has served the test
    (netrun.modes.docker.savers.serverend, sent as the client starts, which on the host's last
    measurement also sweeps it). A reading that is missing is taken on its own. With
    ``ride_only`` (docker mode, which proves no path: its CPU only), no command is sent
    for a reading: the wait is the host's last measurement's sweep, and a server end
    with no reading has no figures, with the reason.
    """
    ends = {"client": mode.client, "server": mode.server}
    before_server = mode.counters.pop("server", None)
    if before_server is None and not ride_only:
        before_server = read(mode.server, mode.pids.get("server"), own=mode.own_procs(mode.server))
    served = mode.counters.pop("served", None)  # a failed repeat leaves it unknown
    last = mode.last_on(mode.server, mode.repeat)
    own = mode.own_procs(mode.server)
    script = shell_reading(nic=host_nic(mode, mode.server), own=own)
    waiting = mode.server_wait(served, script if last or not ride_only else "")
    mode.counters.update(client_before=None, client_after=None)
    m = measure()
    text, mode.counters["served"] = mode.server_done(served, waiting)
    reading = parse(text or "")
    after_server = reading if reading[0] and reading[1] else None
    before = {
        "server": before_server or Snapshot({}, {}),
        "client": mode.counters.get("client_before") or Snapshot({}, {}),
    }
    if ride_only:
        after = {
            "server": after_server or Snapshot({}, {}),
            "client": mode.counters.get("client_after") or Snapshot({}, {}),
        }
    else:
        after = {
            "server": after_server or read(mode.server, mode.pids.get("server"), own=own),
            "client": mode.counters.get("client_after")
            or read(mode.client, mode.pids.get("client"), own=mode.own_procs(mode.client)),
        }
    mode.counters["server"] = after_server if ride_only else after["server"]
    m.details["counters"] = cpu_records(before, after)
    if ride_only:
        return m, {}
    path = {
        role: delta(devices(mode, host), before[role], after[role]) for role, host in ends.items()
    }
    return m, path


def cpu_records(before: dict[str, Snapshot], after: dict[str, Snapshot]) -> dict[str, Any]:
    """Each end's counter record with its host's per-core CPU use over the test (the
    host's network namespace: a container's cores are its host's). An end whose reading
    before is much older than the client's window (a server reading from its container's
    start) has none, with the reason."""
    out: dict[str, Any] = {}
    used: dict[str, cpustat.Usage | None] = {}
    for role in before:
        old, new = before[role].cpu, after[role].cpu
        used[role] = cpustat.usage(old, new) if old and new else None
    client = used.get("client")
    for role, found in used.items():
        entry: dict[str, Any] = {"iface": None, "netns": "host"}
        old_c, new_c = before[role].counters, after[role].counters
        if old_c is not None and new_c is not None:  # the container's namespace, its eth0
            entry = counters.record(old_c, new_c, iface=CONTAINER_IFACE, netns="container")
            entry.pop("cpu", None)  # the host's, judged below against the client's window
        window = client.elapsed_seconds * CPU_WINDOW + 1 if client else None
        if found is None:
            entry["unavailable"] = "no per-core CPU reading before and after the test"
        elif window is not None and found.elapsed_seconds > window:
            entry["unavailable"] = (f"its reading before was {found.elapsed_seconds:.1f}s "
                                    "before its reading after: not the test's window")  # fmt: skip
        else:
            cpu = after[role].cpu
            entry["cpu"] = {**found.to_dict(), "boot": cpu.boot if cpu else ""}
        out[role] = entry
    return out
