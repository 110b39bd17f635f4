"""netrun's TURN tunnel against a real coturn and real iperf2, between lab namespaces.

alpha runs the tunnel and the iperf2 client, charlie the relay (coturn's turnserver),
bravo the iperf2 server. ``mode: turn`` will drive the same commands over SSH; until the
core lands, this test starts them in the namespaces itself and kills every one by pid.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from netrun.modes.turn import commands as turn
from netrun.modes.turn import relay
from netrun.tools.iperf2 import command as iperf2_command
from netrun.tools.iperf2 import parse as iperf2

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        shutil.which("turnserver") is None or shutil.which("iperf") is None,
        reason="needs coturn's turnserver and iperf 2 (make setup installs them)",
    ),
]

TURN_PORT = 3478
IPERF_PORT = 5301


def _in(ns: str, argv: list[str], **kwargs: object) -> subprocess.Popen:
    return subprocess.Popen(["ip", "netns", "exec", ns, *argv], **kwargs)  # type: ignore[call-overload]


def _stop(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def _secret_file(path: Path, text: str) -> Path:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    return path


def _wait_listening(ns: str, port: int, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        out = subprocess.run(
            ["ip", "netns", "exec", ns, "ss", "-Hlnt", f"sport = :{port}"],
            capture_output=True, text=True, check=False,
        ).stdout  # fmt: skip
        if out.strip():
            return
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    pytest.fail(
        f"turnserver did not listen on {port}: {log.read_text()[-500:] if log.exists() else ''}"
    )


@contextlib.contextmanager
def _relay(lab, tmp: Path, port: int, extra: str = "") -> Iterator[dict]:  # type: ignore[no-untyped-def]
    """A coturn relay on charlie that may relay only to bravo; killed at the end."""
    charlie, bravo = lab.host("charlie"), lab.host("bravo")
    user, password = relay.credentials()
    conf = _secret_file(
        tmp / "turnserver.conf",
        relay.config_text(
            listen_ip=charlie.data_ip, port=port, user=user, password=password,
            peers=[bravo.data_ip], pidfile=str(tmp / "turnserver.pid"),
            logfile=str(tmp / "turn.log"),
        ) + extra,
    )  # fmt: skip
    proc = _in(
        charlie.namespace,
        relay.command(str(conf), str(tmp / "turndb")),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        _wait_listening(charlie.namespace, port, proc, tmp / "turn.log")
        yield {
            "proc": proc, "tmp": tmp, "user": user, "password": password,
            "ip": charlie.data_ip, "port": port,
        }  # fmt: skip
    finally:
        _stop(proc)
        conf.unlink(missing_ok=True)  # the per-run password
        assert proc.poll() is not None


@pytest.fixture(scope="module")
def relay_host(lab, tmp_path_factory) -> Iterator[dict]:  # type: ignore[no-untyped-def]
    with _relay(lab, tmp_path_factory.mktemp("turn"), TURN_PORT) as info:
        yield info


def _tunnel(lab, relay_host, transport: str, peer: str, auth: Path, seconds: float = 30):  # type: ignore[no-untyped-def]
    script = relay_host["tmp"] / turn.SCRIPT_NAME
    script.write_bytes(turn.tunnel_script())
    argv = turn.tunnel_command(
        str(script), listen="127.0.0.1", listen_port=0, server=relay_host["ip"],
        server_port=relay_host["port"], transport=transport, peer=peer, peer_port=IPERF_PORT,
        seconds=seconds, auth_file=str(auth), python=sys.executable,
    )  # fmt: skip
    return _in(
        lab.host("alpha").namespace, argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def _first_line(proc: subprocess.Popen, timeout: float = 20) -> str:
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    return proc.stdout.readline() if ready else ""  # type: ignore[union-attr]


@pytest.mark.parametrize("transport", ["udp", "tcp"])
def test_iperf2_through_the_tunnel_at_1000pps(lab, relay_host, transport: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    _through_the_tunnel(lab, relay_host, transport, tmp_path, seconds=3)


@pytest.mark.parametrize("transport", ["udp", "tcp"])
def test_the_tunnel_refreshes_a_short_allocation_and_a_stale_nonce(
    lab, transport: str, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    """coturn grants 4 s and makes nonces stale after 3 s: 8 s of traffic needs refreshes."""
    extra = "max-allocate-lifetime=4\nstale-nonce=3\n"
    with _relay(lab, tmp_path, TURN_PORT + 1, extra) as short:
        stats = _through_the_tunnel(lab, short, transport, tmp_path, seconds=8)
    assert "lifetime 4" in stats
    assert int(stats.split("refreshes ")[1].split()[0]) >= 3


def _through_the_tunnel(lab, relay_host, transport: str, tmp_path: Path, seconds: int) -> str:  # type: ignore[no-untyped-def]
    """iperf2 at 1000 pps through the tunnel; checks the proof, returns the tunnel's stats."""
    bravo, alpha = lab.host("bravo"), lab.host("alpha")
    auth = _secret_file(
        tmp_path / "auth", turn.auth_file_text(relay_host["user"], relay_host["password"])
    )
    server = _in(
        bravo.namespace, iperf2_command.server_command(IPERF_PORT, bravo.data_ip),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    tunnel = _tunnel(lab, relay_host, transport, bravo.data_ip, auth)
    try:
        banner = turn.parse_banner(_first_line(tunnel))
        assert banner is not None, tunnel.stderr.read() if tunnel.poll() is not None else ""
        assert banner.relayed == relay_host["ip"] and banner.transport == transport
        client = subprocess.run(
            ["ip", "netns", "exec", alpha.namespace, *iperf2_command.client_command(
                "127.0.0.1", length=100, bitrate="1000pps", duration=seconds,
                port=banner.listen_port,
            )],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        time.sleep(0.5)
        _stop(server, signal.SIGINT)
        out = server.stdout.read()  # type: ignore[union-attr]
        result = iperf2.parse(out, expect_seconds=seconds)
        # the proof: bravo's iperf2 saw the relay's relayed address, not alpha's
        assert result.peer_seen == relay_host["ip"] != alpha.data_ip
        assert result.peers == (f"{banner.relayed} port {banner.relayed_port}",)
        assert result.metrics["total"] >= 950 * seconds, out
        assert result.metrics["lost_percent"] < 5, out  # 0% on an idle machine
        assert result.metrics["latency_avg_ms"] is not None
        assert "Server Report" in client.stdout
    finally:
        _stop(tunnel)
        _stop(server)
    assert tunnel.returncode == 0
    stats = tunnel.stdout.read()  # type: ignore[union-attr]
    assert "stats up" in stats
    return stats


def test_wrong_password_is_one_line_naming_401_and_no_secret(lab, relay_host, tmp_path) -> None:  # type: ignore[no-untyped-def]
    wrong = "not-the-password-xyz"
    auth = _secret_file(tmp_path / "auth", turn.auth_file_text(relay_host["user"], wrong))
    for transport in ("udp", "tcp"):
        proc = _tunnel(lab, relay_host, transport, lab.host("bravo").data_ip, auth)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 2
        assert err.strip().splitlines() == [
            "turn tunnel: error: TURN server rejected the credentials (401 Unauthorized)"
        ]
        assert wrong not in out + err and relay_host["password"] not in out + err


def test_the_relay_is_no_open_proxy(lab, relay_host, tmp_path) -> None:  # type: ignore[no-untyped-def]
    auth = _secret_file(
        tmp_path / "auth", turn.auth_file_text(relay_host["user"], relay_host["password"])
    )
    proc = _tunnel(lab, relay_host, "udp", lab.host("alpha").data_ip, auth)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2 and "403" in err


def test_unreachable_server_and_loose_auth_file(lab, relay_host, tmp_path) -> None:  # type: ignore[no-untyped-def]
    auth = _secret_file(tmp_path / "auth", turn.auth_file_text("u", "p"))
    dead = dict(relay_host, ip=lab.host("bravo").data_ip)  # nothing listens on 3478 there
    for transport in ("udp", "tcp"):
        proc = _tunnel(lab, dead, transport, lab.host("bravo").data_ip, auth)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 2
        assert f"cannot reach TURN server {dead['ip']}:{TURN_PORT}" in err
    auth.chmod(0o644)
    proc = _tunnel(lab, relay_host, "udp", lab.host("bravo").data_ip, auth)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2 and "chmod 600" in err


def test_the_tunnel_exits_by_itself_and_frees_its_allocation(lab, relay_host, tmp_path) -> None:  # type: ignore[no-untyped-def]
    auth = _secret_file(
        tmp_path / "auth", turn.auth_file_text(relay_host["user"], relay_host["password"])
    )
    start = time.monotonic()
    proc = _tunnel(lab, relay_host, "tcp", lab.host("bravo").data_ip, auth, seconds=2)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert time.monotonic() - start < 10
    assert turn.parse_banner(out) is not None
