"""The paramiko internals that ``netrun.hosts.ssh.channel`` relies on still exist.

``send_last`` and ``close_channel`` work around paramiko #1115/#1705 (a late EOF makes
OpenSSH drop the connection) and a write to a closed wake-up pipe, by reaching under
paramiko's public API. pyproject.toml pins paramiko to the releases checked here; a release
that renames any of these fails this test at once, not an SSH test on a loaded lab later.
"""

from __future__ import annotations

import inspect
import socket
import threading

import paramiko
from paramiko.buffered_pipe import BufferedPipe
from paramiko.common import cMSG_CHANNEL_DATA
from paramiko.message import Message


def test_channel_has_what_send_last_and_close_channel_use() -> None:
    chan = paramiko.Channel(0)
    assert hasattr(chan.lock, "__enter__") and hasattr(chan.lock, "__exit__")
    for attr in ("closed", "eof_sent", "out_window_size", "remote_chanid", "transport"):
        assert hasattr(chan, attr), attr
    for method in ("_wait_for_send_window", "_send_eof", "sendall", "shutdown_write", "close"):
        assert callable(getattr(chan, method, None)), method
    assert list(inspect.signature(chan._wait_for_send_window).parameters) == ["size"]
    assert list(inspect.signature(chan._send_eof).parameters) == []
    for buffer in (chan.in_buffer, chan.in_stderr_buffer):
        assert isinstance(buffer, BufferedPipe)
        buffer.set_event(threading.Event())  # what close_channel does before closing


def test_transport_has_what_send_last_uses() -> None:
    left, right = socket.socketpair()
    try:
        transport = paramiko.Transport(left)
        assert isinstance(transport.clear_to_send, threading.Event)
        assert callable(transport._send_user_message)
        assert list(inspect.signature(transport._send_user_message).parameters) == ["data"]
    finally:
        left.close()
        right.close()


def test_channel_data_message_builds() -> None:
    m = Message()
    m.add_byte(cMSG_CHANNEL_DATA)
    m.add_int(7)
    m.add_string(b"x")
    assert m.asbytes()[:1] == cMSG_CHANNEL_DATA
