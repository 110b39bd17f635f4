"""TURN parts a test brings itself: an "existing" TURN server for ``turn_server:`` (a coturn
the test starts in a lab host's namespace, which netrun neither starts nor stops), and
STUNner's turncat for ``netrun_turncat``: the real one where the lab's cache has it, else a
stand-in with its command line."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from netrun.lab import stunner
from netrun.modes.turn import relay as coturn
from tests.conftest import ROOT
from tests.integration.conftest import LabHandle
from tests.integration.helpers import wait_for


@contextmanager
def existing_coturn(
    lab: LabHandle, host: str, peers: list[str], folder: Path, port: int
) -> Iterator[tuple[str, str, str]]:
    """coturn on ``host``'s data address and ``port``, its files in ``folder`` (made 0700):
    its TCP URI, user and password, until the block ends (SIGTERM, then SIGKILL)."""
    user, password = coturn.credentials()
    folder.mkdir(mode=0o700)
    conf = folder / "turnserver.conf"
    ip = lab.host(host).data_ip
    fd = os.open(conf, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, coturn.config_text(
        listen_ip=ip, port=port, user=user, password=password,
        peers=[lab.host(p).data_ip for p in peers], pidfile=str(folder / "pid"),
        logfile=str(folder / "log"),
    ).encode())  # fmt: skip
    os.close(fd)
    ns = lab.host(host).namespace
    proc = subprocess.Popen(
        ["ip", "netns", "exec", ns, *coturn.command(str(conf), str(folder / "db"))],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip

    def listening() -> bool:
        with socket.socket() as s:
            s.settimeout(0.2)
            return s.connect_ex((ip, port)) == 0

    try:
        assert wait_for(listening, 10)
        yield f"turn://{ip}:{port}?transport=tcp", user, password
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


#: A stand-in for STUNner's turncat (not installed here), with its command line: creds in
#: the TURN URI. It hands them to netrun's tunnel in a 0600 file and execs it.
TURNCAT = """#!/usr/bin/env python3
# A stand-in for STUNner's turncat (not installed here), with its command line: creds in
# the TURN URI. It hands them to netrun's tunnel in a 0600 file and execs it.
import os, sys, tempfile
from urllib.parse import unquote, urlsplit
listen, server, peer = sys.argv[1:4]
u = urlsplit(server)
fd, auth = tempfile.mkstemp(prefix="auth-", dir=os.path.dirname(__file__))
os.write(fd, (unquote(u.username) + "\\n" + unquote(u.password) + "\\n").encode())
os.close(fd)
plain = f"turn://{u.hostname}:{u.port}?{u.query}"
os.execvp("python3", ["python3", TUNNEL, listen, plain, peer, "--time", "120",
                      "--auth-file", auth])
"""


def write_turncat(path: Path) -> Path:
    """STUNner's real turncat where `netrun lab turncat` built it (CI does), else the
    stand-in at ``path``, executable, running this checkout's tunnel."""
    real = stunner.cached()
    if real is not None:
        return real
    tunnel = ROOT / "netrun" / "modes" / "turn" / "tunnel.py"
    path.write_text(TURNCAT.replace("TUNNEL,", f"{str(tunnel)!r},"))
    path.chmod(0o755)
    return path
