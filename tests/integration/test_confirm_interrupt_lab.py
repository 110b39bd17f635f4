"""A night that would page is measured again (netrun.history.confirm); Ctrl-C or SIGKILL
during that second measurement, on the emulated lab.

Ctrl-C: exit 130, the first measurement's figures and verdict kept (the regression stands
unconfirmed and still pages, saying why), and nothing left on the lab by either run.
SIGKILL: the first measurement's results.json is kept; ``netrun cleanup`` removes what the
second left, as it does for any killed run.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from netrun.publish import KILLED
from tests.integration.conftest import LabHandle, lab_iperf3_pids
from tests.integration.helpers import (
    assert_nothing_left,
    entry,
    error_lines,
    lab_settings,
    load_results,
    netrun_process,
    run_dirs,
    run_netrun,
    wait_for,
    write_scenario,
)
from tests.integration.nightly import shaped

pytestmark = [pytest.mark.integration, pytest.mark.faults]

FULL, HALF = "1gbit", "500mbit"  # the lab's rate (conftest's lab), and half


def night(tmp: Path, scenario: Path, lab: LabHandle, out: str) -> list[str | Path]:
    """The nightly line, against the last night (its history in ``tmp``)."""
    return [
        scenario, "-i", lab.inventory, "--tag", "nightly", "--baseline", "last",
        "--db", tmp / "history.sqlite", "-o", out,
    ]  # fmt: skip


def baseline_night(tmp: Path, lab: LabHandle) -> Path:
    """The scenario, and one night of it at the lab's full rate (the baseline)."""
    scenario = write_scenario(tmp, [entry("tcp-fwd", duration=4)], name="confirm-int")
    done = run_netrun(night(tmp, scenario, lab, "first"), cwd=tmp, timeout=120)
    assert done.returncode == 0, done.stderr
    return scenario


def measuring_again(out: Path) -> str | None:
    """The second measurement's run id, once its client iperf3 runs on its host."""
    try:
        run_id = str(load_results(out / "confirm")["run_id"])
    except (OSError, ValueError, KeyError):
        return None
    found = any(f for d in run_dirs(run_id) for f in d.glob("*.client.pid"))
    return run_id if found else None


def starting_again(proc: subprocess.Popen[str]) -> str | None:
    """Read netrun's progress until it says it measures again (the second run then only
    starts: connecting); "" once it did, None if it ended first."""
    assert proc.stderr is not None
    for line in proc.stderr:
        if "] measuring " in line and " again" in line:
            return ""
    return None


def interrupted_night(
    tmp: Path, lab: LabHandle, scenario: Path, sig: signal.Signals, when: str = "measuring"
) -> tuple[int, str, str]:
    """A halved night, ``sig`` sent once its second measurement measures (``when``
    "measuring") or as it starts ("starting"): exit code, stdout and stderr."""
    with (
        shaped(lab.namespaces, HALF, FULL),
        netrun_process(night(tmp, scenario, lab, "out"), cwd=tmp) as proc,
    ):
        if when == "starting":
            assert starting_again(proc) is not None, f"never measured again: {proc.poll()}"
        else:
            second = wait_for(lambda: measuring_again(tmp / "out") or proc.poll(), 60)
            assert isinstance(second, str), f"never measured again: {proc.communicate()}"
            time.sleep(0.5)  # let iperf3 move some data
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=60)
    return proc.returncode, stdout, stderr


def verdict(doc: dict[str, Any]) -> dict[str, Any]:
    (found,) = doc["baseline"]["verdicts"]
    return dict(found)


@pytest.mark.parametrize(
    ("sig", "code", "when"),
    [(signal.SIGINT, 130, "measuring"), (signal.SIGTERM, 143, "measuring"),
     (signal.SIGINT, 130, "starting")],
    ids=["sigint", "sigterm", "sigint-starting"],
)  # fmt: skip
def test_an_interrupt_while_measuring_again_keeps_the_first_and_leaves_nothing(
    lab: LabHandle, tmp_path: Path, sig: signal.Signals, code: int, when: str
) -> None:
    scenario = baseline_night(tmp_path, lab)
    before = lab_settings(lab)
    got, stdout, stderr = interrupted_night(tmp_path, lab, scenario, sig, when)
    assert got == code, stderr
    assert "Traceback" not in stderr and not error_lines(stderr), stderr
    doc = load_results(tmp_path / "out")
    assert doc["status"] == "finished" and doc["tests"][0]["status"] == "ok", doc["status"]
    v = verdict(doc)
    assert v["verdict"] == "regressed" and v["pages"] and v["confirmation"] == "unconfirmed", v
    said = f"interrupted by {sig.name}"
    assert f"could not confirm it ({said})" in v["detail"], (v, stderr[-3000:])
    assert doc["baseline"]["confirmation"]["unavailable"] == said
    if (tmp_path / "out" / "confirm" / "results.json").exists():
        again = load_results(tmp_path / "out" / "confirm")
        assert again["status"] == "interrupted", again["status"]
    assert "regressed ?" in stdout, stdout  # the one screen says it stands unconfirmed
    assert_nothing_left(lab, tmp_path / "out")
    assert_nothing_left(lab, tmp_path / "out" / "confirm")
    assert lab_settings(lab) == before
    listed = run_netrun(["history", "--db", tmp_path / "history.sqlite"], cwd=tmp_path)
    assert doc["run_id"] in listed.stdout, listed.stdout  # stored with its verdict


@pytest.mark.parametrize("then", ["cleanup", "next run"])
def test_sigkill_while_measuring_again_then_cleanup_leaves_nothing(
    lab: LabHandle, tmp_path: Path, then: str
) -> None:
    scenario = baseline_night(tmp_path, lab)
    before = lab_settings(lab)
    code, _, _ = interrupted_night(tmp_path, lab, scenario, signal.SIGKILL)
    assert code == -signal.SIGKILL
    doc = load_results(tmp_path / "out")  # the first measurement, saved before the second
    assert doc["tests"][0]["status"] == "ok" and doc["tests"][0]["throughput_bps"] < 600e6
    v = verdict(doc)  # with the verdict that stands: it would page, unconfirmed
    assert v["verdict"] == "regressed" and v["pages"] and v["confirmation"] == "unconfirmed", v
    assert f"could not confirm it ({KILLED})" in v["detail"], v
    told = run_netrun(["report", tmp_path / "out"], cwd=tmp_path, timeout=60)
    assert told.returncode == 0 and "regressed ?" in told.stdout, told.stdout + told.stderr
    second = str(load_results(tmp_path / "out" / "confirm")["run_id"])
    assert run_dirs(second), "the killed second measurement's folder should still be there"
    left = lab_iperf3_pids(lab)
    if then == "cleanup":
        res = run_netrun(["cleanup", "-i", lab.inventory], cwd=tmp_path, timeout=60)
        assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
        assert f"/netrun-{second}" in res.stdout, res.stdout
        if left:
            assert "killed iperf3 pid" in res.stdout, res.stdout
        assert_nothing_left(lab, tmp_path / "out" / "confirm")
    # the next night sweeps what is left and runs, against the last night the history holds
    done = run_netrun(night(tmp_path, scenario, lab, "next"), cwd=tmp_path, timeout=120)
    assert done.returncode in (0, 3) and "Traceback" not in done.stderr, done.stderr
    assert_nothing_left(lab, tmp_path / "out")
    assert_nothing_left(lab, tmp_path / "out" / "confirm")
    assert_nothing_left(lab, tmp_path / "next")
    assert lab_settings(lab) == before
