"""results.json writes: at once for a small run, coalesced past AT_ONCE samples."""

from __future__ import annotations

import threading
import time
from typing import Any

from netrun.results import saver
from netrun.results.saver import Saver


class Counting:
    def __init__(self) -> None:
        self.writes: list[int] = []

    def save(self, doc: dict[str, Any]) -> None:
        self.writes.append(len(doc["tests"]))


def test_a_small_run_writes_every_change_at_once() -> None:
    out, doc = Counting(), {"tests": []}
    s = Saver(out, doc, threading.RLock())
    for i in range(3):
        doc["tests"].append(i)
        s.changed()
    assert out.writes == [1, 2, 3]


def test_a_large_run_coalesces_and_flush_writes_what_is_pending() -> None:
    out, doc = Counting(), {"tests": list(range(saver.AT_ONCE))}
    s = Saver(out, doc, threading.RLock())
    for _ in range(50):
        doc["tests"].append(0)
        s.changed()
    assert out.writes == []  # not yet: within DELAY
    deadline = time.monotonic() + 5
    while not out.writes and time.monotonic() < deadline:
        time.sleep(0.01)
    assert out.writes == [saver.AT_ONCE + 50]  # one write for the fifty changes
    doc["tests"].append(0)
    s.changed()
    s.flush()
    assert out.writes == [saver.AT_ONCE + 50, saver.AT_ONCE + 51]
    s.flush()  # nothing pending: no write
    assert len(out.writes) == 2
