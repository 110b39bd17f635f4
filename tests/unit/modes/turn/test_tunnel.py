"""TURN: the tunnel's STUN codec and framing, its packaging, and coturn's config."""

from __future__ import annotations

import hashlib
import hmac
import os
import struct
import subprocess
import sys

import pytest

from netrun.modes.turn import commands as turn
from netrun.modes.turn import relay, tunnel


def test_request_roundtrip_and_message_integrity() -> None:
    key = hashlib.md5(b"user:netrun:secret").digest()
    message, txid = tunnel.encode(tunnel.ALLOCATE, [(tunnel.A_REALM, b"netrun")], key)
    kind, got_txid, attrs = tunnel.decode(message)
    assert kind == tunnel.ALLOCATE and got_txid == txid and attrs[tunnel.A_REALM] == b"netrun"
    # RFC 8489 14.5: HMAC over the message up to MESSAGE-INTEGRITY, length covering it
    signed = message[:-24]
    assert hmac.new(key, signed, hashlib.sha1).digest() == attrs[tunnel.A_INTEGRITY]
    assert struct.unpack("!H", message[2:4])[0] == len(message) - 20


@pytest.mark.parametrize("addr", ["192.0.2.1", "2001:db8::7"])
def test_xor_address_roundtrip(addr: str) -> None:
    txid = os.urandom(12)
    assert tunnel._xor_address(tunnel.xor_address(addr, 3478, txid), txid) == (addr, 3478)


def test_tcp_framing_pads_channel_data_and_reassembles_split_reads() -> None:
    t = object.__new__(tunnel.Tunnel)
    got: list[bytes] = []
    t.inbuf = bytearray()
    t._dispatch = got.append  # type: ignore[method-assign]
    stun, _ = tunnel.encode(tunnel.REFRESH, [])
    stream = struct.pack("!HH", 0x4000, 5) + b"hello" + b"\0\0\0" + stun
    stream += struct.pack("!HH", 0x4000, 4) + b"abcd"
    for i in range(0, len(stream), 3):
        t.inbuf += stream[i : i + 3]
        t._frames()
    assert got == [struct.pack("!HH", 0x4000, 5) + b"hello", stun, b"@\0\0\4abcd"]
    assert not t.inbuf


def test_error_code_attribute() -> None:
    raw = b"\0\0" + bytes([4, 1]) + b"Unauthorized"
    assert tunnel.error_of({tunnel.A_ERROR: raw}) == (401, "Unauthorized")


@pytest.mark.parametrize(
    ("uri", "scheme", "message"),
    [
        ("turn://u:p@h:3478", "turn", "no credentials in the URI"),
        ("udp://h", "udp", "expected udp://HOST:PORT"),
        ("tcp://h:1", "udp", "expected udp://"),
        ("udp://h:99999", "udp", "expected udp://"),
    ],
)
def test_bad_uris(uri: str, scheme: str, message: str) -> None:
    with pytest.raises(tunnel.TunnelError, match=message):
        tunnel.parse_endpoint(uri, scheme)


def test_credentials_file_must_be_private(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "auth"
    path.write_text(turn.auth_file_text("u", "p w"))
    path.chmod(0o600)
    assert tunnel.read_credentials(str(path)) == ("u", "p w")
    path.chmod(0o640)
    with pytest.raises(tunnel.TunnelError, match="chmod 600"):
        tunnel.read_credentials(str(path))


def test_the_shipped_script_runs_alone_and_prints_one_error_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    script = tmp_path / turn.SCRIPT_NAME
    script.write_bytes(turn.tunnel_script())
    env = {"PATH": os.environ["PATH"], "NETRUN_TURN_PASSWORD": "s3cret"}  # no user
    done = subprocess.run(
        [sys.executable, "-I", str(script), "udp://127.0.0.1:0", "turn://127.0.0.1:9",
         "udp://127.0.0.1:9"],
        capture_output=True, text=True, env=env, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "turn tunnel: error: no TURN credentials: set NETRUN_TURN_USER/PASSWORD or --auth-file"
    ]
    assert turn.tunnel_version().startswith("netrun-turn-tunnel ")


def test_tunnel_command_and_banner() -> None:
    argv = turn.tunnel_command(
        "/tmp/x/t.py", listen="127.0.0.1", listen_port=5000, server="2001:db8::1",
        server_port=3478, transport="tcp", peer="10.0.0.2", peer_port=5001, seconds=20,
        auth_file="/tmp/x/auth",
    )  # fmt: skip
    assert argv[2:5] == [
        "udp://127.0.0.1:5000", "turn://[2001:db8::1]:3478?transport=tcp", "udp://10.0.0.2:5001"
    ]  # fmt: skip
    assert "--auth-file" in argv and not any("pass" in a for a in argv)
    banner = turn.parse_banner(
        "relayed 10.0.0.3:49170 mapped 10.0.0.1:40000 listen 127.0.0.1:5000 "
        "peer 10.0.0.2:5001 transport tcp\n"
    )
    assert banner == turn.Banner("10.0.0.3", 49170, "10.0.0.1", 5000, "tcp")
    assert turn.parse_banner("turn tunnel: error: x") is None
    with pytest.raises(ValueError):
        turn.auth_file_text("u", "two\nlines")


def test_relay_config_is_no_open_proxy_and_keeps_no_cli() -> None:
    user, password = relay.credentials()
    assert user != password and len(password) >= 20
    text = relay.config_text(
        listen_ip="10.0.0.3", port=3478, user=user, password=password, peers=["10.0.0.2"],
        pidfile="/run/x.pid", logfile="/tmp/turn.log",
    )  # fmt: skip
    lines = text.splitlines()
    assert {"no-cli", "no-tls", "no-dtls", "lt-cred-mech"} <= set(lines)
    assert "denied-peer-ip=0.0.0.0-255.255.255.255" in lines
    assert "allowed-peer-ip=10.0.0.2" in lines and "allow-loopback-peers" not in lines
    assert relay.command("/c", "/db")[:3] == ["turnserver", "-c", "/c"]
    assert password not in " ".join(relay.command("/c", "/db"))
    assert relay.redact(f"user={user}:{password}", password) == f"user={user}:***"
    with pytest.raises(ValueError):
        relay.config_text(
            listen_ip="10.0.0.3", port=1, user="u", password="p", peers=["10.0.0.2\nx"],
            pidfile="p", logfile="l",
        )  # fmt: skip


def test_turncat_command_quotes_credentials_for_redaction() -> None:
    argv = turn.turncat_command(
        "/usr/local/bin/turncat", listen_port=5000, server="10.0.0.3", server_port=3478,
        transport="udp", peer="10.0.0.2", peer_port=5001, user="user-1", password="p@ss:w/rd",
    )  # fmt: skip
    assert argv[2] == "turn://user-1:p%40ss%3Aw%2Frd@10.0.0.3:3478?transport=udp"
    assert "p%40ss%3Aw%2Frd" not in relay.redact(" ".join(argv), "p%40ss%3Aw%2Frd")


def test_the_tunnel_parses_as_python_3_9_and_imports_only_the_stdlib() -> None:
    import ast

    tree = ast.parse(turn.tunnel_script(), feature_version=(3, 9))
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in (
            node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")]
        )
    }
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}


def test_tcp_back_pressure_pauses_the_listener_and_resumes_when_drained() -> None:
    """Real sockets: a TURN-TCP peer that stops reading makes the tunnel stop reading too."""
    import socket
    import time

    server = socket.create_server(("127.0.0.1", 0))
    t = tunnel.Tunnel(
        ("127.0.0.1", 0), server.getsockname()[:2], "tcp", ("127.0.0.1", 9), "u", "p",
        time.monotonic() + 60,
    )  # fmt: skip
    conn, _ = server.accept()
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        t.channel_ready = True
        t._add_local(t.local)
        t._register()
        target, payload = t.local.getsockname(), b"x" * 1000
        for _ in range(40000):
            if t.local_paused:
                break
            for _ in range(50):
                try:
                    sender.sendto(payload, target)
                except BlockingIOError:
                    break
            t.step(0)
        assert t.local_paused, "the tunnel never stopped reading its listener"
        queued = len(t.out)
        assert tunnel.TCP_HIGH_WATER < queued <= tunnel.TCP_HIGH_WATER + tunnel.BURST * 1004
        conn.setblocking(False)
        deadline = time.monotonic() + 20
        while t.local_paused and time.monotonic() < deadline:
            try:
                while conn.recv(1 << 20):
                    pass
            except BlockingIOError:
                pass
            t.step(0.01)
        assert not t.local_paused and len(t.out) <= tunnel.TCP_HIGH_WATER
    finally:
        sender.close()
        conn.close()
        server.close()
        t.sel.close()
        t.sock.close()
        t.local.close()
