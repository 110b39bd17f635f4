"""The ``local`` transport: commands on the controller itself, no sshd (ansible_connection: local).

Same contract as the SSH transport: a deadline on every command, stdin from /dev/null (or
the become password), become through ``sudo``, and an interrupt that stops a running
command unless it is cleanup. The command's whole process group is killed at its deadline,
as closing an SSH channel would end a remote one.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from netrun.errors import Cancelled, CommandTimeout, ConnectError
from netrun.hosts.command import CommandResult, Interruptible
from netrun.hosts.privilege import checked, privileged
from netrun.hosts.shield import in_cleanup

if TYPE_CHECKING:
    from netrun.hosts.host import Host


class LocalTransport(Interruptible):
    """Runs a host's commands with ``sh -c`` on this machine."""

    def __init__(self, host: Host) -> None:
        self.host = host

    def connect(self) -> None:
        """Nothing to open; fails only when there is no sh to run commands with."""
        if shutil.which("sh") is None:
            raise ConnectError(self.host.name, "ansible_connection is local but sh is missing")

    def run(
        self, argv: Sequence[str] | str, *, timeout: float, sudo: bool = False, check: bool = True
    ) -> CommandResult:
        self._may_start(self.host.name)
        line, stdin = privileged(self.host, argv, sudo)
        started = time.monotonic()
        exited, out, err = self._exec(line, timeout, stdin)
        result = CommandResult(self.host.name, line, exited, out, err, time.monotonic() - started)
        user = os.environ.get("USER", "root")
        return checked(result, self.host, sudo=sudo, check=check, user=user)

    def _exec(self, line: str, timeout: float, stdin: bytes) -> tuple[int, str, str]:
        cancelled = self._watch()
        proc = subprocess.Popen(
            ["sh", "-c", line],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own group: a deadline ends its children too
        )
        deadline = time.monotonic() + timeout
        try:
            while True:
                try:
                    out, err = proc.communicate(stdin, timeout=0.05)
                    break
                except subprocess.TimeoutExpired:
                    stdin = b""  # already written
                if cancelled() and not in_cleanup():
                    raise Cancelled(self.host.name)
                if time.monotonic() > deadline:
                    raise CommandTimeout(self.host.name, line, timeout, "")
        finally:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
        return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")

    def put(self, local: Path, remote: str, *, timeout: float) -> None:
        try:
            shutil.copyfile(local, remote)
        except OSError as exc:
            raise ConnectError(
                self.host.name, f"copy of {local} to {remote} failed: {exc}"
            ) from None

    def alive(self) -> bool:
        return True

    def reconnect(self) -> None:
        """A local host never drops its connection."""

    def close(self) -> None:
        """Nothing to close."""
