"""Progress of a run as the user sees it: samples done, elapsed time, ETA, errors once.

The runner reports what happens through ``Events`` (a sample starts, a sample is
recorded) and one-line messages; it never prints. ``Console`` is what the CLI hands it:

- on a terminal, the messages scroll above one live line that is redrawn every second:
  the samples done of all, each running test with its repeat and how far into its
  duration it is, the last figure measured, the elapsed time and the ETA;
- elsewhere (cron, a pipe, a log file) every message starts with a UTC timestamp and the
  same counters, so a log says when each test ran and how long the rest will take.

While a sample measures, its figure is the live sampler's (netrun.run.sampler): this
second's rate at the receiving host's NIC and the mean so far, e.g. "NIC alpha:data0 rx
941 Mbit/s avg 930"; iperf3 3.12 writes its JSON (-J) only when the test ends. Between samples
the line shows the last finished sample's result. An error is printed in full the first
time only.
"""

from __future__ import annotations

import os
import re
import shutil
import threading
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import IO, Any

#: Seconds a sample needs besides its measuring time, until real samples say better.
SETUP_GUESS_S = 2.0
REDRAW_S = 1.0
_FAILED = re.compile(r"(?P<head>.*?: )?FAILED (?P<err>.+)$")


class Events:
    """What the runner tells about samples; the library's default says nothing."""

    #: Whether a live figure is shown (netrun.run.sampler samples only then).
    wants_live = False

    def plan(self, tests: Iterable[Any]) -> None:
        """The tests about to run (each runs ``repeat`` samples)."""

    def start(self, test: Any, repeat: int) -> None:
        """A sample of ``test`` starts measuring."""

    def done(self, test: Any, repeat: int, record: dict[str, Any]) -> None:
        """A sample was recorded (passed or failed)."""

    def figure(self, test: Any, repeat: int, text: str) -> None:
        """A running sample's figure this second (netrun.run.sampler): "NIC alpha:data0 rx ..."."""


def expected_seconds(test: Any) -> float:
    """How long one sample should take: its duration (or ping's count × interval)."""
    options = getattr(test, "options", {}) or {}
    try:
        if options.get("duration"):
            return float(options["duration"]) + float(options.get("omit") or 0) + SETUP_GUESS_S
        if options.get("count"):
            return float(options["count"]) * float(options.get("interval") or 1) + SETUP_GUESS_S
    except (TypeError, ValueError):
        pass
    return SETUP_GUESS_S


def clock(seconds: float) -> str:
    """0:07, 12:30, 1:02:03."""
    seconds = max(0, int(seconds + 0.5))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02}:{secs:02}" if hours else f"{minutes}:{secs:02}"


class Console(Events):
    """Progress lines for a terminal (a live line) or a log (timestamped lines)."""

    def __init__(
        self, stream: IO[str], *, live: bool | None = None, redact: Any = lambda s: s
    ) -> None:
        self.stream = stream
        self.live = stream.isatty() if live is None else live
        self.redact = redact
        self.began = time.monotonic()
        self.total = 0
        self.finished = 0
        self.expected_left = 0.0
        self.expected_done = 0.0
        self.running: dict[tuple[str, int], tuple[Any, float]] = {}
        #: running sample -> its live figure (netrun.run.sampler), only on a terminal
        self.figures: dict[tuple[str, int], str] = {}
        self.wants_live = self.live
        self.last: str | None = None
        self.shown_errors: set[str] = set()
        self._lock = threading.Lock()
        self._drawn = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- Events ---------------------------------------------------------------------------
    def plan(self, tests: Iterable[Any]) -> None:
        with self._lock:
            for test in tests:
                repeats = int(getattr(test, "repeat", 1) or 1)
                self.total += repeats
                self.expected_left += repeats * expected_seconds(test)
        if self.live and self._thread is None:
            self._thread = threading.Thread(target=self._redraw, name="progress", daemon=True)
            self._thread.start()

    def start(self, test: Any, repeat: int) -> None:
        with self._lock:
            self.running[(test.name, repeat)] = (test, time.monotonic())

    def done(self, test: Any, repeat: int, record: dict[str, Any]) -> None:
        with self._lock:
            self.running.pop((test.name, repeat), None)
            self.figures.pop((test.name, repeat), None)
            self.finished += 1
            share = expected_seconds(test)
            self.expected_left = max(0.0, self.expected_left - share)
            self.expected_done += share
            bps = record.get("throughput_bps")
            if record.get("status") == "ok" and isinstance(bps, (int, float)):
                self.last = f"{test.name} {bps / 1e6:.1f} Mbit/s"

    def figure(self, test: Any, repeat: int, text: str) -> None:
        with self._lock:
            if (test.name, repeat) not in self.running:  # a late line of a finished sample
                return
            self.figures[(test.name, repeat)] = text
            if self._drawn:  # at once: the next redraw may be most of a second away
                self._clear()
                self._draw()
                self.stream.flush()

    # -- messages -------------------------------------------------------------------------
    def line(self, text: str) -> None:
        """One message from the runner, printed once, above the live line if there is one."""
        text = self.redact(text)
        with self._lock:
            text = self._once(text)
            if self.live:
                self._clear()
                self.stream.write(text + "\n")
                self._draw()
            else:
                stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
                self.stream.write(f"{stamp} {self._counters()} {text}\n")
            self.stream.flush()

    def close(self) -> None:
        """Stop redrawing and leave the terminal on a clean line (every exit path)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2 * REDRAW_S)
        with self._lock:
            if self.live:
                self._clear()
                self.stream.flush()

    def _once(self, text: str) -> str:
        """A FAILED message whose error was already shown says so instead of repeating it."""
        found = _FAILED.match(text)
        if not found:
            return text
        err = found.group("err")
        if err in self.shown_errors:
            return f"{found.group('head') or ''}FAILED (the error above)"
        self.shown_errors.add(err)
        return text

    # -- counters -------------------------------------------------------------------------
    def eta(self) -> float | None:
        """Seconds left: what is left of the expected time, scaled by how the samples done
        so far compared with what was expected of them."""
        if not self.total:
            return None
        elapsed = time.monotonic() - self.began
        ratio = elapsed / self.expected_done if self.expected_done and self.finished else 1.0
        left = self.expected_left * ratio
        for test, since in self.running.values():  # what the running ones have already done
            left -= min(time.monotonic() - since, expected_seconds(test)) * ratio
        return max(0.0, left)

    def _counters(self) -> str:
        elapsed = clock(time.monotonic() - self.began)
        if not self.total:
            return f"[{elapsed}]"
        eta = self.eta()
        shown = "-" if eta is None else clock(eta)
        return f"[{self.finished}/{self.total} samples, {elapsed} elapsed, ETA {shown}]"

    def status(self) -> str:
        """The live line: counters, what runs now, the last figure."""
        now = time.monotonic()
        running = [
            f"{test.name} repeat {repeat}/{getattr(test, 'repeat', 1)} "
            f"{clock(now - since)}/{clock(expected_seconds(test) - SETUP_GUESS_S)}"
            + (f" {figure}" if (figure := self.figures.get((name, repeat))) else "")
            for (name, repeat), (test, since) in self.running.items()
        ]
        parts = [self._counters(), *running]
        if self.last:
            parts.append(f"last: {self.last}")
        return " | ".join(parts)

    # -- the live line ----------------------------------------------------------------------
    def _redraw(self) -> None:
        while not self._stop.wait(REDRAW_S):
            with self._lock:
                self._clear()
                self._draw()
                self.stream.flush()

    def _clear(self) -> None:
        if self._drawn:
            self.stream.write("\r\x1b[K")
            self._drawn = False

    def _width(self) -> int:
        """The columns of the terminal the line is drawn on (stderr's own, not stdout's)."""
        try:
            columns = os.get_terminal_size(self.stream.fileno()).columns
        except (AttributeError, OSError, ValueError):
            columns = 0
        return columns if columns > 0 else shutil.get_terminal_size((100, 20)).columns

    def _draw(self) -> None:
        if self.total and not self._stop.is_set():
            width = self._width() - 1
            self.stream.write(self.status()[:width])
            self._drawn = True
