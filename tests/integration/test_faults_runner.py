"""The fault suite, runner faults: signals in the middle of a run, SIGKILL, a full disk.

Each test asserts the suite's four promises: a bounded wall time, each test's status in
results.json, one clear error line, and nothing left on any lab host (iperf3, containers,
run folders, link settings). Signals are sent from Python to the netrun process itself
(a shell's background job would ignore SIGINT).

Every run gets ``--db`` in the test's tmp folder: the default history and its run lock are
shared with everyone else on this machine.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LabHandle, lab_iperf3_pids
from tests.integration.helpers import (
    FaultRun,
    check_fault,
    entry,
    error_lines,
    lab_containers,
    lab_settings,
    leftovers,
    load_results,
    log_fault,
    netrun_process,
    only_test,
    plain_lines,
    run_dirs,
    run_netrun,
    run_under_fault,
    samples_of,
    wait_for,
    write_inventory,
    write_scenario,
)

pytestmark = [pytest.mark.integration, pytest.mark.faults]

SIGNALS = pytest.mark.parametrize(
    ("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["sigint", "sigterm"]
)
#: From the signal to netrun's exit: teardown and the final sweep, nothing more.
STOP_SECONDS = 15.0


def args(tmp: Path, scenario: Path, inventory: Path, out: Path | str = "out") -> list[Any]:
    return [scenario, "-i", inventory, "-o", out, "--db", tmp / "history.sqlite"]


def signalled(proc: subprocess.Popen[str], sig: int, outdir: Path) -> FaultRun:
    """Send ``sig`` to netrun (by pid) and wait for it; timed from the signal to the exit."""
    sent = time.monotonic()
    os.kill(proc.pid, sig)
    stdout, stderr = proc.communicate(timeout=60)
    done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    return FaultRun(done, time.monotonic() - sent, outdir)


def client_measuring(out: Path, after: int) -> bool:
    """Whether results.json holds ``after`` samples and the next test's client iperf3 runs."""
    try:
        doc = load_results(out)
    except (OSError, ValueError):
        return False
    dirs = run_dirs(doc["run_id"])
    return (
        len(doc["tests"]) == after
        and bool(dirs)
        and any(f for d in dirs for f in d.glob("*.client.pid"))
    )


def assert_interrupted(run: FaultRun, doc: dict[str, Any], name: str) -> None:
    """The run says it was interrupted: in results.json and in one line per failure."""
    assert doc["status"] == "interrupted", doc["status"]
    assert doc["finished"] is not None
    rec = only_test(doc, name)
    assert rec["error"] == "interrupted", rec["error"]
    lines = error_lines(run.proc.stderr)
    assert f"netrun: error: test {name} failed: interrupted" in lines, run.proc.stderr
    assert "netrun: interrupted; partial results saved" in plain_lines(run.proc.stderr)


# -- SIGINT / SIGTERM -------------------------------------------------------------------------
@SIGNALS
def test_signal_during_measurement(
    lab: LabHandle, tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    """Test two of three is measuring: test one is kept, two is marked, three never runs."""
    scen = write_scenario(
        tmp_path, [entry("first"), entry("long", duration=10), entry("third", client="charlie")]
    )
    before = lab_settings(lab)
    with netrun_process([*args(tmp_path, scen, lab.inventory), "-q"], cwd=tmp_path) as proc:
        measuring = wait_for(
            lambda: client_measuring(tmp_path / "out", 1) or proc.poll() is not None, 30
        )
        assert measuring
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.5)  # let iperf3 move some data
        run = signalled(proc, sig, tmp_path / "out")
    doc = check_fault(
        lab,
        run,
        fault=f"{sig.name} during a measurement",
        before=before,
        max_seconds=STOP_SECONDS,
        statuses={"first": "ok", "long": "failed"},
        host=None,
        exit_code=code,
    )
    assert_interrupted(run, doc, "long")
    assert samples_of(doc, "third") == []  # never started: no sample, but named
    assert doc["not_run"] == ["third"]
    told = run_netrun(["report", tmp_path / "out"], cwd=tmp_path, timeout=60)
    assert "INCOMPLETE RUN: interrupted" in told.stdout and "not measured: third" in told.stdout
    assert f"run interrupted by {sig.name}" in doc["errors"]
    assert only_test(doc, "first")["throughput_bps"] > 0


def slow_docker(tmp: Path, marker: Path, seconds: float = 3.0) -> Path:
    """A docker command that is slow to ``docker run`` and says when it got there.

    Set as netrun_docker on one host, it holds that host's container start for a few
    seconds (as a slow image pull or a busy daemon would), so a signal lands in setup.
    """
    path = tmp / "slow-docker"
    path.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = run ]; then touch {marker}; sleep {seconds:g}; fi\n'
        'exec docker "$@"\n'
    )
    path.chmod(0o755)
    return path


@pytest.mark.docker
@SIGNALS
def test_signal_during_docker_setup(
    docker_lab: LabHandle, tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    """A docker test interrupted while its containers start: both go, the bare test stays."""
    marker = tmp_path / "docker-run-started"
    wrapper = slow_docker(tmp_path, marker)
    slow = {"alpha": {"netrun_docker": str(wrapper)}}
    inv = write_inventory(tmp_path, docker_lab, host_vars=slow)
    scen = write_scenario(tmp_path, [entry("bare"), entry("dock", mode="docker")])
    before = lab_settings(docker_lab)
    with netrun_process([*args(tmp_path, scen, inv), "-q"], cwd=tmp_path) as proc:
        assert wait_for(lambda: marker.exists() or proc.poll() is not None, 60)
        assert proc.poll() is None, proc.communicate()
        run = signalled(proc, sig, tmp_path / "out")
    doc = check_fault(
        docker_lab,
        run,
        fault=f"{sig.name} during docker setup",
        before=before,
        max_seconds=STOP_SECONDS,
        statuses={"bare": "ok", "dock": "failed"},
        host=None,
        exit_code=code,
    )
    assert_interrupted(run, doc, "dock")
    assert only_test(doc, "dock")["raw"] is None  # it never measured


# -- SIGKILL ----------------------------------------------------------------------------------
def cleanup_run(lab: LabHandle, tmp: Path, run_id: str) -> FaultRun:
    """``netrun cleanup`` of one run, timed; judged against the killed run's folder ``out``."""
    # --run-id: the hosts share this machine's /tmp, so only this run's leftovers are ours.
    argv = ["cleanup", "-i", lab.inventory, "--run-id", run_id]
    run = run_under_fault(argv, cwd=tmp, outdir=tmp / "out", timeout=120)
    assert not error_lines(run.proc.stderr), run.proc.stderr
    return run


def test_sigkill_then_cleanup(lab: LabHandle, tmp_path: Path) -> None:
    """SIGKILL leaves the servers and the run folder; ``netrun cleanup`` removes them.

    (The next run on the same hosts would sweep them too, from the run journal: that is
    test_startup_sweep.py. Another controller's runs, or live ones, are never swept.)
    """
    scen = write_scenario(tmp_path, [entry("killed", duration=30)])
    before = lab_settings(lab)
    with netrun_process([*args(tmp_path, scen, lab.inventory), "-q"], cwd=tmp_path) as proc:
        measuring = wait_for(
            lambda: client_measuring(tmp_path / "out", 0) or proc.poll() is not None, 30
        )
        assert measuring
        assert proc.poll() is None, proc.communicate()
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=15)
    killed = load_results(tmp_path / "out")
    run_id = killed["run_id"]
    assert killed["status"] == "running"  # what a killed run's results.json says
    told = run_netrun(["report", tmp_path / "out"], cwd=tmp_path, timeout=60)
    assert told.returncode == 0, told.stderr
    assert told.stdout.splitlines()[1].startswith("INCOMPLETE RUN: it never saved its end"), (
        told.stdout
    )
    assert "not measured: killed" in told.stdout.splitlines()[1], told.stdout  # never recorded
    assert run_dirs(run_id), "the killed run's folder should still be there"
    left = lab_iperf3_pids(lab)
    assert len(left) == 2, f"the killed run's server and client should still run: {left}"

    run = cleanup_run(lab, tmp_path, run_id)
    check_fault(
        lab,
        run,
        fault="SIGKILL, then netrun cleanup",
        before=before,
        max_seconds=30,
        statuses={},
        host=None,
        exit_code=0,
    )
    assert f"/netrun-{run_id}" in run.proc.stdout and "removed /" in run.proc.stdout, (
        run.proc.stdout
    )
    # Killed by recorded pid (the peer of the first one killed may exit by itself).
    assert any(f"killed iperf3 pid {pid}" in run.proc.stdout for pid in left), run.proc.stdout
    again = cleanup_run(lab, tmp_path, run_id).proc
    assert again.returncode == 0 and "nothing left behind" in again.stdout, again.stdout


def app_container_running(lab: LabHandle) -> bool:
    """Both iperf3 containers run: a docker run still under way when netrun is SIGKILLed
    finishes on its host after any cleanup (its watchdog removes it later)."""
    return all(
        any(
            lab.docker(host, "ps", "-q", "--filter", f"label=netrun.role={role}").strip()
            for host in lab.hosts
        )
        for role in ("server", "client")
    )


@pytest.mark.docker
def test_sigkill_during_docker_test_then_cleanup(docker_lab: LabHandle, tmp_path: Path) -> None:
    """SIGKILL with containers up: cleanup removes them, and the killed run's folder."""
    scen = write_scenario(tmp_path, [entry("bare"), entry("killed", mode="docker", duration=10)])
    before = lab_settings(docker_lab)
    argv = [*args(tmp_path, scen, docker_lab.inventory), "-q"]
    with netrun_process(argv, cwd=tmp_path) as proc:
        assert wait_for(lambda: app_container_running(docker_lab) or proc.poll() is not None, 60)
        assert proc.poll() is None, proc.communicate()
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=15)
    doc = load_results(tmp_path / "out")
    run_id = doc["run_id"]
    assert only_test(doc, "bare")["status"] == "ok"  # saved before the kill
    found = lab_containers(docker_lab)
    assert set(found) == {"alpha", "bravo"}, found
    run = cleanup_run(docker_lab, tmp_path, run_id)
    check_fault(
        docker_lab,
        run,
        fault="SIGKILL with containers up, then netrun cleanup",
        before=before,
        max_seconds=60,
        statuses={"bare": "ok"},
        host=None,
        exit_code=0,
    )
    # the label sweep is the run's undo record now (the older label sweep follows it)
    assert "undone: remove the run's containers" in run.proc.stdout, run.proc.stdout


# -- a full results filesystem ------------------------------------------------------------------
@contextmanager
def tiny_tmpfs(path: Path, size: str = "256k") -> Iterator[Path]:
    path.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], check=True)


def fill(fs: Path) -> None:
    """Write a filler file until the filesystem has not one free block left."""
    fd = os.open(fs / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
    with pytest.raises(OSError):
        (fs / "probe").write_text("x")
    (fs / "probe").unlink()
    assert os.statvfs(fs).f_bavail == 0


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("where", ["new-folder", "same-folder"])
def test_full_results_filesystem(lab: LabHandle, tmp_path: Path, where: str) -> None:
    """A full disk: the run still measures, prints the table, stores the history, cleans
    up; one line names the file and the fix; the earlier run's files stay as they were."""
    scen = write_scenario(tmp_path, [entry("tcp"), entry("udp", protocol="udp", bitrate="50M")])
    before = lab_settings(lab)
    with tiny_tmpfs(tmp_path / "results") as fs:
        earlier = fs / "earlier"
        first = run_netrun([*args(tmp_path, scen, lab.inventory, earlier), "-q"], cwd=tmp_path)
        assert first.returncode == 0, first.stderr
        kept = snapshot(earlier)
        assert {"results.json", "report.txt", "netrun.log"} <= set(kept), sorted(kept)
        fill(fs)
        out = earlier if where == "same-folder" else fs / "nightly"
        started = time.monotonic()
        res = run_netrun(args(tmp_path, scen, lab.inventory, out), cwd=tmp_path, timeout=120)
        took = time.monotonic() - started
        found = re.search(r", run ([0-9a-f]+), results in ", res.stderr)
        run_id = found[1] if found else "unknown"
        left = leftovers(lab, before, None) + [f"run folder {d}" for d in run_dirs(run_id)]
        log_fault(f"results folder on a full filesystem ({where})", took, left)
        where_ = f"\nstdout:\n{res.stdout}\nstderr:\n{res.stderr}"
        assert res.returncode == 1, where_
        assert "Traceback" not in res.stderr and "internal error" not in res.stderr, where_
        assert took < 30, took
        # One line: the file, the reason and the fix; no "results:" line pointing at nothing.
        lines = error_lines(res.stderr)
        assert len(lines) == 1, where_
        assert lines[0].startswith(f"netrun: error: results not saved: {out}/"), lines
        assert "No space left on device" in lines[0], lines
        assert "free space there or choose another results folder (-o)" in lines[0], lines
        assert "results: " not in res.stderr, where_
        # The run went on: both tests measured, in the table on stdout.
        # (the main table's rows: the TCP internals table under it has a tcp row too)
        rows = [
            ln for ln in res.stdout.splitlines()
            if ln.startswith(("tcp", "udp")) and " baremetal " in ln
        ]  # fmt: skip
        assert len(rows) == 2 and all(" ok" in r or " flagged" in r for r in rows), where_
        # The earlier run's files are intact, and no temp file of an atomic write is left.
        after = snapshot(earlier)
        for name, content in kept.items():
            if name == "netrun.log" and where == "same-folder":  # appended to by design
                assert after[name].startswith(content)
            else:
                assert after[name] == content, f"{name} changed"
        assert list(fs.rglob(".*")) == []
        new = set(snapshot(out)) - set(kept)
        assert new <= {"netrun.log"}, new  # an empty log at most
        # The measurements reached the history, which lives elsewhere.
        assert found, where_
        stored = run_netrun(
            ["report", run_id, "--db", tmp_path / "history.sqlite", "--format", "csv"],
            cwd=tmp_path,
        )
        assert stored.returncode == 0 and "tcp" in stored.stdout, stored.stderr
    assert left == []  # on the hosts: no iperf3, no run folder, no changed setting
