"""The live sampler: per-second throughput while a test runs, read from the host's NIC.

iperf3 3.12 writes its JSON (-J) only when a test ends, iperf 2 has no stream that
netrun parses, and iperf3's ``--json-stream`` (3.17+) replaces the one JSON result
netrun saves until 3.20's ``--json-stream-full``: asking the tool would change what a run
records. The kernel already counts every byte. While a sample measures, a second channel
on the receiving host's existing SSH connection (no new login, nothing on the critical
path: it opens in a thread) runs one POSIX shell loop that prints the data NIC's rx/tx
byte counters once a second. It ends by itself after the test's duration plus a grace
period, or at its next line once netrun closes the channel or dies; the only process it
starts is a ``sleep 1``.

The figure is the host NIC's, frames and all, so it reads a few percent above the tool's
goodput and includes any other traffic on that NIC; for container and overlay modes it is
the host's NIC, not the container's (the overlay's headers included). It is shown on the
terminal's live line only (netrun.run.progress), never saved: the results are the tool's.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import shlex
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from netrun.core.numeric import short

if TYPE_CHECKING:
    from netrun.tools.base import Tool

log = logging.getLogger("netrun.run.sampler")

#: Seconds the counter loop runs beyond the test's own time (setup, the client's start).
GRACE_S = 15


@dataclass(frozen=True)
class Reading:
    """One line of the counter loop: the host's uptime (s) and its NIC's byte counters."""

    at: float
    rx: int
    tx: int


@dataclass(frozen=True)
class Target:
    """Where to sample a test: the host whose NIC carries its data, and which counter."""

    host: str
    iface: str
    side: str  # "rx", "tx" or "rx+tx" (a bidirectional test, seen from the client)
    seconds: int


def script(iface: str, seconds: int) -> str:
    """The counter loop, in POSIX sh: builtins only but ``sleep``, at most ``seconds`` lines."""
    stats = shlex.quote(f"/sys/class/net/{iface}/statistics")
    return (
        f's={stats}; [ -r "$s/rx_bytes" ] || exit 3; n=0; '
        f"while [ $n -lt {int(seconds)} ]; do "
        'read u _ </proc/uptime; read r <"$s/rx_bytes"; read t <"$s/tx_bytes"; '
        'echo "$u $r $t" || exit 0; n=$((n+1)); sleep 1; done'
    )


def parse(line: str) -> Reading | None:
    """A counter line, or None for anything else (a partial line, an error)."""
    parts = line.split()
    if len(parts) != 3:
        return None
    try:
        return Reading(float(parts[0]), int(parts[1]), int(parts[2]))
    except ValueError:
        return None


def rate_bps(before: Reading, after: Reading, side: str) -> float | None:
    """Bits per second between two readings on one side; None when the clock did not move
    or a counter went back (the NIC was reset)."""
    span = after.at - before.at
    if span <= 0:
        return None
    rx, tx = after.rx - before.rx, after.tx - before.tx
    moved = {"rx": rx, "tx": tx}.get(side, rx + tx)
    if rx < 0 or tx < 0:
        return None
    return 8 * moved / span


def mbps(bps: float) -> str:
    """Mbit/s to about three significant figures, as the table's stats: 938, 52.4, 1.63."""
    return short(bps / 1e6)


def describe(target: Target, now_bps: float, mean_bps: float | None) -> str:
    """What the live line says: whose counter, this second's rate and the mean so far."""
    text = f"NIC {target.host}:{target.iface} {target.side} {mbps(now_bps)} Mbit/s"
    return text if mean_bps is None else f"{text} avg {mbps(mean_bps)}"


def target(test: Any, facts: dict[str, Any], tool: Tool) -> Target | None:
    """The receiving host of a test and its data NIC, or None when the NIC cannot tell:
    a tool whose headline is not a throughput the NIC shows (Tool.live_nic), a same-host
    (loopback) test, an unknown NIC."""
    options = getattr(test, "options", {}) or {}
    if not tool.live_nic or test.server == test.client:
        return None
    try:
        seconds = float(options.get("duration") or 0) + float(options.get("omit") or 0)
    except (TypeError, ValueError):
        return None
    if seconds <= 0:
        return None
    if options.get("bidir"):
        host, side = test.client, "rx+tx"
    elif options.get("reverse"):
        host, side = test.client, "rx"
    else:
        host, side = test.server, "rx"
    iface = getattr(getattr(facts.get(host), "nic", None), "iface", None)
    if not iface:
        return None
    return Target(host, iface, side, math.ceil(seconds) + GRACE_S)


class Meter:
    """Feeds counter lines in, says the live figure through ``show`` once a second."""

    def __init__(self, where: Target, show: Callable[[str], None]) -> None:
        self.where = where
        self.show = show
        self.first: Reading | None = None
        self.last: Reading | None = None
        self._partial = ""

    def feed(self, chunk: str) -> None:
        lines = (self._partial + chunk).split("\n")
        self._partial = lines.pop()
        for line in lines:
            reading = parse(line)
            if reading is None:
                continue
            if self.last is not None:
                now = rate_bps(self.last, reading, self.where.side)
                if now is None:  # a reset counter: start again from here
                    self.first = reading
                else:
                    assert self.first is not None
                    mean = rate_bps(self.first, reading, self.where.side)
                    self.show(describe(self.where, now, mean if self.first != self.last else None))
            else:
                self.first = reading
            self.last = reading


class Sampler:
    """One test's counter loop on one host, read in a thread until ``stop``."""

    def __init__(self, transport: Any, where: Target, show: Callable[[str], None]) -> None:
        self.transport = transport
        self.where = where
        self.meter = Meter(where, show)
        self._stop = threading.Event()
        self._handle: Any = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Close the channel (the loop ends at its next line); never waits on the host."""
        self._stop.set()
        with self._lock:
            handle, self._handle = self._handle, None
        _close(handle)

    def _run(self) -> None:
        line = script(self.where.iface, self.where.seconds)
        try:
            handle = _open(self.transport, line)
        except Exception as exc:  # the live line is a nicety: never fail a test for it
            log.debug("%s: no live sampler: %s", self.where.host, exc)
            return
        with self._lock:
            if self._stop.is_set():
                _close(handle)
                return
            self._handle = handle
        try:
            for chunk in _chunks(handle, self._stop):
                self.meter.feed(chunk)
        except Exception as exc:  # a dropped connection: the test itself will say so
            log.debug("%s: live sampler ended: %s", self.where.host, exc)
        finally:
            self.stop()


def _open(transport: Any, line: str) -> Any:
    """A channel running ``line`` on the host's SSH connection, or a local process."""
    opener = getattr(transport, "open_channel", None)
    if opener is not None:
        return opener(line)
    return subprocess.Popen(
        ["sh", "-c", line],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _chunks(handle: Any, stop: threading.Event) -> Iterator[str]:
    """Output as it comes, until the loop ends or ``stop``."""
    if isinstance(handle, subprocess.Popen):
        assert handle.stdout is not None
        with handle.stdout:  # closed here, by its reader, once the loop ends or is killed
            for raw in iter(handle.stdout.readline, b""):
                if stop.is_set():
                    return
                yield raw.decode(errors="replace")
        return
    handle.settimeout(0.5)
    while not stop.is_set():
        try:
            data = handle.recv(4096)
        except TimeoutError:
            continue
        if not data:
            return
        yield data.decode(errors="replace")


def _close(handle: Any) -> None:
    if handle is None:
        return
    with contextlib.suppress(Exception):
        if isinstance(handle, subprocess.Popen):
            if handle.poll() is None:  # not yet reaped: its group id is still its own
                os.killpg(handle.pid, signal.SIGKILL)  # sh and its sleep (their own session)
            handle.wait(timeout=2)
        else:
            handle.close()


@contextlib.contextmanager
def watch(
    events: Any, test: Any, repeat: int, inventory: Any, facts: dict[str, Any], tool: Tool
) -> Iterator[None]:
    """Sample the test's receiving NIC while the block runs, when ``events`` shows a live
    line (a terminal, not -q); otherwise, and when the NIC cannot tell, do nothing."""
    where = target(test, facts, tool) if getattr(events, "wants_live", False) else None
    transport = getattr(inventory.get(where.host), "transport", None) if where else None
    if where is None or transport is None:
        yield
        return
    sampler = Sampler(transport, where, lambda text: events.figure(test, repeat, text))
    sampler.start()
    try:
        yield
    finally:
        sampler.stop()
