"""One remote command on an SSH channel: open it, feed it, read it to its EOF or deadline.

Split from netrun.hosts.transport so that a command can also be *started* and answered later
(``Started``): an iperf3 client that pays its host's login cost while the server starts
elsewhere, then reads the server's port from its stdin (netrun.armed).
"""

from __future__ import annotations

import contextlib
import logging
import select
import threading
import time
from collections.abc import Callable
from typing import Any

from netrun.errors import Cancelled, CommandTimeout, ConnectError
from netrun.hosts.shield import in_cleanup
from netrun.hosts.ssh.failures import LOST

log = logging.getLogger("netrun.hosts.transport")

#: The longest a wait on a channel sleeps before it looks at the deadline and interrupts.
POLL_S = 0.05
#: Seconds a command's output may still come after its exit status. OpenSSH sends the
#: status when the command exits, before it has read what is left in the command's pipe
#: (session.c: "there could be some more data waiting in the pipe"); the output ends with
#: the channel's EOF. Reading stopped at the status lost the last line of 1% of quick
#: commands eight threads sent at once, and a late line fed into the closed channel's
#: wake-up pipe killed paramiko's reader ("Bad file descriptor"). A background process
#: that keeps the output open holds the EOF back: after this long, the command is done.
EOF_GRACE_S = 1.0


def send_last(chan: Any, data: bytes = b"") -> bool:
    """Write ``data`` to a command's stdin and end it; False when the channel had closed
    (or ended its stdin) first, and nothing was sent.

    paramiko's own ``sendall`` and ``shutdown_write`` build each message under the
    channel's lock but send it after letting go (paramiko #1115 and #1705, open). A command
    that just exited loses that race: paramiko's reader thread answers the server's CLOSE
    in between, OpenSSH frees the channel, and then drops the whole connection for the late
    EOF ("ieof packet referred to nonexistent channel"), failing every other command on
    that host. Two fan flows starting on one host of a loaded machine hit it in CI. Sent
    under the lock, the data and the EOF go out before any CLOSE of ours, and never after
    one. While a key exchange runs, paramiko's unlocked way is taken, as holding the lock
    through its wait could stall the reader.
    """
    # paramiko loads on first use, as in netrun.hosts.ssh.transport (0.3 s of imports)
    from paramiko.common import cMSG_CHANNEL_DATA
    from paramiko.message import Message

    transport = chan.transport
    rest = data
    with chan.lock:
        if chan.closed or chan.eof_sent:
            return False
        if transport is not None and transport.clear_to_send.is_set():
            while rest and chan.out_window_size > 0:  # a window: the wait below returns at once
                size = chan._wait_for_send_window(len(rest))
                if not size:
                    break
                m = Message()
                m.add_byte(cMSG_CHANNEL_DATA)
                m.add_int(chan.remote_chanid)
                m.add_string(rest[:size])
                transport._send_user_message(m)
                rest = rest[size:]
            if not rest:
                eof = chan._send_eof()
                if eof is not None:
                    transport._send_user_message(eof)
                return True
    if rest:
        chan.sendall(rest)
    chan.shutdown_write()
    return True


def close_channel(chan: Any) -> None:
    """Close ``chan`` so that output still on its way cannot reach its wake-up pipe.

    paramiko's buffers set the pipe (what ``select`` waits on) outside the channel's lock,
    and its close shuts the pipe's fds before marking it shut: a chunk of a command still
    running (a deadline, an interrupt) could write to a closed fd, killing the reader, or
    to whatever reused the number. Their events are swapped first, under the buffers' own
    lock, for plain ones nothing waits on."""
    chan.in_buffer.set_event(threading.Event())
    chan.in_stderr_buffer.set_event(threading.Event())
    chan.close()


def open_channel(
    transport: Any, host: str, line: str, timeout: float, stdin: bytes, *, eof: bool = True
) -> Any:
    """A paramiko channel running ``line``, with ``stdin`` written and, with ``eof``,
    ended (``send_last``); without, its stdin stays open for a line later (``Started``)."""
    try:
        chan = transport.open_session(timeout=timeout)
        chan.exec_command(line)
        if eof:
            send_last(chan, stdin)
        elif stdin:
            chan.sendall(stdin)
    except Exception as exc:  # paramiko raises SSHException/EOFError/OSError here
        if not transport.is_active():
            raise ConnectError(host, LOST) from None
        raise ConnectError(host, f"cannot open an SSH channel: {exc}") from None
    return chan


def collect(
    chan: Any,
    transport: Any,
    host: str,
    line: str,
    timeout: float,
    cancelled: Callable[[], bool],
) -> tuple[int, str, str]:
    """Read the channel until the command exits: (status, stdout, stderr); the channel is
    closed on every path. ``cancelled`` is polled: True stops it (an interrupt)."""
    out: list[bytes] = []
    err: list[bytes] = []
    deadline = time.monotonic() + timeout
    exited_at = 0.0  # when the exit status came, if it did
    try:
        while True:
            busy = False
            if chan.recv_ready():
                out.append(chan.recv(65536))
                busy = True
            if chan.recv_stderr_ready():
                err.append(chan.recv_stderr(65536))
                busy = True
            if busy:
                continue
            if chan.exit_status_ready():
                if chan.closed or chan.eof_received:
                    break  # EOF follows the output's last byte: all of it is in
                exited_at = exited_at or time.monotonic()
                if time.monotonic() - exited_at > EOF_GRACE_S:
                    log.debug("%s: no EOF %gs after exit (a background process keeps its "
                              "output open): %s", host, EOF_GRACE_S, line)  # fmt: skip
                    break
            elif chan.closed or not transport.is_active():
                raise ConnectError(host, LOST + " during a command")
            if cancelled() and not in_cleanup():
                raise Cancelled(host)
            if time.monotonic() > deadline:
                raise CommandTimeout(host, line, timeout, b"".join(out).decode(errors="replace"))
            # The channel's pipe wakes this on output, EOF or close (not on the exit
            # status); the timeout only bounds how late an interrupt or the deadline is
            # seen. Polled every 0.01 s, 16 clients at once kept a core busy.
            select.select([chan], [], [], POLL_S)
        exited = chan.recv_exit_status()
        if exited == -1 and not transport.is_active():
            # paramiko marks a channel of a dead connection exited, with no status
            raise ConnectError(host, LOST + " during a command")
    finally:
        close_channel(chan)
    return exited, b"".join(out).decode(errors="replace"), b"".join(err).decode(errors="replace")


class Started:
    """A command already running on its host, its stdin still open: ``send`` it a line
    (or ``abandon`` it: its stdin ends, and a script waiting on ``read`` exits), then
    ``wait`` for it as for any command."""

    def __init__(
        self, chan: Any, transport: Any, host: str, line: str, cancelled: Callable[[], bool]
    ) -> None:
        self.chan = chan
        self.transport = transport
        self.host = host
        self.line = line
        self.cancelled = cancelled
        self.started = time.monotonic()
        #: stdout read ahead by ``read_until`` (``wait`` returns it first)
        self._head = b""

    def send(self, text: str) -> None:
        """Write ``text`` to the command's stdin and close it; ConnectError if it is gone."""
        try:
            sent = send_last(self.chan, text.encode())
        except Exception as exc:  # the channel or the connection closed meanwhile
            raise ConnectError(self.host, f"the started command is gone: {exc}") from None
        if not sent:  # it ended before its line: the caller runs the command afresh
            raise ConnectError(self.host, "the started command is gone: its channel closed")

    def wait(self, timeout: float) -> tuple[int, str, str]:
        """(status, stdout, stderr) once it exits; CommandTimeout after ``timeout`` s."""
        exited, out, err = collect(
            self.chan, self.transport, self.host, self.line, timeout, self.cancelled
        )
        return exited, self._head.decode(errors="replace") + out, err

    def read_until(self, marker: str, timeout: float) -> str:
        """Its stdout so far, once a line of it holds ``marker`` (or it ended, or
        ``timeout`` passed): what a caller needs before the command's tail (a sweep
        after the reading) ends. ``wait`` still returns the whole stdout."""
        want = marker.encode()
        deadline = time.monotonic() + timeout
        with contextlib.suppress(Exception):  # a closed channel: wait says what happened
            while want not in self._head and time.monotonic() < deadline:
                if self.chan.recv_ready():
                    self._head += self.chan.recv(65536)
                    continue
                if self.chan.exit_status_ready() or self.chan.closed:
                    break
                select.select([self.chan], [], [], POLL_S)
        return self._head.decode(errors="replace")

    def abandon(self) -> None:
        """Never mind: close the channel (the remote ``read`` sees its stdin end)."""
        with contextlib.suppress(Exception):  # a dropped connection's: nothing to close
            close_channel(self.chan)
