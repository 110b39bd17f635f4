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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

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


def command(container_pid: int | None) -> str:
    """One shell line: the host's /proc/net/dev, then the container's (by its PID 1)."""
    return shell_reading(str(int(container_pid))) if container_pid else "cat /proc/net/dev"


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


def parse(text: str) -> tuple[Counters, Counters]:
    """The host's counters and the container's, from the output of `command`."""
    host, _, container = text.partition(_MARK)
    return parse_net_dev(host), parse_net_dev(container)


def delta(
    devices: dict[str, str | None],
    before: tuple[Counters, Counters],
    after: tuple[Counters, Counters],
) -> dict[str, Any]:
    """{role: {device, rx_bytes, tx_bytes}} for overlay, host_nic (host) and container.

    A device that is missing from either reading is recorded with null bytes and a reason.
    """
    out: dict[str, Any] = {}
    for role, name in devices.items():
        side = 1 if role == "container" else 0
        old = before[side].get(name) if name else None
        new = after[side].get(name) if name else None
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
    mb = test_bytes / 1e6
    top = max(share["overlay"]) * mb
    if nic and bypassed:
        rest = round(max(share["overlay"]) * test_bytes)
        why = f"the host NICs carried the test's {mb:.1f} MB, the overlay {rest} bytes"
        return True, crossed, why
    if crossed:
        return False, True, f"the test's {mb:.1f} MB crossed the overlay device ({top:.1f} MB)"
    return (
        False,
        crossed,
        (
            f"the host NICs carried {min(share['host_nic']) * mb:.1f} of the test's {mb:.1f} MB, "
            f"the overlay and container interfaces up to "
            f"{max(share['overlay'] + share['container']) * mb:.1f} MB"
        ),
    )


def read(host: Host, pid: int | None, tries: int = 3) -> tuple[Counters, Counters]:
    """Host and container counters now; empty when the host cannot tell.

    Tried again when a part is missing: once in a long run a reading came back without the
    container's table (seen on the lab under load), and one bad reading would otherwise
    cost the repeat its verdict.
    """
    found: tuple[Counters, Counters] = ({}, {})
    for attempt in range(tries):
        res = host.run(command(pid), timeout=30, check=False)
        found = parse(res.stdout)
        if found[0] and (found[1] or not pid):
            return found
        log.debug("%s: counters incomplete (try %d): %s", host.name, attempt + 1, res.stderr)
        time.sleep(0.1)
    return found


def devices(mode: ContainerMode, host: Host) -> dict[str, str | None]:
    """The overlay device (flannel_iface), the host's data NIC, the container's eth0."""
    nic = getattr(getattr(mode.ctx.facts.get(host.name), "nic", None), "iface", None)
    return {
        "overlay": str(mode.value("flannel_iface", host)),
        "host_nic": str(host.vars.get("netrun_iface") or nic or "") or None,
        "container": CONTAINER_IFACE,
    }


def shell_reading(pid_var: str = "$pid") -> str:
    """sh printing the host's and the container's counters, the container being the one
    whose PID 1 is ``pid_var`` (a shell variable, or a number); tried again while the
    container's table comes back without its interface (see ``read``: a run on the
    loaded lab saw one such reading in a few hundred)."""
    dev = f'"/proc/{pid_var}/net/dev"'
    return (
        f"cat /proc/net/dev; echo {shlex.quote(_MARK)}; "
        f"for i in 1 2 3 4 5; do t=$(cat {dev} 2>/dev/null); "
        f'case "$t" in *{CONTAINER_IFACE}:*) break;; esac; sleep 0.05; done; echo "$t"'
    )


def wrap(argv: list[str], pid: int | None) -> str:
    """The client's command with the client end's counters read just before and just
    after it, in the same round trip (sections before, out, after; its exit status)."""
    reading = shell_reading() if pid else command(None)
    return f"pid={int(pid or 0)}; " + wrap_line(shlex.join(argv), reading)


def wrap_line(line: str, reading: str) -> str:
    """``wrap`` of a command line, ``reading`` the sh that reads the counters."""
    return (
        f"echo ==netrun:before==; {reading}; echo ==netrun:out==\n"
        f"{line}; rc=$?; echo; echo ==netrun:after==; {reading}; exit $rc"
    )


def unwrap(res: CommandResult) -> tuple[CommandResult, tuple[Counters, Counters] | None, Any]:
    """The client's own result, and the counters read before and after it (None: missing)."""
    found = sections(res.stdout)
    if "out" not in found:
        return res, None, None
    out = found["out"][:-1] if found["out"].endswith("\n") else found["out"]
    before = parse(found.get("before", ""))
    after = parse(found["after"]) if "after" in found else None
    return dataclasses.replace(res, stdout=out), before, after


def around(mode: ContainerMode, measure: Callable[[], Measurement]) -> tuple[Measurement, dict]:
    """Run `measure` between two readings of both ends; returns it and the path bytes.

    The client end's readings ride on its own command (``wrap``). The server end's reading
    before is the last one taken there (the container's start, or the previous repeat's
    reading after: nothing else runs in the container or on the pair in between); the
    one after is taken on the server's host as soon as its iperf3 has served the test
    (netrun.modes.docker.serverwait, sent as the client starts, which on the host's last
    measurement also sweeps it). A reading that is missing is taken on its own.
    """
    ends = {"client": mode.client, "server": mode.server}
    before_server = mode.counters.pop("server", None) or read(mode.server, mode.pids.get("server"))
    served = mode.counters.pop("served", None)  # a failed repeat leaves it unknown
    waiting = mode.server_wait(served, shell_reading())
    mode.counters.update(client_before=None, client_after=None)
    m = measure()
    text, mode.counters["served"] = mode.server_done(served, waiting)
    reading = parse(text or "")
    after_server = reading if reading[0] and reading[1] else None
    before = {
        "server": before_server,
        "client": mode.counters.get("client_before") or ({}, {}),
    }
    after = {
        "server": after_server or read(mode.server, mode.pids.get("server")),
        "client": mode.counters.get("client_after") or read(mode.client, mode.pids.get("client")),
    }
    mode.counters["server"] = after["server"]
    path = {
        role: delta(devices(mode, host), before[role], after[role]) for role, host in ends.items()
    }
    return m, path
