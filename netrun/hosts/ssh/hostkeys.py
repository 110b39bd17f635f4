"""Host keys: trusting a new one on first use without losing another thread's, and the
name a host has in known_hosts (what ``ssh-keygen -R`` needs)."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from netrun.hosts.host import Host

log = logging.getLogger("netrun.hosts.transport")

_KNOWN_HOSTS_LOCK = threading.Lock()


class TrustOnFirstUse:
    """Record a host key seen for the first time by appending one line to known_hosts.

    paramiko's AutoAddPolicy rewrites the whole file from the client's copy; with hosts
    connected in parallel, one thread's rewrite would drop keys another just saved.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def missing_host_key(self, client: Any, hostname: str, key: Any) -> None:
        client.get_host_keys().add(hostname, key.get_name(), key)
        line = f"{hostname} {key.get_name()} {key.get_base64()}\n"
        with _KNOWN_HOSTS_LOCK, open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)
        log.info("recorded new host key for %s in %s", hostname, self.path)


def known_hosts_name(host: Host) -> str:
    return host.address if host.port == 22 else f"[{host.address}]:{host.port}"
