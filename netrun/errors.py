"""One error hierarchy: every expected failure is a NetrunError the CLI turns into one line.

Anything that is not a NetrunError is a bug; the CLI prints a short note and keeps the
traceback in the debug log.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The closest valid name to ``word``, for "did you mean" hints."""
    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return found[0] if found else None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """A ``; did you mean 'x'?`` suffix, or an empty string when nothing is close."""
    match = closest(word, choices)
    return f"; did you mean '{match}'?" if match else ""


def tail(text: str, lines: int = 5, width: int = 400) -> str:
    """The last few lines of tool output, folded to one line, for error messages."""
    kept = [line.strip() for line in text.strip().splitlines()[-lines:] if line.strip()]
    joined = " | ".join(kept)
    return joined if len(joined) <= width else "..." + joined[-width:]


class NetrunError(Exception):
    """An expected failure; its message is one plain line for the user."""


class InputError(NetrunError):
    """Bad input from the user (CLI exit code 2)."""

    def __init__(self, problems: str | Sequence[str]) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(self.problems))


class InventoryError(InputError):
    """The inventory file, group_vars or host_vars is wrong."""


class UnknownHostError(InventoryError, KeyError):
    """A host name that the inventory does not define."""

    def __str__(self) -> str:  # KeyError would add quotes around the message
        return "\n".join(self.problems)


class ScenarioError(InputError):
    """The scenario file is wrong; carries every problem found, one per line."""


class LockError(NetrunError):
    """Another netrun run holds what this one needs (exit 75)."""


class HostLeased(LockError):
    """Another netrun run measures on these hosts (netrun.hosts.lease): one line per host,
    naming the other run, its controller, user and start."""

    def __init__(self, held: dict[str, str], waited: float = 0.0) -> None:
        self.held = dict(held)
        self.waited = waited
        hosts = "; ".join(f"{name}: leased by {who}" for name, who in self.held.items())
        how = f"still, after waiting {waited:g}s" if waited else "at once"
        super().__init__(
            f"another netrun run measures on the host(s) this run needs ({hosts}); "
            f"refused {how}, nothing measured; wait for it, or pass --wait-for-hosts SECONDS"
        )


class HostError(NetrunError):
    """A failure that belongs to one host; the message names it."""

    def __init__(self, host: str, message: str) -> None:
        self.host = host
        self.message = message
        super().__init__(f"{host}: {message}")


class ConnectError(HostError):
    """The host could not be reached or logged into over SSH."""


class HostKeyError(ConnectError):
    """The host's SSH key is unknown or has changed."""


class AuthError(ConnectError):
    """SSH login was refused."""


class BecomeError(HostError):
    """sudo refused to run a command as ansible_become_user (so the command never ran)."""


class CommandError(HostError):
    """A remote command failed: names the command, its exit code and its output's tail."""

    def __init__(
        self, host: str, command: str, exited: int | None, stdout: str = "", stderr: str = ""
    ) -> None:
        self.command = command
        self.exited = exited
        self.stdout = stdout
        self.stderr = stderr
        how = "timed out" if exited is None else f"exited {exited}"
        out = tail(stderr) or tail(stdout)
        short = command if len(command) <= 120 else command[:117] + "..."
        super().__init__(host, f"command {how}: {short}" + (f": {out}" if out else ""))


class CommandTimeout(CommandError):
    """A remote command ran past its deadline and was stopped."""

    def __init__(self, host: str, command: str, timeout: float, stdout: str = "") -> None:
        super().__init__(host, command, None, stdout, f"no result after {timeout:g}s")
        self.timeout = timeout


class ToolError(NetrunError):
    """A tool is missing, or printed output that cannot be trusted; carries the tail."""

    def __init__(self, message: str, output: str = "") -> None:
        self.output = output
        text = message + (f" (output ends: {tail(output)})" if output.strip() else "")
        super().__init__(text)


class ModeError(NetrunError):
    """A mode could not set up or run its test (engine missing, container died, ...)."""


class MtuError(ModeError):
    """An MTU could not be set, or the path does not carry it."""


class Cancelled(NetrunError):
    """A command stopped because the run is being interrupted (a worker of a parallel run).

    A NetrunError, so the test's own error handling records it and tears its mode down.
    """

    def __init__(self, host: str) -> None:
        super().__init__(f"{host}: interrupted")
        self.host = host


class Interrupted(BaseException):
    """The run was stopped by a signal; ``code`` is the exit code to use (130, 143).

    A BaseException, like KeyboardInterrupt, so that ``except NetrunError`` never eats it.
    """

    def __init__(self, code: int = 130, what: str = "interrupted") -> None:
        super().__init__(what)
        self.code = code


def redact(text: str, secrets: Iterable[str]) -> str:
    """Replace every secret in ``text`` with ``****``; used on everything printed or logged."""
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, "****")
    return text
