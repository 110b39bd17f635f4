"""How netrun's SSH connections behave: timeouts, keepalives, host-key policy, retries."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from netrun.hosts.group import DEFAULT_FORKS


@dataclass(frozen=True)
class SSHSettings:
    """Connection settings shared by every host of a run."""

    connect_timeout: float = 10.0
    banner_timeout: float = 10.0
    auth_timeout: float = 10.0
    keepalive: int = 15
    accept_new_host_keys: bool = False
    #: Hosts connected, probed and swept at once (Ansible's ``forks``, ``-f``).
    forks: int = DEFAULT_FORKS
    known_hosts: Path = field(default_factory=lambda: Path("~/.ssh/known_hosts").expanduser())

    @classmethod
    def timed(
        cls, seconds: float, *, accept_new_host_keys: bool = False, forks: int = DEFAULT_FORKS
    ) -> SSHSettings:
        """Settings whose TCP connect, banner and login each get ``seconds``, as
        ``--connect-timeout`` asks."""
        return cls(
            connect_timeout=seconds,
            banner_timeout=seconds,
            auth_timeout=seconds,
            accept_new_host_keys=accept_new_host_keys,
            forks=forks,
        )

    @property
    def connect_deadline(self) -> float:
        """The longest one connection may take: TCP, banner and login, each with its own
        timeout, and 5 s of slack (a bound for threads that wait on a connect)."""
        return self.connect_timeout + self.banner_timeout + self.auth_timeout + 5
