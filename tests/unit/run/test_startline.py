"""The start line of a test of several flows: each flow waits at it once per measurement,
and the spread of their starts is known only when every flow's is."""

from __future__ import annotations

import threading

from netrun.run.startline import once, spread


def test_the_start_line_is_waited_once_per_measurement() -> None:
    line = threading.Barrier(2, timeout=5)
    passed: list[float] = []
    gates = [once(line, passed), once(line, passed)]
    threads = [threading.Thread(target=g) for g in gates]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    gates[0]()  # a busy port's retry: it must not wait for flows that already started
    assert len(passed) == 2
    assert spread(passed, 2) is not None and spread(passed, 2) < 5
    assert spread(passed, 3) is None  # a flow's time unknown: no spread
