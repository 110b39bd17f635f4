"""A SIGKILLed run is swept by the next run on the same hosts (the run journal).

cron's timeout or the OOM killer can SIGKILL a nightly run: it never reaches its own
sweep, and its iperf3 servers keep their ports. The next run must find that run in the
journal, see its process is gone, and remove what it left before its own first test.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from tests.integration.conftest import LabHandle
from tests.integration.helpers import (
    check_fault,
    entry,
    lab_settings,
    load_results,
    netrun_process,
    run_dirs,
    run_under_fault,
    wait_for,
    write_scenario,
)

pytestmark = [pytest.mark.integration, pytest.mark.faults]


def test_next_run_sweeps_what_a_sigkilled_run_left(
    lab: LabHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = tmp_path / "xdg" / "netrun" / "runs"
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    before = lab_settings(lab)
    long = write_scenario(tmp_path, [entry("long", duration=30)], name="killed", file="long.yaml")
    first = tmp_path / "first"
    with netrun_process(
        [long, "-i", lab.inventory, "-o", first, "--no-history"], cwd=tmp_path
    ) as p:
        started = wait_for(
            lambda: (
                (first / "results.json").exists()
                and any(
                    path.name.endswith(".pid")
                    for d in run_dirs(load_results(first)["run_id"])
                    for path in d.iterdir()
                )
            ),
            timeout=20,
        )
        assert started, "the first run never started its iperf3"
        wait_for(lambda: False, 0.5)  # let the client start too
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=10)
    killed = load_results(first)["run_id"]
    assert run_dirs(killed), "the SIGKILLed run should have left its folder"
    assert (journal / f"{killed}.json").exists()

    short = write_scenario(tmp_path, [entry("short")], name="next", file="short.yaml")
    run = run_under_fault(
        [short, "-i", lab.inventory, "-o", "second", "--no-history"],
        cwd=tmp_path,
        outdir=tmp_path / "second",
    )
    doc = check_fault(
        lab,
        run,
        fault="SIGKILLed run, swept by the next run",
        before=before,
        max_seconds=20,
        statuses={"short": "ok"},
        host=None,
        exit_code=0,
    )
    assert run_dirs(killed) == []
    assert any(killed in line for line in doc.get("swept", [])), doc.get("swept")
    assert "swept what an earlier, killed run left" in run.proc.stderr
    assert list(journal.glob("*.json")) == []


def test_a_live_run_is_not_swept(
    lab: LabHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry whose process still runs (here: this pytest) belongs to someone else."""
    journal = tmp_path / "xdg" / "netrun" / "runs"
    journal.mkdir(parents=True)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    from netrun.cleanup.journal import host_key
    from netrun.hosts.proc import process_start
    from netrun.inventory.loader import load_inventory

    folder = Path("/tmp/netrun-0123abcd")
    folder.mkdir()
    try:
        key = host_key(load_inventory(lab.inventory).get("alpha"))
        entry_ = {
            "run_id": "0123abcd",
            "pid": os.getpid(),
            "started": process_start(os.getpid()),
            "hosts": {key: {"name": "alpha", "remote_tmp": "/tmp", "docker": "docker"}},
        }
        (journal / "0123abcd.json").write_text(json.dumps(entry_))
        short = write_scenario(tmp_path, [entry("short")], name="next")
        run = run_under_fault(
            [short, "-i", lab.inventory, "-o", "out", "--no-history", "-q"],
            cwd=tmp_path,
            outdir=tmp_path / "out",
        )
        assert run.proc.returncode == 0, run.proc.stderr
        assert folder.exists(), "a live run's folder was swept"
        assert "swept" not in load_results(tmp_path / "out")
    finally:
        folder.rmdir()
