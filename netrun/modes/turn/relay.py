"""A coturn relay netrun starts for one run: its config file and its command.

The config goes in a 0600 file so the per-run password never shows in ``ps``. It is no open
proxy: every peer address is denied except the test's server(s). coturn 4.6.1 refuses
``allow-loopback-peers`` with its telnet CLI on and no CLI password, so the CLI is off
(``no-cli``), as are the TLS/DTLS listeners netrun has no certificates for.
"""

from __future__ import annotations

import ipaddress
import secrets
from collections.abc import Sequence


def credentials() -> tuple[str, str]:
    """A fresh user and password for one run's relay."""
    return f"netrun-{secrets.token_hex(4)}", secrets.token_urlsafe(18)


def config_text(
    *,
    listen_ip: str,
    port: int,
    user: str,
    password: str,
    peers: Sequence[str],
    pidfile: str,
    logfile: str,
    realm: str = "netrun",
    min_port: int = 49152,
    max_port: int = 65535,
) -> str:
    """turnserver's config: long-term credentials, relaying only to ``peers``."""
    if not peers:
        raise ValueError("a relay needs at least one allowed peer")
    addresses = [str(ipaddress.ip_address(p)) for p in peers]  # ValueError on a bad one
    for value in (user, password, realm, pidfile, logfile):
        if any(c in value for c in "\n\r") or not value:
            raise ValueError("relay settings must be one non-empty line each")
    lines = [
        f"listening-ip={ipaddress.ip_address(listen_ip)}",
        f"relay-ip={ipaddress.ip_address(listen_ip)}",
        f"listening-port={int(port)}",
        f"min-port={int(min_port)}",
        f"max-port={int(max_port)}",
        "no-cli",
        "no-tls",
        "no-dtls",
        "no-multicast-peers",
        "lt-cred-mech",
        f"realm={realm}",
        f"user={user}:{password}",
        "denied-peer-ip=0.0.0.0-255.255.255.255",
        "denied-peer-ip=::-ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
        *(f"allowed-peer-ip={a}" for a in addresses),
        f"pidfile={pidfile}",
        f"log-file={logfile}",
        "simple-log",
        "no-stdout-log",
    ]
    if any(ipaddress.ip_address(a).is_loopback for a in addresses):
        lines.append("allow-loopback-peers")
    return "\n".join(lines) + "\n"


def command(config_path: str, userdb: str, binary: str = "turnserver") -> list[str]:
    """turnserver reading ``config_path``; ``userdb`` keeps its SQLite file in the run dir."""
    return [binary, "-c", config_path, "--userdb", userdb]


def redact(text: str, *secrets_: str) -> str:
    """``text`` with every given secret replaced, for logs kept in the results."""
    for secret in secrets_:
        if secret:
            text = text.replace(secret, "***")
    return text
