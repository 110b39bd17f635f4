"""The progress console: timestamps off a terminal, a live line on one, errors once, ETA."""

from __future__ import annotations

import io
import re
import time
from types import SimpleNamespace
from typing import Any

import pytest

from netrun.job import failure_lines
from netrun.run import progress
from netrun.run.progress import Console, clock


def spec(name: str, repeat: int = 1, duration: int = 10) -> Any:
    return SimpleNamespace(name=name, repeat=repeat, options={"duration": duration, "omit": 0})


STAMPED = re.compile(
    r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \[(\d+)/(\d+) samples, (\S+) elapsed, ETA (\S+)\] "
)


def test_off_a_terminal_every_line_is_timestamped_and_counts_samples() -> None:
    out = io.StringIO()
    con = Console(out, live=False)
    con.plan([spec("a", repeat=3), spec("b")])
    con.line("a: running 10s")
    con.start(spec("a", 3), 1)
    con.done(spec("a", 3), 1, {"status": "ok", "throughput_bps": 941e6})
    con.line("a repeat 1/3: throughput_bps 941.0 Mbit/s")
    con.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and "\r" not in out.getvalue() and "\x1b" not in out.getvalue()
    first, second = (STAMPED.match(line) for line in lines)
    assert first and second, lines
    assert first.group(1, 2) == ("0", "4") and second.group(1, 2) == ("1", "4")
    assert lines[1].endswith("a repeat 1/3: throughput_bps 941.0 Mbit/s")


def test_an_error_is_printed_in_full_once() -> None:
    out = io.StringIO()
    con = Console(out, live=False)
    err = "charlie: iperf3 not found ('/x', needed by baremetal client); install it"
    con.line(f"FAILED {err}")
    con.line(f"bad (baremetal, charlie -> alpha): FAILED {err}")
    con.line("other: FAILED another error")
    text = out.getvalue()
    assert text.count(err) == 1, text
    assert "bad (baremetal, charlie -> alpha): FAILED (the error above)" in text
    assert "other: FAILED another error" in text


def test_a_host_error_and_its_tests_are_one_failure_line() -> None:
    err = "charlie: iperf3 not found"
    doc = {
        "errors": [err],
        "tests": [
            {"name": "bad", "repeat": 1, "status": "failed", "error": err},
            {"name": "bad", "repeat": 2, "status": "failed", "error": err},
            {"name": "odd", "repeat": 1, "status": "failed", "error": "timeout"},
        ],
    }
    assert failure_lines(doc) == [
        "charlie: iperf3 not found (failed: test bad (repeat 1, 2))",
        "test odd failed: timeout",
    ]


def test_eta_scales_the_expected_time_by_what_samples_took(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [1000.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: now[0])
    con = Console(io.StringIO(), live=False)
    tests = [spec("a", repeat=2, duration=10), spec("b", duration=10)]
    con.plan(tests)  # 3 samples of 10 s + 2 s set-up each: 36 s expected
    assert con.eta() == pytest.approx(36.0)
    con.start(tests[0], 1)
    now[0] += 24.0  # the first sample took twice the 12 s expected
    con.done(tests[0], 1, {"status": "ok", "throughput_bps": 1e9})
    assert con.eta() == pytest.approx(48.0)
    assert "1/3 samples, 0:24 elapsed, ETA 0:48" in con.status()


def test_the_live_line_is_redrawn_and_cleared_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(progress, "REDRAW_S", 0.02)
    out = io.StringIO()
    con = Console(out, live=True)
    test = spec("tp", repeat=2)
    con.plan([test])
    con.start(test, 1)
    con.done(test, 1, {"status": "ok", "throughput_bps": 941.5e6})
    con.start(test, 2)
    time.sleep(0.1)
    con.line("tp repeat 1/2: throughput_bps 941.5 Mbit/s")
    con.close()
    text = out.getvalue()
    assert "\r\x1b[K" in text
    assert "[1/2 samples, " in text and "tp repeat 2/2 0:00/0:10" in text
    assert "last: tp 941.5 Mbit/s" in text
    assert text.endswith("\r\x1b[K"), "the terminal is left on a clean line"
    assert "tp repeat 1/2: throughput_bps 941.5 Mbit/s\n" in text


@pytest.mark.parametrize(("seconds", "shown"), [(7, "0:07"), (750, "12:30"), (3723, "1:02:03")])
def test_clock(seconds: float, shown: str) -> None:
    assert clock(seconds) == shown
