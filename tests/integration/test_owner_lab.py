"""Two runs on one lab host: one's `netrun cleanup` leaves the other, live, run alone.

The run journal that names live runs is per controller and history database, so a cleanup
started with another database (another engineer, another test) used to sweep every
``netrun-*`` folder on the host: it ran the live run's undo records and killed its iperf3.
Each run now marks its folders with its process (netrun.cleanup.owner), and a sweep on the same
kernel spares a live owner, while a dead run's folder is still swept.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from netrun.cleanup.owner import FILE
from netrun.hosts.proc import boot_id
from tests.integration.conftest import LabHandle, lab_iperf3_pids
from tests.integration.helpers import (
    assert_nothing_left,
    entry,
    load_results,
    netrun_process,
    run_dirs,
    run_netrun,
    wait_for,
    write_scenario,
)

pytestmark = [pytest.mark.integration, pytest.mark.faults]


def measuring(out: Path) -> str | None:
    """The run id once the run's client iperf3 has written its pid."""
    try:
        run_id = str(load_results(out)["run_id"])
    except (OSError, ValueError, KeyError):
        return None
    pids = [p for d in run_dirs(run_id) for p in d.glob("*.client.pid")]
    return run_id if pids else None


def files(folders: list[Path]) -> set[Path]:
    return {p for d in folders for p in d.rglob("*")}


def test_cleanup_spares_a_live_run_and_sweeps_a_dead_one(
    lab: LabHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-a"))  # run A's journal
    scen = write_scenario(tmp_path, [entry("long", duration=6)])
    out = tmp_path / "out"
    # a dead run's folder in the same host tmp: an undo record, owned by a gone process
    host_tmp = lab.state_dir / "hosts" / "alpha" / "tmp"
    dead = host_tmp / "netrun-0123dead"
    (dead / "undo").mkdir(parents=True)
    undone = tmp_path / "dead-record-ran"
    (dead / "undo" / "00000000000000000001-000000.sh").write_text(f"# test\ntouch {undone}\n")
    (dead / FILE).write_text(f"{boot_id()} 4194304 1\n")  # above pid_max: never alive
    with netrun_process([scen, "-i", lab.inventory, "-o", out, "-q"], cwd=tmp_path) as proc:
        run_id = wait_for(lambda: measuring(out), timeout=30)
        assert run_id, "run A never started measuring"
        folders = run_dirs(run_id)
        assert {d.parent.parent.name for d in folders} >= {"alpha", "bravo"}, folders
        assert all((d / FILE).exists() for d in folders)
        before, pids = files(folders), lab_iperf3_pids(lab)
        assert pids
        # run B's cleanup: another history database, so another journal that knows nothing
        monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-b"))
        res = run_netrun(["cleanup", "-i", lab.inventory], cwd=tmp_path, timeout=60)
        assert res.returncode == 0, res.stderr
        assert f"skipped run {run_id}: it is still running" in res.stdout, res.stdout
        assert f"removed {dead}" in res.stdout, res.stdout
        assert undone.exists() and not dead.exists()  # the dead run's record ran
        assert files(run_dirs(run_id)) == before  # A's pid files and records untouched
        assert set(pids) <= set(lab_iperf3_pids(lab))  # and its iperf3 still runs
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    doc = load_results(out)
    assert [t["status"] for t in doc["tests"]] == ["ok"], doc["tests"]
    assert_nothing_left(lab, out)
