"""The start line of a test of several flows (netrun.run.flows): every flow of a repeat
waits at one barrier, so all measure over the same seconds; when each passed it gives the
spread of their starts (the sample's ``details.fan.start_spread_s``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from netrun.errors import ToolError

#: Seconds the flows of one repeat wait for each other at the start line.
BARRIER_S = 120.0


class StartLineBroken(ToolError):
    """Another flow failed before the start line: that flow's error is the repeat's."""


def once(line: threading.Barrier, passed: list[float]) -> Callable[[], None]:
    """A flow's start line: the barrier, waited once per measurement (a busy port's
    retry measures again, and must not wait for flows that already started); when it
    passed goes into ``passed`` (the spread of the flows' starts, details.fan)."""
    done = threading.Event()

    def wait() -> None:
        if done.is_set():
            return
        done.set()
        try:
            line.wait()
        except threading.BrokenBarrierError:
            raise StartLineBroken("another flow failed before the start line") from None
        passed.append(time.monotonic())

    return wait


def spread(passed: list[float], count: int) -> float | None:
    """Seconds between the first and the last of ``count`` flows passing the start line
    (None: not every flow's time is known)."""
    return round(max(passed) - min(passed), 6) if passed and len(passed) == count else None
