"""TURN relay tests: netrun's own tunnel (``tunnel.py``) and a coturn relay it manages.

``tunnel.py`` is a standalone script: netrun uploads its bytes (``tunnel_script()``) over
SFTP to a client host that has only python3, and starts it with ``tunnel_command``. The
credentials travel in a 0600 file (``auth_file_text``), never in argv or the environment of
an SSH command line. ``relay.py`` builds coturn's config and command.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from urllib.parse import quote

#: Where the script goes on a host, under the run's remote directory.
SCRIPT_NAME = "netrun-turn-tunnel.py"


def tunnel_script() -> bytes:
    """The tunnel's source, as shipped in the package, to upload as one file."""
    return resources.files(__package__).joinpath("tunnel.py").read_bytes()


def tunnel_version() -> str:
    """The version string the script prints (``--version``), recorded in results."""
    match = re.search(rb'^VERSION = "([^"]+)"', tunnel_script(), re.M)
    return match.group(1).decode() if match else "unknown"


def auth_file_text(user: str, password: str) -> str:
    """The --auth-file content (upload it with mode 0600)."""
    if "\n" in user or "\n" in password or not user:
        raise ValueError("a TURN user or password must be one non-empty line")
    return f"{user}\n{password}\n"


def tunnel_command(
    script: str,
    *,
    listen: str,
    listen_port: int,
    server: str,
    server_port: int,
    transport: str,
    peer: str,
    peer_port: int,
    seconds: float,
    auth_file: str,
    python: str = "python3",
) -> list[str]:
    """argv of the tunnel: turncat's three URIs, a time bound and the credentials' file."""
    if transport not in ("udp", "tcp"):
        raise ValueError(f"turn_transport {transport!r}: udp or tcp")

    def host(addr: str) -> str:
        return f"[{addr}]" if ":" in addr else addr

    return [
        python,
        script,
        f"udp://{host(listen)}:{listen_port}",
        f"turn://{host(server)}:{server_port}?transport={transport}",
        f"udp://{host(peer)}:{peer_port}",
        "--time",
        f"{seconds:g}",
        "--auth-file",
        auth_file,
    ]


def turncat_command(
    turncat: str, *, listen_port: int, server: str, server_port: int, transport: str,
    peer: str, peer_port: int, user: str, password: str,
) -> list[str]:  # fmt: skip
    """STUNner's turncat, when the host has it (``netrun_turncat``).

    turncat takes the credentials in its URI, so they are in its argv: whoever can run
    ``ps`` on that host sees them. Prefer netrun's tunnel on shared hosts; netrun redacts
    this argv (``relay.redact``) before it logs or saves it.
    """
    if transport not in ("udp", "tcp"):
        raise ValueError(f"turn_transport {transport!r}: udp or tcp")
    creds = f"{quote(user, safe='')}:{quote(password, safe='')}"
    host = f"[{server}]" if ":" in server else server
    target = f"[{peer}]" if ":" in peer else peer
    return [
        turncat,
        f"udp://127.0.0.1:{listen_port}",
        f"turn://{creds}@{host}:{server_port}?transport={transport}",
        f"udp://{target}:{peer_port}",
    ]


@dataclass(frozen=True)
class Banner:
    """The tunnel's first line: the addresses it uses, the relayed one being the proof."""

    relayed: str
    relayed_port: int
    mapped: str | None
    listen_port: int
    transport: str


_BANNER = re.compile(
    r"^relayed (\S+):(\d+) mapped (\S+) listen \S+:(\d+) peer \S+ transport (udp|tcp)$"
)


def parse_banner(text: str) -> Banner | None:
    """The banner in the tunnel's stdout, or None when it never got that far."""
    for line in text.splitlines():
        match = _BANNER.match(line.strip())
        if match:
            mapped = None if match[3] == "unknown" else match[3].rsplit(":", 1)[0]
            return Banner(match[1], int(match[2]), mapped, int(match[4]), match[5])
    return None
