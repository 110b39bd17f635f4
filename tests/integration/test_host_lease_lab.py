"""One run per host, not per controller (issue 35): the lease netrun takes on each host
(netrun.hosts.lease), for real on the lab.

Two runs that would measure on one host at once: the second is refused (exit 75) with one
line naming the host, the other run, its controller and user, or with --wait-for-hosts
waits and measures after it. Runs on different hosts, even sharing one history database,
run at once and both store themselves. A run stopped by SIGTERM or Ctrl-C gives its
leases back; a SIGKILLed run's lease blocks nobody. Each
"second controller" here has a history database and run journal of its own, as another
machine would: nothing but the hosts is shared.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from netrun.hosts import lease
from tests.integration.conftest import LabHandle
from tests.integration.helpers import (
    assert_nothing_left,
    entry,
    leases_held,
    load_results,
    netrun_process,
    run_dirs,
    run_netrun,
    wait_for,
    write_scenario,
)

pytestmark = pytest.mark.integration

EXIT_OK, EXIT_LOCKED, EXIT_INT, EXIT_TERM = 0, 75, 130, 143


def args(
    tmp: Path, lab: LabHandle, out: str, server: str, client: str, duration: int, *extra: str
) -> list[str | Path]:
    """A one-test run between ``server`` and ``client``, its own results and controller
    state (history database, journal) under ``tmp/out``'s name."""
    scen = write_scenario(
        tmp,
        [entry("t", server=server, client=client, duration=duration)],
        name="lease",
        file=f"{out}.yaml",
    )
    (tmp / f"{out}-state").mkdir(exist_ok=True)
    db = tmp / f"{out}-state" / "history.sqlite"
    return [scen, "-i", lab.inventory, "-q", "-o", out, "--db", db, *extra]


def measuring(out: Path) -> str | None:
    """The run id of the run writing into ``out`` once it holds its hosts' leases, each
    lease file whole."""
    try:
        run_id = load_results(out)["run_id"]
    except (OSError, ValueError, KeyError):
        return None
    held = leases_held(run_id)
    # each lease whole: its holder's line, then its watcher's (appended as the probe goes
    # on: read between the two, a file has the first alone)
    try:
        whole = all(len(path.read_text().splitlines()) >= 2 for path in held)
    except OSError:  # released meanwhile
        return None
    return run_id if held and whole else None


def test_a_second_run_on_a_leased_host_is_refused_naming_the_other_run(
    lab: LabHandle, tmp_path: Path
) -> None:
    first_args = args(tmp_path, lab, "first", "alpha", "bravo", 60)
    with netrun_process(first_args, cwd=tmp_path) as first:
        first_id = wait_for(lambda: measuring(tmp_path / "first"), 30)
        assert first_id, first.poll()
        for held in leases_held(first_id):  # each held by a watcher of the run's sshd session
            _who, watcher = held.read_text().splitlines()[:2]
            connection = Path(f"/proc/{watcher.split()[2]}/comm").read_text()
            assert connection.startswith("sshd"), (held, connection)
        # another controller (its own database and journal) wants bravo too
        started = time.monotonic()
        second = run_netrun(args(tmp_path, lab, "second", "charlie", "bravo", 1), cwd=tmp_path)
        took = time.monotonic() - started
        assert first.poll() is None, "the first run should still be measuring"
        first.send_signal(signal.SIGTERM)  # its leases go with its teardown
        _out, err = first.communicate(timeout=90)
    assert first.returncode == EXIT_TERM, err
    assert second.returncode == EXIT_LOCKED, second.stderr
    lines = [line for line in second.stderr.splitlines() if line.startswith("netrun:")]
    assert len(lines) == 1, second.stderr
    line = lines[0]
    user = os.environ.get("USER") or "root"
    for word in ("bravo", f"run {first_id}", f"from {socket.gethostname()}", f"user {user}"):
        assert word in line, (word, line)
    assert "--wait-for-hosts" in line and "alpha" not in line and "charlie:" not in line, line
    assert took < 40, f"refused after {took:.1f}s: it should not wait"
    refused = load_results(tmp_path / "second")
    assert refused["status"] == "refused" and refused["tests"] == [], refused
    assert run_dirs(refused["run_id"]) == [], "the refused run left a folder on a host"
    assert leases_held(refused["run_id"]) == [], "the refused run kept charlie's lease"
    assert load_results(tmp_path / "first")["status"] == "interrupted"
    assert_nothing_left(lab, tmp_path / "first")


def test_wait_for_hosts_waits_then_measures_after_the_other_run(
    lab: LabHandle, tmp_path: Path
) -> None:
    with netrun_process(args(tmp_path, lab, "first", "alpha", "bravo", 8), cwd=tmp_path) as first:
        assert wait_for(lambda: measuring(tmp_path / "first"), 30), first.poll()
        launched = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        waiting = run_netrun(
            args(tmp_path, lab, "second", "bravo", "alpha", 1, "--wait-for-hosts", "60"),
            cwd=tmp_path,
            timeout=120,
        )
        first.communicate(timeout=90)
    assert first.returncode == EXIT_OK
    assert waiting.returncode == EXIT_OK, waiting.stderr
    a, b = load_results(tmp_path / "first"), load_results(tmp_path / "second")
    assert a["tests"][0]["finished"] >= launched, "the first run ended before the second began"
    assert b["tests"][0]["started"] >= a["tests"][0]["finished"], "measured while the other did"
    assert_nothing_left(lab, tmp_path / "second")


def test_a_wait_that_runs_out_refuses_saying_how_long_it_waited(
    lab: LabHandle, tmp_path: Path
) -> None:
    with netrun_process(args(tmp_path, lab, "first", "alpha", "bravo", 60), cwd=tmp_path) as first:
        first_id = wait_for(lambda: measuring(tmp_path / "first"), 30)
        assert first_id, first.poll()
        started = time.monotonic()
        second = run_netrun(
            args(tmp_path, lab, "second", "alpha", "charlie", 1, "--wait-for-hosts", "3"),
            cwd=tmp_path,
        )
        took = time.monotonic() - started
        assert first.poll() is None, "the first run should still be measuring"
        first.send_signal(signal.SIGINT)  # Ctrl-C: its leases go with its teardown
        first.communicate(timeout=90)
    assert first.returncode == EXIT_INT
    assert second.returncode == EXIT_LOCKED, second.stderr
    assert f"alpha: leased by run {first_id}" in second.stderr, second.stderr
    assert "after waiting 3s" in second.stderr, second.stderr
    assert 3 <= took < 50, took
    refused = load_results(tmp_path / "second")
    assert leases_held(refused["run_id"]) == [], "charlie's lease outlived the refused run"
    assert_nothing_left(lab, tmp_path / "first")


def test_two_waiting_runs_started_together_both_measure_one_after_the_other(
    lab: LabHandle, tmp_path: Path
) -> None:
    """Started together, each may take one host and find the other taken: each lets go of
    what it holds while it waits, so one gets both, then the other; neither gives up."""
    wait = ("--wait-for-hosts", "90")
    one = args(tmp_path, lab, "one", "alpha", "bravo", 2, *wait)
    two = args(tmp_path, lab, "two", "bravo", "alpha", 2, *wait)
    with netrun_process(one, cwd=tmp_path) as p1, netrun_process(two, cwd=tmp_path) as p2:
        _o1, e1 = p1.communicate(timeout=150)
        _o2, e2 = p2.communicate(timeout=150)
    assert p1.returncode == EXIT_OK, e1
    assert p2.returncode == EXIT_OK, e2
    ta = load_results(tmp_path / "one")["tests"][0]
    tb = load_results(tmp_path / "two")["tests"][0]
    assert ta["finished"] <= tb["started"] or tb["finished"] <= ta["started"], (ta, tb)
    assert_nothing_left(lab, tmp_path / "one")
    assert_nothing_left(lab, tmp_path / "two")


def test_a_sigkilled_runs_lease_does_not_block_the_next_run(lab: LabHandle, tmp_path: Path) -> None:
    killed_args = args(tmp_path, lab, "killed", "alpha", "bravo", 30)
    with netrun_process(killed_args, cwd=tmp_path) as killed:
        killed_id = wait_for(lambda: measuring(tmp_path / "killed"), 30)
        assert killed_id, killed.poll()
        os.kill(killed.pid, signal.SIGKILL)
        killed.wait(timeout=10)
    # at once, from another controller (which cannot sweep the killed run's leftovers)
    nxt = run_netrun(args(tmp_path, lab, "next", "alpha", "bravo", 1), cwd=tmp_path)
    assert nxt.returncode == EXIT_OK, nxt.stderr
    swept = run_netrun(["cleanup", "-i", lab.inventory, "--run-id", killed_id], cwd=tmp_path)
    assert swept.returncode == 0, swept.stderr
    assert_nothing_left(lab, tmp_path / "killed")
    assert_nothing_left(lab, tmp_path / "next")


def test_runs_on_different_hosts_run_at_once(big_lab: LabHandle, tmp_path: Path) -> None:
    """The old lock beside the history database refused the second run; the lease lets
    both measure at once, and both store themselves in the one database."""
    db = tmp_path / "history.sqlite"
    common = ["--db", str(db)]
    one = args(tmp_path, big_lab, "one", "alpha", "bravo", 4)[:-2] + common
    two = args(tmp_path, big_lab, "two", "charlie", "delta", 4)[:-2] + common
    with netrun_process(one, cwd=tmp_path) as p1, netrun_process(two, cwd=tmp_path) as p2:
        _o1, e1 = p1.communicate(timeout=120)
        _o2, e2 = p2.communicate(timeout=120)
    assert p1.returncode == EXIT_OK, e1
    assert p2.returncode == EXIT_OK, e2
    a, b = load_results(tmp_path / "one"), load_results(tmp_path / "two")
    ta, tb = a["tests"][0], b["tests"][0]
    assert ta["started"] < tb["finished"] and tb["started"] < ta["finished"], (ta, tb)
    listed = run_netrun(["history", "list", "--db", str(db)], cwd=tmp_path)
    assert a["run_id"] in listed.stdout and b["run_id"] in listed.stdout, listed.stdout
    assert_nothing_left(big_lab, tmp_path / "one")
    assert_nothing_left(big_lab, tmp_path / "two")


def test_a_dead_run_of_this_controller_still_leasing_a_host_is_taken_over(
    lab: LabHandle, tmp_path: Path
) -> None:
    """A network cut leaves sshd holding the dead run's session (until TCP gives up), and
    with it the lease. The journal says the run is dead: the next run of the same
    controller ends that lease and measures. (The stand-in holder: a live process inside
    alpha's namespace took the lease for a run id the journal has as dead.)"""
    dead = "dead0001"
    who = f"run {dead} from {socket.gethostname()} (user x, pid 1, started 2026-12-03T00:00:00Z)"
    code = (
        "import subprocess, sys, time\n"
        "r = subprocess.run(['sh', '-c', sys.argv[1]], capture_output=True, text=True)\n"
        "print(r.stdout, flush=True)\n"
        "time.sleep(120)\n"
    )
    ns = lab.host("alpha").namespace
    holder = subprocess.Popen(
        ["ip", "netns", "exec", ns, sys.executable, "-c", code, lease.acquire_script(dead, who)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and "NETRUN_LEASE taken" in holder.stdout.readline()
        run = args(tmp_path, lab, "next", "alpha", "bravo", 1)
        runs = tmp_path / "next-state" / "runs"  # the journal beside the history database
        runs.mkdir(parents=True)
        entry_ = {"run_id": dead, "pid": 999999, "started": None, "hosts": {}}
        (runs / f"{dead}.json").write_text(json.dumps(entry_))
        nxt = run_netrun(run, cwd=tmp_path)
        assert nxt.returncode == EXIT_OK, nxt.stderr
        assert leases_held(dead) == [], "the dead run's lease should be ended"
        assert_nothing_left(lab, tmp_path / "next")
    finally:
        holder.kill()
        holder.wait(timeout=10)
