"""The run's one ledger: records in scopes (test, kept for the next test, run), and every
run of a record journaled, at teardown, deferred or in a sweep.

The records' scripts run for real in ``sh`` on this machine (the local transport) against a
temporary folder, and the journal is a real one in that folder.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from netrun.cleanup import undo
from netrun.cleanup.journal import Journal, host_key
from netrun.cleanup.ledger import Ledger, Scope
from netrun.cleanup.scripts import cleanup_script
from netrun.hosts.host import Host
from netrun.hosts.local import LocalTransport

RUN = "abcd1234"


def local(tmp_path: Path, name: str = "me") -> Host:
    host = Host(name, {"ansible_connection": "local", "netrun_remote_tmp": str(tmp_path)})
    host.transport = LocalTransport(host)
    return host


def ledger_over(tmp_path: Path, *hosts: Host) -> Ledger:
    journal = Journal(tmp_path / "runs")
    journal.begin(RUN, [(h, str(tmp_path), "docker") for h in hosts])
    return Ledger(RUN, journal)


def pending(ledger: Ledger, host: Host) -> list[str]:
    """What the journal says is still to undo on ``host``, oldest first."""
    assert ledger.journal is not None
    (entry,) = [e for e in ledger.journal.live() if e.run_id == RUN]
    return list(entry.hosts[host_key(host)].get("undo", {}).values())


def change(scope: Scope, host: Host, log: Path, what: str) -> undo.Record:
    """A recorded change whose undo appends ``what`` to ``log``; the record is written."""
    record = scope.record(host, f"echo {what} >> {log}", what=what)
    subprocess.run(["sh", "-c", undo.guarded(record, ":")], check=True)
    return record


def test_scopes_hold_their_own_records_in_one_stack(tmp_path: Path) -> None:
    host = local(tmp_path)
    ledger = ledger_over(tmp_path, host)
    log = tmp_path / "log"
    test = ledger.scope()
    change(ledger.run, host, log, "per-run")
    change(test, host, log, "first")
    change(test, host, log, "second")
    assert [(s, r.what) for s, _h, r in ledger.held()] == [
        ("run", "per-run"),
        ("test", "first"),
        ("test", "second"),
    ]
    assert test.run() == []  # the test's teardown: its records only, newest first
    assert log.read_text().split() == ["second", "first"]
    assert [r.what for _s, _h, r in ledger.held()] == ["per-run"]
    assert pending(ledger, host) == ["per-run"]


def test_pop_all_keeps_records_for_the_next_test_which_adopts_them(tmp_path: Path) -> None:
    """Containers kept for the next test: their records leave the test's scope without
    running (contextlib.ExitStack.pop_all), and the next test runs them as its own."""
    host = local(tmp_path)
    ledger = ledger_over(tmp_path, host)
    log = tmp_path / "log"
    first = ledger.scope("containers")
    change(first, host, log, "bound-a")
    change(first, host, log, "bound-b")
    kept = first.pop_all("kept")
    assert len(first) == 0 and len(kept) == 2
    assert first.run() == [] and not log.exists()  # the first test's teardown runs nothing
    assert pending(ledger, host) == ["bound-a", "bound-b"]
    second = ledger.scope("containers")
    change(second, host, log, "own")
    second.absorb(kept)
    assert len(kept) == 0 and [r.what for _h, r in second.records()] == [
        "bound-a",
        "bound-b",
        "own",
    ]
    assert second.run() == []
    assert log.read_text().split() == ["own", "bound-b", "bound-a"]
    assert pending(ledger, host) == []


def test_a_deferred_record_runs_on_the_hosts_next_command_and_is_journaled_then(
    tmp_path: Path,
) -> None:
    host = local(tmp_path)
    ledger = ledger_over(tmp_path, host)
    log = tmp_path / "log"
    scope = ledger.scope("containers")
    change(scope, host, log, "bound")
    scope.defer(then=[(host, f"echo removed >> {log}")])
    assert len(scope) == 0 and ledger.held() == []
    assert not log.exists() and pending(ledger, host) == ["bound"]  # nothing ran yet
    host.run(["true"], timeout=10)  # the host's next command carries it
    assert log.read_text().split() == ["removed", "bound"]
    assert pending(ledger, host) == []
    assert list((tmp_path / f"netrun-{RUN}-me" / "undo").iterdir()) == []


def test_what_a_deferred_scope_has_no_record_for_still_rides(tmp_path: Path) -> None:
    """Kept containers with no record on a host are still removed there."""
    alpha, bravo = local(tmp_path, "alpha"), local(tmp_path, "bravo")
    ledger = ledger_over(tmp_path, alpha, bravo)
    log = tmp_path / "log"
    scope = ledger.scope()
    change(scope, alpha, log, "alpha-bound")
    scope.defer(then=[(bravo, f"echo bravo-rm >> {log}")])
    bravo.run(["true"], timeout=10)
    assert log.read_text().split() == ["bravo-rm"] and pending(ledger, alpha) == ["alpha-bound"]
    alpha.run(["true"], timeout=10)
    assert log.read_text().split() == ["bravo-rm", "alpha-bound"]
    assert pending(ledger, alpha) == []


def test_a_deferred_record_whose_command_never_went_stays_journaled(tmp_path: Path) -> None:
    host = local(tmp_path)
    ledger = ledger_over(tmp_path, host)
    scope = ledger.scope()
    change(scope, host, tmp_path / "log", "bound")
    scope.defer()
    host.transport = None  # the connection is gone: the record stays to the sweep
    assert pending(ledger, host) == ["bound"]


def test_the_final_sweep_runs_every_scope_left_on_its_hosts_and_journals_them(
    tmp_path: Path,
) -> None:
    """What no teardown ran (a per-run record, kept containers of a test that never came,
    a record whose undo failed) the run's sweep runs; the ledger journals it then."""
    alpha, bravo = local(tmp_path, "alpha"), local(tmp_path, "bravo")
    ledger = ledger_over(tmp_path, alpha, bravo)
    log = tmp_path / "log"
    change(ledger.run, alpha, log, "per-run")
    kept = ledger.scope().pop_all("kept")
    change(kept, alpha, log, "kept")
    failing = ledger.scope()
    record = failing.record(alpha, "false", what="fails")
    subprocess.run(["sh", "-c", undo.guarded(record, ":")], check=True)
    assert failing.run() != [] and pending(ledger, alpha) == ["per-run", "kept", "fails"]
    assert [(s, r.what) for s, _h, r in ledger.held()][-1] == ("run", "fails")  # for the sweep
    change(ledger.run, bravo, log, "bravo")
    script = cleanup_script(str(tmp_path), RUN, docker=None, host="alpha")
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True)
    assert "undone: kept" in out.stdout and "undone: per-run" in out.stdout
    assert "undo failed: fails" in out.stdout
    ledger.swept(["alpha"])
    assert pending(ledger, alpha) == [] and pending(ledger, bravo) == ["bravo"]
    assert [r.what for _s, _h, r in ledger.held()] == ["bravo"]
