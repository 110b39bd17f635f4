#!/usr/bin/env python3
"""Run the fault-injection suite and the fuzzers; write their figures into docs/reliability.md.

Runs `pytest -m faults` (every fault test drives the netrun CLI against the emulated lab and
logs its outcome through tests/integration/helpers.py:check_fault) and `pytest -m fuzz`
(hypothesis, 10,000 examples per target), then replaces the part of docs/reliability.md
between the "figures" markers with: faults injected, survived, leftovers found, fuzz
examples run, wall times, and one row per fault. Run as root: `make reliability`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "reliability.md"
START, END = "<!-- figures:start -->", "<!-- figures:end -->"


def pytest_run(marker: str, work: Path, extra: list[str], env: dict[str, str]) -> dict[str, Any]:
    """Run pytest on one marker; its counts from JUnit XML, its wall time and its output."""
    junit = work / f"{marker}.xml"
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-m", marker, f"--junitxml={junit}", *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    wall = time.monotonic() - started
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    failed: list[str] = []
    if junit.exists():
        for suite in ET.parse(junit).getroot().iter("testsuite"):
            for key in counts:
                counts[key] += int(suite.get(key, 0))
            for case in suite.iter("testcase"):
                if case.find("failure") is not None or case.find("error") is not None:
                    failed.append(f"{case.get('classname')}::{case.get('name')}")
    return {"wall_s": wall, "counts": counts, "failed": failed, "output": proc.stdout}


def render(faults: dict[str, Any], fuzz: dict[str, Any] | None, log: list[dict[str, Any]]) -> str:
    c = faults["counts"]
    ran = c["tests"] - c["skipped"]
    survived = ran - c["failures"] - c["errors"]
    faults_log = [r for r in log if "fault" in r]
    fuzz_log = [r for r in log if "fuzz" in r]
    left = sum(int(r["leftovers"]) for r in faults_log)
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        START,
        f"Last run: {when} on {platform.node()} ({platform.machine()}, "
        f"{os.cpu_count()} cores), `python3 bench/reliability.py`.",
        "",
        "| figure | value |",
        "|---|---|",
        f"| fault tests run (`pytest -m faults`) | {ran} |",
        f"| faults injected and checked for all four promises (`check_fault`) "
        f"| {len(faults_log)} |",
        f"| survived (test passed) | {survived} of {ran} |",
        f"| leftovers found on lab hosts | {left} |",
        f"| wall time of the fault suite | {faults['wall_s'] / 60:.1f} min |",
    ]
    if fuzz is not None:
        fc = fuzz["counts"]
        lines += [
            "| fuzz inputs tried (`pytest -m fuzz`) | "
            + ", ".join(f"{r['fuzz']} {int(r['examples']):,}" for r in fuzz_log)
            + f"; {sum(int(r['examples']) for r in fuzz_log):,} in all |",
            f"| fuzz targets passed | {fc['tests'] - fc['failures'] - fc['errors']} "
            f"of {fc['tests']} |",
            f"| wall time of the fuzzers | {fuzz['wall_s'] / 60:.1f} min |",
        ]
    if faults["failed"] or (fuzz and fuzz["failed"]):
        lines += ["", "Failed:", ""]
        lines += [f"- `{name}`" for name in faults["failed"] + (fuzz["failed"] if fuzz else [])]
    lines += [
        "",
        "Each fault as injected in the last run (wall time of the netrun command under it):",
        "",
        "| fault | test | seconds | leftovers |",
        "|---|---|---|---|",
    ]
    for rec in sorted(faults_log, key=lambda r: r["test"]):
        test = rec["test"].replace("tests/integration/", "")
        lines.append(f"| {rec['fault']} | `{test}` | {rec['elapsed_s']:.1f} | {rec['leftovers']} |")
    lines.append(END)
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-fuzz", action="store_true", help="only the fault suite")
    ap.add_argument("--output", type=Path, default=DOC)
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("bench/reliability.py: the emulated lab needs root; run it as root")
    work = Path(tempfile.mkdtemp(prefix="nrrel-"))
    log_path = work / "faults.jsonl"
    env = dict(os.environ, NETRUN_FAULT_LOG=str(log_path))
    faults = pytest_run("faults", work, [], env)
    fuzz = None
    if not args.no_fuzz:
        fuzz = pytest_run("fuzz", work, [], env)
    log = []
    if log_path.exists():
        log = [json.loads(line) for line in log_path.read_text().splitlines() if line.strip()]
    block = render(faults, fuzz, log)
    text = args.output.read_text() if args.output.exists() else f"{START}\n{END}\n"
    if START not in text or END not in text:
        text += f"\n{START}\n{END}\n"
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    args.output.write_text(head + block + tail)
    print(block)
    bad = faults["failed"] or (fuzz is not None and fuzz["failed"])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
