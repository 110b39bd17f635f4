"""The one pid-file format (``pid start boot``): every reader of a process's start time
agrees on real /proc/PID/stat lines (fixtures/proc_stat, captured by its capture.sh),
among them a command name with spaces and parentheses.

Three readers must agree, or a pid file written by one would never match another's
check (and a process would be left running) or, worse, match a process that reused its
pid: the controller's (``process_start``), the sh that checks a record
(``start_time``: sed and cut) and the builtin-only sh that writes one (``save_pid``).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from netrun.hosts import proc

FIXTURES = Path(__file__).parent / "fixtures" / "proc_stat"
#: Field 22 of each capture, read off by hand.
STARTS = {"sleep.stat": "1516108", "odd-name.stat": "1516109", "cat.stat": "1516184"}


def sh(script: str) -> str:
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("name", sorted(STARTS))
def test_every_reader_takes_the_same_start_time(name: str) -> None:
    path = FIXTURES / name
    stat = path.read_text()
    assert proc.start_in(stat) == STARTS[name]
    checked = proc.start_time().replace('"/proc/$p/stat"', f'"{path}"')
    assert checked != proc.start_time() and sh(checked).strip() == STARTS[name]
    written = proc.save_pid("/dev/stdout", "4242").replace('"/proc/$nrp/stat"', f'"{path}"')
    assert written != proc.save_pid("/dev/stdout", "4242")
    pid, start, boot = sh(written).split()
    assert (pid, start, boot) == ("4242", STARTS[name], proc.boot_id())


def test_a_name_with_parentheses_is_no_field() -> None:
    stat = (FIXTURES / "odd-name.stat").read_text()
    assert stat.split()[1] == "(a)"  # a naive split would count the name as three fields
    assert proc.start_in(stat) == STARTS["odd-name.stat"]


def test_a_written_record_matches_its_live_process_and_no_other(tmp_path: Path) -> None:
    """What save_pid writes, recorded reads back for the same process, on this kernel."""
    child = subprocess.Popen(["sleep", "30"])
    try:
        pidfile = tmp_path / "x.pid"
        sh(proc.save_pid(str(pidfile), str(child.pid)))
        pid, start, boot = pidfile.read_text().split()
        assert (int(pid), start, boot) == (child.pid, proc.process_start(child.pid), proc.boot_id())
        assert sh(f"{proc.recorded(str(pidfile))} && echo ours || echo not") == "ours\n"
        pidfile.write_text(f"{pid} {int(start) - 1} {boot}\n")  # the pid, reused
        assert sh(f"{proc.recorded(str(pidfile))} && echo ours || echo not") == "not\n"
    finally:
        child.kill()
        child.wait()


def test_the_wrapper_records_the_process_it_execs(tmp_path: Path) -> None:
    """iperf3's server and client record themselves (``$$`` before ``exec``): the pid
    and start time are the exec'd program's."""
    pidfile = tmp_path / "self.pid"
    wrapper = proc.save_pid('"$0"', "$$") + ' && exec "$@"'
    child = subprocess.Popen(["sh", "-c", wrapper, str(pidfile), "sleep", "30"])
    try:
        for _ in range(200):
            if pidfile.exists() and pidfile.read_text().strip():
                break
            subprocess.run(["sleep", "0.01"])
        pid, start, _boot = pidfile.read_text().split()
        assert int(pid) == child.pid and start == proc.process_start(child.pid)
        sh(proc.kill_recorded(str(pidfile), grace=0.5))
        assert child.wait(timeout=5) != 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
