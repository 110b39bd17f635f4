"""The transport's pure decisions: why a handshake stalled, why a connect failed, and
whether sudo itself refused a command (sudo's own messages, as sudo 1.9 prints them)."""

from __future__ import annotations

import errno
from pathlib import Path
from types import SimpleNamespace

import pytest
from paramiko.ssh_exception import NoValidConnectionsError

from netrun.hosts.privilege import sudo_refusal
from netrun.hosts.ssh.failures import handshake_failure, socket_reason
from netrun.hosts.ssh.settings import SSHSettings

SETTINGS = SSHSettings(connect_timeout=2, banner_timeout=2, auth_timeout=2)
WHERE = "10.201.1.10:2222"


# -- a port that accepts TCP but does not speak SSH --------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        "Error reading SSH protocol banner",
        "Error reading SSH protocol banner[Errno 104] Connection reset by peer",
        "No existing session",  # paramiko's own negotiation deadline fired first
        "Negotiation timed out.",
    ],
)
def test_silent_port_is_named_as_such(text: str) -> None:
    message = handshake_failure(text, "", WHERE, SETTINGS)
    assert message is not None
    assert message.startswith(f"{WHERE} accepted TCP but sent no SSH banner within 2s")
    assert "ansible_port" in message


def test_banner_then_silence_names_the_server_version() -> None:
    message = handshake_failure("No existing session", "SSH-2.0-OpenSSH_9.2p1", WHERE, SETTINGS)
    assert message == (
        f"{WHERE} (SSH-2.0-OpenSSH_9.2p1) did not finish the SSH handshake within 2s; "
        "is sshd overloaded?"
    )


def test_banner_wait_is_the_shorter_of_the_two_timeouts() -> None:
    settings = SSHSettings(connect_timeout=10, banner_timeout=3)
    message = handshake_failure("Error reading SSH protocol banner", "", WHERE, settings)
    assert message is not None and "within 3s" in message


@pytest.mark.parametrize(
    "text", ["Incompatible ssh peer (no acceptable kex algorithm)", "Authentication failed."]
)
def test_other_ssh_errors_are_not_a_stalled_handshake(text: str) -> None:
    assert handshake_failure(text, "SSH-2.0-x", WHERE, SETTINGS) is None


# -- a failed TCP connect ---------------------------------------------------------------------
def test_refused_connect_says_refused_not_the_address_again() -> None:
    refused = ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")
    exc = NoValidConnectionsError({("10.201.1.10", 22): refused})
    assert "Connection refused" not in str(exc)
    assert socket_reason(exc) == "Connection refused"


def test_plain_os_error_keeps_its_words() -> None:
    assert socket_reason(OSError(errno.EHOSTUNREACH, "No route to host")) == "No route to host"
    assert socket_reason(OSError("something odd")) == "something odd"


# -- sudo refusing ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("stderr", "fix"),
    [
        ("sudo: a password is required\n", "set ansible_become_password, or allow NOPASSWD"),
        (
            "sudo: a terminal is required to read the password; either use the -S option to "
            "read from standard input or configure an askpass helper\n",
            "set ansible_become_password, or allow NOPASSWD",
        ),
        ("Sorry, try again.\nsudo: 1 incorrect password attempt\n", "fix it"),
        ("sudo: no password was provided\nsudo: 1 incorrect password attempt\n", "fix it"),
        ("bench is not in the sudoers file.  This incident will be reported.\n", "sudoers"),
        ("Sorry, user bench may not run sudo on node36.\n", "sudoers"),
        ("sudo: sorry, you must have a tty to run sudo\n", "requiretty"),
    ],
)
def test_sudo_refusal_is_one_line_with_the_fix(stderr: str, fix: str) -> None:
    message = sudo_refusal(1, stderr, "bench")
    assert message is not None and "\n" not in message
    assert message.startswith("sudo refused (") and fix in message


def test_nopasswd_fix_names_the_login_user() -> None:
    message = sudo_refusal(1, "sudo: a password is required\n", "bench")
    assert message == (
        "sudo refused (sudo: a password is required); set ansible_become_password, "
        "or allow NOPASSWD sudo for bench"
    )


@pytest.mark.parametrize("stderr", ["sh: 1: sudo: not found\n", "bash: sudo: command not found\n"])
def test_missing_sudo(stderr: str) -> None:
    message = sudo_refusal(127, stderr, "bench")
    assert message is not None and message.startswith("sudo is not installed")


@pytest.mark.parametrize(
    ("exited", "stderr"),
    [
        (1, "iperf3: error - unable to connect to server: Connection refused\n"),
        (2, "sudo: a password is required\n"),  # not sudo's refusal status
        (127, "sh: 1: iperf3: not found\n"),
        (1, ""),
    ],
)
def test_a_failing_command_under_sudo_is_not_a_refusal(exited: int, stderr: str) -> None:
    assert sudo_refusal(exited, stderr, "bench") is None


# -- interrupt(): a parallel run's Ctrl-C stops the commands already on their way --------------
class _SilentChannel:
    """A channel whose command never prints or exits (a client still measuring); with no
    transport of its own, send_last ends its stdin by paramiko's own shutdown_write."""

    closed = False
    eof_sent = False
    transport = None

    def __init__(self) -> None:
        import threading

        from paramiko.buffered_pipe import BufferedPipe

        self.lock = threading.Lock()
        self.in_buffer, self.in_stderr_buffer = BufferedPipe(), BufferedPipe()

    def exec_command(self, line: str) -> None: ...
    def sendall(self, data: bytes) -> None: ...
    def shutdown_write(self) -> None: ...
    def recv_ready(self) -> bool:
        return False

    def recv_stderr_ready(self) -> bool:
        return False

    def exit_status_ready(self) -> bool:
        return False

    def fileno(self) -> int:
        import os

        self._pipe = getattr(self, "_pipe", None) or os.pipe()
        return self._pipe[0]

    def close(self) -> None:
        import os

        for fd in getattr(self, "_pipe", None) or ():
            os.close(fd)
        self._pipe = None


def test_interrupt_while_the_channel_opens_stops_the_command() -> None:
    """The interrupt lands during open_session's round trip: the command must still stop,
    rather than run out its deadline while the main thread waits with signals shielded."""
    import time
    from types import SimpleNamespace

    from netrun.errors import Cancelled
    from netrun.hosts.host import Host
    from netrun.hosts.ssh.transport import SSHTransport

    ssh = SSHTransport(Host("alpha", {}), SETTINGS)

    def open_session(timeout: float) -> _SilentChannel:
        ssh.interrupt()  # the main thread's Ctrl-C, while the request is on the wire
        return _SilentChannel()

    link = SimpleNamespace(open_session=open_session, is_active=lambda: True)
    ssh._conn = SimpleNamespace(get_transport=lambda: link)  # type: ignore[assignment]
    started = time.monotonic()
    with pytest.raises(Cancelled):
        ssh.run(["iperf3", "-c", "10.0.0.2"], timeout=30)
    assert time.monotonic() - started < 5


def test_forks_bound_how_many_hosts_work_at_once() -> None:
    """``forks`` hosts at once, never more, and hosts that only waited their turn do
    not run out of time: the deadline is per wave of ``forks`` hosts."""
    import threading
    import time

    from netrun.hosts.group import in_parallel

    lock = threading.Lock()
    now = peak = 0

    def task() -> None:
        nonlocal now, peak
        with lock:
            now += 1
            peak = max(peak, now)
        time.sleep(0.05)
        with lock:
            now -= 1

    result = in_parallel({f"h{i}": task for i in range(12)}, deadline=0.5, max_workers=3)
    assert peak == 3
    assert len(result.succeeded) == 12 and not result.failed


def test_the_connect_deadline_bounds_every_phase_of_a_connection() -> None:
    """One formula for how long a connect may take, used by connect_all and preconnect."""
    settings = SSHSettings(connect_timeout=3, banner_timeout=4, auth_timeout=6)
    assert settings.connect_deadline == 3 + 4 + 6 + 5
    assert SSHSettings().connect_deadline == 35


def test_one_connect_timeout_bounds_every_phase() -> None:
    """--connect-timeout for netrun and netrun check: TCP, banner and login alike."""
    settings = SSHSettings.timed(4, accept_new_host_keys=True, forks=7)
    assert (settings.connect_timeout, settings.banner_timeout, settings.auth_timeout) == (4, 4, 4)
    assert settings.accept_new_host_keys and settings.forks == 7
    assert settings.connect_deadline == 17


def test_each_connect_failure_is_one_line_that_says_what_to_do(tmp_path: Path) -> None:
    """sshfail.connect_failure, on the exceptions paramiko and the socket really raise."""
    import paramiko

    from netrun.errors import AuthError, ConnectError, HostKeyError
    from netrun.hosts.host import Host
    from netrun.hosts.ssh.failures import connect_failure

    host = Host("alpha", {"ansible_host": "10.0.0.9", "ansible_port": 2222})
    known = tmp_path / "known_hosts"
    key = SimpleNamespace(get_base64=lambda: "AAAA", get_name=lambda: "ssh-ed25519")

    def said(exc: Exception, version: str = "") -> ConnectError:
        return connect_failure(exc, host, "bob", known, version, SETTINGS)

    changed = said(paramiko.BadHostKeyException("10.0.0.9", key, key))
    assert isinstance(changed, HostKeyError) and "CHANGED" in str(changed)
    # quoted: zsh would take an unquoted [10.0.0.9] for a glob and refuse the command
    assert f"ssh-keygen -f {known} -R '[10.0.0.9]:2222'" in str(changed)
    unknown = said(paramiko.SSHException("Server '[10.0.0.9]:2222' not found in known_hosts"))
    assert isinstance(unknown, HostKeyError) and "--accept-new-host-keys" in str(unknown)
    refused = said(paramiko.AuthenticationException("Authentication failed."))
    assert isinstance(refused, AuthError) and "SSH login as bob" in str(refused)
    silent = said(paramiko.SSHException("Error reading SSH protocol banner"))
    assert "sent no SSH banner within 2s" in str(silent)
    slow = said(paramiko.SSHException("No existing session"), "SSH-2.0-OpenSSH_9.2")
    assert "did not finish the SSH handshake" in str(slow)
    other = said(paramiko.SSHException("Incompatible ssh peer"))
    assert str(other) == "alpha: SSH to 10.0.0.9:2222 failed: Incompatible ssh peer"
    assert "no answer from 10.0.0.9:2222 within 2s" in str(said(TimeoutError()))
    down = said(ConnectionRefusedError(111, "Connection refused"))
    assert str(down) == (
        "alpha: cannot reach 10.0.0.9:2222: Connection refused; check ansible_host/ansible_port"
    )
