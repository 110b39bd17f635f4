"""Many host pairs at once: a 12-host lab, 6 pairs, tests in parallel (issue 5, load).

A test may start as soon as both its hosts are free; two tests never share a host at the
same moment. Every test must be accounted for in results.json, and an interrupt must stop
every running test, tear each one down and leave nothing on any of the 12 hosts.
"""

from __future__ import annotations

import signal
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from netrun.lab.system import cmdline
from tests.integration.conftest import LabHandle, lab_iperf3_pids
from tests.integration.helpers import (
    FaultRun,
    check_fault,
    entry,
    lab_settings,
    load_results,
    netrun_process,
    run_under_fault,
    wait_for,
    write_scenario,
)

pytestmark = [pytest.mark.integration, pytest.mark.faults]


def pairs(lab: LabHandle) -> list[tuple[str, str]]:
    """(server, client) of each disjoint pair: alpha-bravo, charlie-delta, ..."""
    hosts = list(lab.hosts)
    return list(zip(hosts[0::2], hosts[1::2], strict=True))


def span(sample: dict[str, Any]) -> tuple[float, float]:
    """When a sample's measurement ran, as POSIX seconds."""
    return (
        datetime.fromisoformat(sample["started"]).timestamp(),
        datetime.fromisoformat(sample["finished"]).timestamp(),
    )


def overlaps(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def test_six_pairs_in_parallel_every_test_accounted_for(big_lab: LabHandle, tmp_path: Path) -> None:
    couples = pairs(big_lab)
    assert len(couples) == 6
    tests = [entry(f"tcp-{s}-{c}", server=s, client=c, duration=2) for s, c in couples]
    tests += [
        entry(f"udp-{s}-{c}", server=s, client=c, protocol="udp", bitrate="50M", duration=2)
        for s, c in couples
    ]
    scen = write_scenario(tmp_path, tests, name="six-pairs")
    scen.write_text(scen.read_text() + "parallel: 6\n")
    before = lab_settings(big_lab)
    run = run_under_fault(
        [scen, "-i", big_lab.inventory, "-q", "-o", "out", "--no-history"],
        cwd=tmp_path,
        outdir=tmp_path / "out",
    )
    # Sequentially: 12 tests of 2 s plus set-up, about 30 s. In two waves of six: about 8 s.
    doc = check_fault(
        big_lab,
        run,
        fault="12 hosts, 6 pairs, 12 tests, 6 at a time",
        before=before,
        max_seconds=25,
        statuses={t["name"]: "ok" for t in tests},
        host=None,
        exit_code=0,
    )
    samples = doc["tests"]
    assert sorted(s["name"] for s in samples) == sorted(t["name"] for t in tests)
    for sample in samples:
        assert sample["throughput_bps"] > 10e6, sample
    # Never two tests on one host at once ...
    for i, a in enumerate(samples):
        for b in samples[i + 1 :]:
            if {a["server"], a["client"]} & {b["server"], b["client"]}:
                assert not overlaps(span(a), span(b)), (a["name"], b["name"])
    # ... but disjoint pairs really did run together.
    tcp = [s for s in samples if s["name"].startswith("tcp-")]
    together = sum(overlaps(span(a), span(b)) for i, a in enumerate(tcp) for b in tcp[i + 1 :])
    assert together >= 10, f"only {together} of 15 disjoint TCP pairs overlapped"


def test_parallel_flag_overrides_the_scenario(big_lab: LabHandle, tmp_path: Path) -> None:
    """-p 1 runs a parallel scenario one test at a time (for a quiet baseline)."""
    couples = pairs(big_lab)[:2]
    tests = [entry(f"t-{s}", server=s, client=c) for s, c in couples]
    scen = write_scenario(tmp_path, tests, name="serial")
    scen.write_text(scen.read_text() + "parallel: true\n")
    before = lab_settings(big_lab)
    run = run_under_fault(
        [scen, "-i", big_lab.inventory, "-q", "-o", "out", "--no-history", "-p", "1"],
        cwd=tmp_path,
        outdir=tmp_path / "out",
    )
    doc = check_fault(
        big_lab,
        run,
        fault="--parallel 1 over 'parallel: true'",
        before=before,
        max_seconds=20,
        statuses={t["name"]: "ok" for t in tests},
        host=None,
        exit_code=0,
    )
    a, b = doc["tests"]
    assert not overlaps(span(a), span(b))


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupt_stops_every_running_pair(
    big_lab: LabHandle, tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    couples = pairs(big_lab)[:4]
    tests = [entry(f"long-{s}", server=s, client=c, duration=30) for s, c in couples]
    scen = write_scenario(tmp_path, tests, name="stopped")
    scen.write_text(scen.read_text() + "parallel: 4\n")
    before = lab_settings(big_lab)
    out = tmp_path / "out"
    with netrun_process(
        [scen, "-i", big_lab.inventory, "-o", "out", "--no-history"], cwd=tmp_path
    ) as proc:
        assert proc.stderr is not None
        # Wait until all four clients run, then interrupt.
        running = wait_for(
            lambda: (out / "results.json").exists() and len(clients(big_lab)) >= 4,
            timeout=20,
        )
        assert running, "the four clients never ran together"
        sent = time.monotonic()
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=60)
        elapsed = time.monotonic() - sent
    result = FaultRun(
        proc=_completed(proc.args, proc.returncode, stdout, stderr), elapsed=elapsed, outdir=out
    )
    doc = check_fault(
        big_lab,
        result,
        fault=f"{sig.name} during 4 parallel tests",
        before=before,
        max_seconds=15,
        statuses={t["name"]: "failed" for t in tests},
        host=None,
        exit_code=code,
    )
    assert doc["status"] == "interrupted"
    assert {s["error"] for s in doc["tests"]} == {"interrupted"}
    assert load_results(out)["finished"]


def clients(lab: LabHandle) -> list[int]:
    """iperf3 clients running in the lab's namespaces."""
    return [pid for pid in lab_iperf3_pids(lab) if "-c" in cmdline(pid)]


def _completed(args: Any, code: int, stdout: str, stderr: str) -> Any:
    import subprocess

    return subprocess.CompletedProcess(args, code, stdout, stderr)
