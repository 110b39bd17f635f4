"""The transport seam: chosen by ansible_connection; the local and recording transports.

The local transport runs real commands on this machine (no mock); the recording one is
what unit tests of a mode's command sequence use.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from netrun.errors import Cancelled, CommandTimeout, ConnectError
from netrun.hosts.connect import connect_all, open_transport
from netrun.hosts.group import on_each
from netrun.hosts.host import Host
from netrun.hosts.local import LocalTransport
from netrun.hosts.shield import cleaning
from netrun.hosts.ssh.settings import SSHSettings
from netrun.testing.recording import RecordingTransport, Reply


def test_local_connection_runs_here_without_sshd() -> None:
    host = Host("me", {"ansible_connection": "local"})
    result = connect_all([host], SSHSettings())
    assert result.succeeded == ["me"] and isinstance(host.transport, LocalTransport)
    res = host.run(["sh", "-c", "echo $((6 * 7)); echo oops >&2; exit 3"], timeout=5, check=False)
    assert (res.exited, res.stdout, res.stderr) == (3, "42\n", "oops\n")


def test_an_unknown_connection_is_one_plain_error() -> None:
    with pytest.raises(ConnectError, match="ansible_connection 'winrm' is not supported"):
        open_transport(Host("w", {"ansible_connection": "winrm"}), SSHSettings())


def test_local_command_deadline_kills_its_process_group(tmp_path: Path) -> None:
    mark = tmp_path / "child"
    host = Host("me", {"ansible_connection": "local"})
    host.transport = LocalTransport(host)
    started = time.monotonic()
    with pytest.raises(CommandTimeout):
        host.run(f"(sleep 1; touch {mark}) & sleep 5", timeout=0.3)
    assert time.monotonic() - started < 3
    time.sleep(1.2)
    assert not mark.exists()


def test_interrupt_stops_a_command_and_refuses_new_ones_but_not_cleanup() -> None:
    host = Host("me", {"ansible_connection": "local"})
    transport = LocalTransport(host)
    host.transport = transport
    errors: list[BaseException] = []

    def long() -> None:
        try:
            host.run("sleep 5", timeout=10)
        except Cancelled as exc:
            errors.append(exc)

    worker = threading.Thread(target=long)
    worker.start()
    time.sleep(0.2)
    transport.interrupt()
    worker.join(timeout=3)
    assert errors and not worker.is_alive()
    with pytest.raises(Cancelled):  # a step not started yet (a long docker pull) never starts
        host.run("true", timeout=5)
    with cleaning():  # teardown still runs, in this thread and in its pool's threads
        assert host.run("echo bye", timeout=5).stdout == "bye\n"
        done = on_each([host], lambda h: h.run("true", timeout=5) and None, deadline=5)
    assert done.succeeded == ["me"]


def test_cleanup_commands_are_not_cut_short_by_an_interrupt() -> None:
    host = Host("me", {"ansible_connection": "local"})
    transport = LocalTransport(host)
    host.transport = transport
    out: list[str] = []

    def teardown() -> None:
        with cleaning():
            out.append(host.run("sleep 0.5; echo done", timeout=5).stdout)

    worker = threading.Thread(target=teardown)
    worker.start()
    time.sleep(0.1)
    transport.interrupt()
    worker.join(timeout=3)
    assert out == ["done\n"]


def test_recording_transport_keeps_the_command_sequence() -> None:
    log: list[tuple[str, str]] = []
    a, b = Host("a"), Host("b")
    a.transport = RecordingTransport("a", log)
    b.transport = RecordingTransport("b", log)
    a.transport.answer(r"^uname", Reply(stdout="6.1.0\n"))
    assert a.run(["uname", "-r"], timeout=1).stdout == "6.1.0\n"
    b.run(["ip", "link", "set", "dev", "eth 0", "mtu", "9000"], timeout=1)
    assert log == [("a", "uname -r"), ("b", "ip link set dev 'eth 0' mtu 9000")]


def test_a_signal_stops_every_hosts_commands_before_it_unwinds() -> None:
    """Ctrl-C: a step running in a pool thread ends its command (as a docker run must,
    for teardown to see its container) and starts no other (a docker pull)."""
    import os
    import signal

    from netrun.hosts.group import in_parallel, stop_on_signal

    host = Host("me", {"ansible_connection": "local"})
    transport = LocalTransport(host)
    host.transport = transport
    # a suite started in the background (nohup, `make test &`) inherits SIGINT ignored
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
    started = time.monotonic()
    ran: list[str] = []

    def step() -> None:
        ran.append(host.run("sleep 1; echo started", timeout=30).stdout)
        ran.append(host.run("echo pull", timeout=30).stdout)  # refused: never runs

    try:
        with pytest.raises(KeyboardInterrupt), stop_on_signal(lambda: transport.interrupt(False)):
            in_parallel({"start": step}, deadline=30)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert ran == ["started\n"]
    assert time.monotonic() - started < 5


def test_deferred_cleanup_rides_on_the_next_command(tmp_path: Path) -> None:
    """Host.defer: the script runs first in the host's next command, its output and status
    dropped; the command's own output and exit status are what the caller sees."""
    mark = tmp_path / "killed"
    host = Host("me", {"ansible_connection": "local"})
    host.transport = LocalTransport(host)
    host.defer(f"echo NETRUN_STATE gone; touch {mark}; false")
    assert not mark.exists()
    res = host.run(["sh", "-c", "echo answer; exit 4"], timeout=5, check=False)
    assert mark.exists()
    assert (res.exited, res.stdout) == (4, "answer\n")
    mark.unlink()
    host.run(["true"], timeout=5)  # it ran once: nothing is left to ride on this one
    assert not mark.exists()


def test_deferred_cleanup_waits_for_a_command_that_really_runs(tmp_path: Path) -> None:
    """A command refused before it ran (the run is stopping) keeps the deferred script for
    the next one, the final sweep, which runs in cleanup mode."""
    mark = tmp_path / "killed"
    host = Host("me", {"ansible_connection": "local"})
    host.transport = LocalTransport(host)
    host.defer(f"touch {mark}")
    host.transport.interrupt()
    with pytest.raises(Cancelled):
        host.run(["true"], timeout=5)
    assert not mark.exists()
    with cleaning():
        host.run(["true"], timeout=5)
    assert mark.exists()


def test_both_transports_wrap_and_judge_a_privileged_command_alike() -> None:
    """netrun.hosts.command: the line under sudo, the password on stdin only (never in the
    line), and sudo's refusal told apart from the command's own failure."""
    from netrun.errors import BecomeError, CommandError
    from netrun.hosts.command import CommandResult
    from netrun.hosts.privilege import checked, privileged

    host = Host("b", {"ansible_become": True, "ansible_become_password": "s3cret"})
    line, stdin = privileged(host, ["id", "-u"])
    assert line == "sudo -S -p '' -H -u root -- sh -c 'exec </dev/null; id -u'"
    assert stdin == b"s3cret\n"
    plain = Host("p", {})
    assert privileged(plain, ["id", "-u"]) == ("id -u", b"")
    assert privileged(plain, "id -u", sudo=True)[0] == "sudo -n -H -u root -- sh -c 'id -u'"
    refused = CommandResult("b", line, 1, "", "sudo: a password is required\n", 0.1)
    with pytest.raises(BecomeError, match="allow NOPASSWD sudo for alice"):
        checked(refused, host, sudo=False, check=False, user="alice")
    failed = CommandResult("p", "false", 1, "", "", 0.1)
    assert checked(failed, plain, sudo=False, check=False, user="alice") is failed
    with pytest.raises(CommandError):
        checked(failed, plain, sudo=False, check=True, user="alice")
