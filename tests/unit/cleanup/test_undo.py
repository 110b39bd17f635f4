"""Undo records: written before the change, run newest first, by teardown or by a sweep.

The scripts run for real in ``sh`` on this machine against a temporary folder; the mode's
command sequence is checked with the recording transport.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from netrun.cleanup import undo
from netrun.cleanup.journal import Journal, host_key
from netrun.cleanup.ledger import Ledger
from netrun.cleanup.scripts import cleanup_script
from netrun.core.spec import TestSpec
from netrun.hosts import proc as pidfiles
from netrun.hosts.host import Host
from netrun.hosts.local import LocalTransport
from netrun.hosts.proc import boot_id as proc_boot_id
from netrun.modes.base import Mode, RunContext
from netrun.testing.recording import RecordingTransport


def spec() -> TestSpec:
    return TestSpec("t", "baremetal", "a", "b", 0, {}, frozenset())


def sh(script: str) -> str:
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True).stdout


def journaled(tmp_path: Path, run_id: str, *hosts: Host) -> Journal:
    """A real journal in ``tmp_path`` with this process's run over ``hosts``."""
    journal = Journal(tmp_path / "runs")
    journal.begin(run_id, [(h, str(tmp_path), "docker") for h in hosts])
    return journal


def pending(journal: Journal, run_id: str, host: Host) -> list[str]:
    """What the journal says is still to undo on ``host``, oldest first."""
    (entry,) = [e for e in journal.live() if e.run_id == run_id]
    return list(entry.hosts[host_key(host)].get("undo", {}).values())


def test_the_record_is_written_before_the_change_in_one_round_trip(tmp_path: Path) -> None:
    host = Host("a", {"netrun_remote_tmp": "/var/tmp"})
    host.transport = RecordingTransport("a")
    ctx = RunContext("abcd1234")
    ctx.ledger.journal = journal = journaled(tmp_path, "abcd1234", host)
    mode = Mode(spec(), host, host, ctx)
    mode.change(host, "ip link set dev eth0 mtu 9000", "ip link set dev eth0 mtu 1500", what="mtu")
    (line,) = host.transport.commands
    assert line.index("/var/tmp/netrun-abcd1234-a/undo/") < line.index("mtu 9000")
    assert " && {\n" in line  # the change runs only if the record was written
    assert pending(journal, "abcd1234", host) == ["mtu"]


def test_teardown_runs_records_newest_first_and_deletes_them(tmp_path: Path) -> None:
    host = Host("me", {"ansible_connection": "local", "netrun_remote_tmp": str(tmp_path)})
    host.transport = LocalTransport(host)
    ctx = RunContext("abcd1234")
    ctx.ledger.journal = journal = journaled(tmp_path, "abcd1234", host)
    mode = Mode(spec(), host, host, ctx)
    log = tmp_path / "log"
    for n in (1, 2, 3):
        mode.change(host, f"echo do{n} >> {log}", f"echo undo{n} >> {log}", what=f"step {n}")
    assert pending(journal, "abcd1234", host) == ["step 1", "step 2", "step 3"]
    assert mode.undo() == []
    assert log.read_text().split() == ["do1", "do2", "do3", "undo3", "undo2", "undo1"]
    assert pending(journal, "abcd1234", host) == []
    assert list((tmp_path / "netrun-abcd1234-me" / "undo").iterdir()) == []


def test_one_scope_runs_a_chosen_part_newest_first_and_keeps_the_rest(tmp_path: Path) -> None:
    """The run's MTU settings restore one layer of a host and keep the others held."""
    host = Host("me", {"ansible_connection": "local", "netrun_remote_tmp": str(tmp_path)})
    host.transport = LocalTransport(host)
    ledger = Ledger("abcd1234", journaled(tmp_path, "abcd1234", host))
    stack = ledger.scope("mtu")
    log = tmp_path / "log"
    records = []
    for n in (1, 2, 3):
        record = stack.record(host, f"echo undo{n} >> {log}", what=f"step {n}")
        sh(undo.guarded(record, ":"))
        records.append(record)
    assert stack.run([records[0], records[2]]) == []
    assert log.read_text().split() == ["undo3", "undo1"] and len(stack) == 1
    assert ledger.journal is not None and pending(ledger.journal, "abcd1234", host) == ["step 2"]
    assert stack.run() == [] and pending(ledger.journal, "abcd1234", host) == []
    assert list((tmp_path / "netrun-abcd1234-me" / "undo").iterdir()) == []


def test_a_sweep_runs_what_a_killed_run_left_newest_first(tmp_path: Path) -> None:
    host = Host("me", {"ansible_connection": "local", "netrun_remote_tmp": str(tmp_path)})
    host.transport = LocalTransport(host)
    mode = Mode(spec(), host, host, RunContext("abcd1234"))
    log = tmp_path / "log"
    mode.change(host, ":", f"echo first >> {log}", what="first change")
    mode.change(host, ":", f"echo second >> {log}", what="second change", per_run=True)
    # the controller is SIGKILLed here: nothing runs mode.undo()
    out = sh(cleanup_script(str(tmp_path), "abcd1234", docker=None))
    assert log.read_text().split() == ["second", "first"]
    assert "undone: second change\nundone: first change\n" in out
    assert not (tmp_path / "netrun-abcd1234-me").exists()


def test_cleanup_skips_live_runs(tmp_path: Path) -> None:
    for rid in ("aaaa1111", "bbbb2222"):
        (tmp_path / f"netrun-{rid}").mkdir()
    out = sh(cleanup_script(str(tmp_path), None, docker=None, skip=["bbbb2222"]))
    assert "skipped run bbbb2222: it is still running" in out
    assert not (tmp_path / "netrun-aaaa1111").exists()
    assert (tmp_path / "netrun-bbbb2222").exists()


def test_kill_recorded_spares_a_reused_pid(tmp_path: Path) -> None:
    pidfile = tmp_path / "p"
    proc = subprocess.Popen(["sleep", "30"])
    try:
        sh(pidfiles.save_pid(str(pidfile), str(proc.pid)))
        pid, start, boot = pidfile.read_text().split()
        assert boot == proc_boot_id()
        pidfile.write_text(f"{pid} {int(start) + 1} {boot}\n")  # another process, this pid
        sh(pidfiles.kill_recorded(str(pidfile)))
        assert proc.poll() is None
        pidfile.write_text(f"{pid} {start} {boot}\n")
        started = time.monotonic()
        sh(pidfiles.kill_recorded(str(pidfile)))  # a zombie until we reap it: that ends the wait
        assert time.monotonic() - started < 1
        assert proc.wait(timeout=5) != 0
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, 9)
            proc.wait()


def _alive(pid: int) -> bool:
    """Running, not a zombie (kill -0 still succeeds on one)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


@pytest.mark.parametrize("shell", ["sh", "bash"])
def test_kill_recorded_by_group_ends_the_leader_and_its_children(
    tmp_path: Path, shell: str
) -> None:
    """Like netserver's per-test children, the child outlives a kill of its parent alone
    (``setsid`` here, unlike ``timeout``, does not pass the signal on to the group)."""
    pidfile, kids = tmp_path / "ns.pid", tmp_path / "kids"
    start = (
        f"setsid sh -c 'sleep 60 & echo $! > {kids}; wait' >/dev/null 2>&1 </dev/null & "
        + pidfiles.save_pid(str(pidfile))
    )
    sh(start)
    for _ in range(100):
        if kids.exists() and kids.read_text().strip():
            break
        time.sleep(0.05)
    leader, child = int(pidfile.read_text().split()[0]), int(kids.read_text())
    assert _alive(leader) and _alive(child)
    subprocess.run([shell, "-c", pidfiles.kill_recorded(str(pidfile))], check=True)
    for _ in range(100):
        if not _alive(child) and not _alive(leader):
            break
        time.sleep(0.05)
    assert not _alive(child) and not _alive(leader)


def test_kill_recorded_by_group_spares_a_reused_pid(tmp_path: Path) -> None:
    other = subprocess.Popen(["sleep", "30"], start_new_session=True)  # leads its own group
    try:
        pidfile = tmp_path / "ns.pid"
        pidfile.write_text(f"{other.pid} 1 \n")  # a start time that is not this process's
        sh(pidfiles.kill_recorded(str(pidfile)))
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


def test_a_container_is_recorded_then_started_with_its_time_bound_then_undone(
    tmp_path: Path,
) -> None:
    """The docker mode's command sequence, through the recording transport: the run's
    record, the engine and image checks, the container's record, docker run and its time
    bound and the readiness wait in one round trip (netrun.modes.docker.launch)."""
    import json

    from netrun.modes.docker.mode import DockerMode
    from netrun.scenario.loader import load_scenario
    from netrun.testing.recording import RecordingTransport, Reply

    scen = tmp_path / "s.yaml"
    scen.write_text("tests:\n  - {name: t, mode: docker, server: alpha, client: bravo}\n")
    (test,) = load_scenario(scen, hosts=["alpha", "bravo"]).tests
    log: list[tuple[str, str]] = []
    alpha, bravo = Host("alpha"), Host("bravo")
    alpha.transport = RecordingTransport("alpha", log)
    bravo.transport = RecordingTransport("bravo", log)
    networks = {"bridge": {"IPAddress": "10.0.0.2"}}
    inspect = [{"Id": "c0ffee", "Name": "/netrun-1a2b3c4d-t0-server", "Image": "sha256:1",
                "State": {"Running": True, "Status": "running", "Pid": 42},
                "NetworkSettings": {"Networks": networks}}]  # fmt: skip
    engine = {"Server": {"Version": "20.10.24", "ApiVersion": "1.41"}}
    answer = (
        f"NETRUN_RECORDED\n==netrun:engine==\n{json.dumps(engine)}\n==netrun:enginerc==\n0\n"
        "==netrun:engineerr==\n==netrun:image0==\nsha256:1\n==netrun:run==\n0\n"
        f"==netrun:inspect==\n{json.dumps(inspect)}\n==netrun:logs==\nServer listening on 5201\n"
        "==netrun:mtu==\n1500\n"
    )
    alpha.transport.answer("docker run", Reply(answer))
    mode = DockerMode(test, alpha, bravo, RunContext("1a2b3c4d"))
    ready = mode.launch("server", alpha)
    assert ready.listening and ready.info is not None and ready.info.pid == 42
    assert mode.details["engine"] == {"alpha": "20.10.24"}
    mode.teardown()
    assert mode.undo() == []
    # the removal rides on the undo's round trip (Host.defer): one command, removal first
    (start, remove_then_stop_bound) = (line for _host, line in log)
    run_record = start.index("/tmp/netrun-1a2b3c4d-alpha/undo/")
    assert run_record < start.index("docker version") < start.index("docker image inspect")
    bound_record = start.index("/tmp/netrun-1a2b3c4d-alpha/undo/", run_record + 1)
    assert bound_record < start.index("docker run") < start.index("nohup sh -c")
    watchdog = start.index(".watchdog", start.index("nohup sh -c"))  # its pid saved
    assert watchdog < start.index("Server listening")
    assert "docker rm -f netrun-1a2b3c4d-t0-server" in start  # what the watchdog does
    remove, _, stop_bound = remove_then_stop_bound.partition("} >/dev/null 2>&1; ")
    assert remove.startswith("{ docker rm -f") and "netrun-1a2b3c4d-t0-server" in remove
    assert stop_bound.startswith("if [ -f /tmp/netrun-1a2b3c4d-alpha/undo/")


def test_a_description_with_a_newline_stays_a_comment(tmp_path: Path) -> None:
    from netrun.cleanup.undo import Record, write_script

    path = str(tmp_path / "undo" / "1.sh")
    marker = tmp_path / "ran"
    record = Record("alpha", path, "true", f"mtu\ntouch {marker}")
    subprocess.run(["sh", "-c", write_script(record)], check=True)
    subprocess.run(["sh", path], check=True)
    assert not marker.exists()
