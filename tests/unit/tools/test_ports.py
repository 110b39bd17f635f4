"""Who holds a port: the sh runs for real here, against sockets this test binds."""

from __future__ import annotations

import os
import socket
import subprocess

from netrun.tools import ports


def ask(port: int, protocol: ports.Protocol) -> str | None:
    script = ports.holder_script(port, protocol)
    res = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True)
    return ports.holder(res.stdout)


def test_a_listening_tcp_port_names_its_holder_and_a_free_one_none() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        assert ask(port, "tcp") is None  # bound but not listening yet
        s.listen()
        held = ask(port, "tcp")
        assert held is not None
        if os.geteuid() == 0:  # ss shows other users' programs to root only
            assert f"pid={os.getpid()}" in held
        assert ask(port, "udp") is None
    assert ask(port, "tcp") is None


def test_a_bound_udp_port_names_its_holder() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        held = ask(port, "udp")
        assert held is not None
        if os.geteuid() == 0:
            assert f"pid={os.getpid()}" in held
        assert ask(port, "tcp") is None


def test_an_answer_without_users_is_another_program() -> None:
    line = "UNCONN 0 0 0.0.0.0:5001 0.0.0.0:*"  # ss -Hlnup run by a user who is not root
    assert ports.holder(f"{ports.MARK} {line}\n") == "another program"
    assert ports.holder("") is None
