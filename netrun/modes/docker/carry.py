"""A tool's leg between a test's containers, with the bytes along its path around it.

In the path-bytes modes (flannel, freeflow) a leg whose tool says what it moved each way
(Placement.carry's ``moved``: netperf's payload, netrun.tools.netperf.stats.payload_bytes)
runs between two readings of both ends' counters (netrun.modes.docker.pathbytes.around):
the client end's ride on the leg's own command at that end (``ride``: the first command
the tool sends there), the server end's on its host as the leg ends. Each direction that
moved payload is judged on it (``verdict``): the path bytes, the payload each way and
whether it crossed the overlay (left it, for FreeFlow) go in the repeat's details.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from netrun.core.measurement import Measurement
from netrun.modes.docker import pathbytes

if TYPE_CHECKING:
    from netrun.hosts.command import CommandResult
    from netrun.modes.docker.base import ContainerMode

#: What the leg returns.
T = TypeVar("T")


def ride(mode: ContainerMode, script: str) -> tuple[str, Callable[[CommandResult], CommandResult]]:
    """The client end's command with its counters read just before and after it, in its
    own round trip, and what reads them back out of its result into ``mode.counters``."""
    pid = mode.pids.get("client")
    own = mode.own_procs(mode.client)
    reading = pathbytes.shell_reading(own=own) if pid else pathbytes.command(None)
    sent = f"pid={int(pid or 0)}; " + pathbytes.wrap_line(script, reading)

    def done(res: CommandResult) -> CommandResult:
        res, before, after = pathbytes.unwrap(res)
        mode.counters.update(client_before=before, client_after=after)
        return res

    return sent, done


def with_path(
    mode: ContainerMode, leg: Callable[[], T], moved: Callable[[T], Mapping[str, int]]
) -> tuple[T, dict[str, Any], bool]:
    """``leg`` between two readings of both ends; what it returned, the details (each
    end's counters, the path bytes, the payload each way, whether it crossed the overlay
    and why), and whether every direction left the overlay (accelerated)."""
    # a leg is the tool's own: no wait on its server's words per served test
    # (savers.serverend, Tool.resident_served) rides on it, so without a count the server
    # end's reading after is taken as soon as the leg ends, not after a wait for words
    # that may not come (10 s a repeat)
    mode.counters.pop("served", None)
    done: list[T] = []

    def run() -> Measurement:
        mode.riding = True
        try:
            done.append(leg())
        finally:
            mode.riding = False
        return Measurement("", None, {})

    m, path = pathbytes.around(mode, run)
    payload = dict(moved(done[0]))
    accelerated, crossed, why = verdict(path, payload)
    details = {
        **m.details,
        "path_bytes": path,
        "payload_bytes": payload,
        "crossed_overlay": crossed,
        "path_check": why,
    }
    return done[0], details, accelerated


def proving(mode: ContainerMode, measure: Callable[[], Measurement]) -> Measurement:
    """A tool's whole measurement between two readings of both ends (Placement.proving:
    the client end's ride on its command, the server end's on its host as it ends); in a
    path-bytes mode judged on what its tool says it moved (Tool.moved: iperf3's receiver
    bytes), with the mode's own word on it (``judged``: FreeFlow's accelerated) and its
    checks after it (``checked``: Flannel's flanneld)."""
    if not mode.counts_path:  # docker mode proves no path: its CPU readings only
        m, _ = pathbytes.around(mode, measure, ride_only=True)
        return m
    m, path = pathbytes.around(mode, measure)
    moved = mode.tool.moved(m.result) if mode.tool.moved is not None else {}
    accelerated, crossed, why = whole(path, moved)
    m.details.update(path_bytes=path, crossed_overlay=crossed, path_check=why)
    mode.judged(m.details, accelerated)
    mode.checked()
    return m


def whole(path: dict[str, Any], moved: Mapping[str, int]) -> tuple[bool, bool, str]:
    """(accelerated, crossed_overlay, why) of a measurement whose tool moved its payload
    one way (iperf3's: its sender's bytes as received), judged on them without naming the
    direction; several ways: ``verdict``."""
    if len(moved) > 1:
        return verdict(path, dict(moved))
    sender, sent = next(iter(moved.items()), ("client", 0))
    return pathbytes.verdict(path, sent, sender)


def verdict(path: dict[str, Any], moved: dict[str, int]) -> tuple[bool, bool, str]:
    """(accelerated, crossed_overlay, why) over each direction that moved payload: it is
    accelerated (crossed) only when every such direction is."""
    judged = [
        (sender, pathbytes.verdict(path, sent, sender))
        for sender, sent in moved.items()
        if sent > 0
    ]
    if not judged:
        return False, False, "the test moved no bytes"
    accelerated = all(v[0] for _, v in judged)
    crossed = all(v[1] for _, v in judged)
    why = "; ".join(f"{sender} to {_peer(sender)}: {v[2]}" for sender, v in judged)
    return accelerated, crossed, why


def _peer(end: str) -> str:
    return "server" if end == "client" else "client"
