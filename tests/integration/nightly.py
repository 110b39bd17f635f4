"""The documented crontab line, run as cron runs it, night after night, on the emulated lab.

docs/user-guide/nightly.md's line: `-qq --tag nightly --baseline last --prometheus ...
--junit ...`, appended to a log, with cron's environment: `env -i`, a minimal PATH, no
terminal, a working folder. Used by tests/integration/test_verdicts_lab.py (a few nights)
and bench/false_alarms.py (the false-alarm rate written into nightly.md). Shaping a
lab link and a CPU hog are here too, each undone by the code that made it.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from netrun.lab import network

#: cron's PATH on Debian; netrun itself is called by its full path, as a crontab line would.
CRON_PATH = "/usr/bin:/bin"
#: The nightly scenario: TCP both ways, UDP at a rate the lab's link carries, and ping,
#: 3 repeats each (issue 41's lab).
NIGHTLY_TESTS = [
    {"name": "tcp-fwd", "server": "alpha", "client": "bravo"},
    {"name": "tcp-rev", "server": "alpha", "client": "bravo", "reverse": True},
    {"name": "udp-300m", "server": "alpha", "client": "charlie", "protocol": "udp",
     "bitrate": "300M"},
    {"name": "ping", "server": "alpha", "client": "charlie", "tool": "ping", "count": 10,
     "interval": 0.2},
]  # fmt: skip


def write_nightly_scenario(folder: Path, duration: int = 2, repeat: int = 3) -> Path:
    """The nightly scenario (name "nightly") in ``folder``."""
    path = folder / "nightly.yaml"
    tests = [{"mode": "baremetal", **t} for t in NIGHTLY_TESTS]
    data = {"name": "nightly", "defaults": {"duration": duration, "repeat": repeat}}
    path.write_text(yaml.safe_dump({**data, "tests": tests}, sort_keys=False))
    return path


@dataclass(frozen=True)
class Night:
    """One night's run: its exit code, the verdicts it stored, and its wall time."""

    code: int
    verdicts: list[dict[str, Any]]
    seconds: float
    tail: str


def cron_night(folder: Path, scenario: Path, inventory: Path, timeout: float = 600) -> Night:
    """One run of the documented crontab line in ``folder`` (its history, log, exports)."""
    netrun = Path(sys.executable).with_name("netrun")
    line = [
        str(netrun), str(scenario), "-i", str(inventory), "-qq", "--tag", "nightly",
        "--baseline", "last", "--db", str(folder / "history.sqlite"),
        "-o", str(folder / "results" / f"night-{time.time_ns()}"),
        "--prometheus", str(folder / "netrun.prom"), "--junit", str(folder / "junit.xml"),
    ]  # fmt: skip
    started = time.monotonic()
    log = folder / "nightly.log"
    with log.open("a") as out:
        proc = subprocess.run(
            ["env", "-i", f"PATH={CRON_PATH}", f"HOME={folder}", *line],
            cwd=folder,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
        )
    seconds = time.monotonic() - started
    verdicts: list[dict[str, Any]] = []
    runs = sorted((folder / "results").glob("night-*"))
    if runs and (runs[-1] / "results.json").exists():
        doc = json.loads((runs[-1] / "results.json").read_text())
        verdicts = list((doc.get("baseline") or {}).get("verdicts") or [])
    tail = "\n".join(log.read_text().splitlines()[-15:])
    return Night(proc.returncode, verdicts, seconds, tail)


@contextlib.contextmanager
def shaped(namespaces: list[str], rate: str, back: str) -> Iterator[None]:
    """The lab hosts' data links shaped to ``rate`` (tbf, as the lab shapes them), then
    put back at ``back`` on every exit path."""

    def tc(ns: str, to: str) -> None:
        subprocess.run(
            ["ip", "netns", "exec", ns, "tc", "qdisc", "replace", "dev", "data0", "root",
             *network.tbf_args(to)],
            check=True, capture_output=True, timeout=30,
        )  # fmt: skip

    try:
        for ns in namespaces:
            tc(ns, rate)
        yield
    finally:
        for ns in namespaces:
            tc(ns, back)


@contextlib.contextmanager
def cpu_hog(seconds: float = 300) -> Iterator[subprocess.Popen[bytes]]:
    """A bounded busy loop on this machine (one core), ended by its pid when done."""
    hog = subprocess.Popen(
        [sys.executable, "-c",
         f"import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end: pass"],
    )  # fmt: skip
    try:
        yield hog
    finally:
        hog.kill()
        hog.wait(timeout=10)
