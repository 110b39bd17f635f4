"""Reading iputils ping's text: the summary lines and every reply's round-trip time.

Built from real iputils 20221126 output (tests/fixtures/ping, captured by
tests/fixtures/capture_ping.sh). The summary gives min/avg/max/mdev; the per-reply lines give
the distribution the percentiles come from. A duplicate reply (``(DUP!)``) is not a round
trip of its own and is left out, as ping's own statistics leave it out of ``received``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from netrun.core.numeric import finite
from netrun.errors import ToolError

_STATS = re.compile(
    r"^(\d{1,12}) packets transmitted, (\d{1,12}) received,(?: \+(\d{1,12}) errors?,)?"
    r"(?: \+\d{1,12} duplicates,)?(?: \+\d{1,12} corrupted,)? ([0-9.]{1,20})% packet loss",
    re.MULTILINE,
)
_RTT = re.compile(
    r"^rtt min/avg/max/mdev = ([0-9.]{1,20})/([0-9.]{1,20})/([0-9.]{1,20})/([0-9.]{1,20}) ms",
    re.MULTILINE,
)
#: "64 bytes from 10.0.0.2: icmp_seq=3 ttl=64 time=0.038 ms"; "time=123 ms" above 100 ms.
_REPLY = re.compile(
    r"^\d{1,6} bytes from [^\n]{1,300}?icmp_seq=(\d{1,12})[^\n]{0,100}? time[=<]([0-9.]{1,20}) ms"
    r"(?P<dup> \(DUP!\))?",
    re.MULTILINE,
)
_ERROR = re.compile(r"^ping: (.{1,300})$", re.MULTILINE)
_NOT_FOUND = re.compile(r"command not found|: not found\b|No such file or directory")


class PingError(ToolError):
    """ping failed or printed no statistics; ``message`` without the output's tail."""

    def __init__(self, message: str, output: str = "") -> None:
        self.message = message
        super().__init__(message, output)


@dataclass(frozen=True)
class PingResult:
    """One ping run's summary lines and its replies' round-trip times."""

    transmitted: int
    received: int
    errors: int
    lost_percent: float
    rtt_min_ms: float
    rtt_avg_ms: float
    rtt_max_ms: float
    rtt_mdev_ms: float
    #: (icmp_seq, round-trip ms) of each first reply, in arrival order.
    replies: tuple[tuple[int, float], ...] = ()

    @property
    def rtts_ms(self) -> list[float]:
        return [rtt for _, rtt in self.replies]


def replies(stdout: str) -> tuple[tuple[int, float], ...]:
    """Every non-duplicate reply's (icmp_seq, ms); a line whose time is not a number is skipped."""
    out: list[tuple[int, float]] = []
    for match in _REPLY.finditer(stdout):
        if match["dup"]:
            continue
        try:
            rtt = finite(float(match[2]))
        except ValueError:
            continue
        if rtt is not None and rtt >= 0:
            out.append((int(match[1]), rtt))
    return tuple(out)


def parse(stdout: str, exited: int | None = None, stderr: str = "") -> PingResult:
    """The statistics of one run; PingError (with the output's tail) when there is none."""
    text = f"{stdout}\n{stderr}"
    stats = _STATS.search(stdout)
    if stats is None:
        if _NOT_FOUND.search(text) or exited == 127:
            raise PingError("ping not found; install it (apt-get install iputils-ping)", text)
        error = _ERROR.search(text)
        why = error[1].strip() if error else f"no statistics in its output (exit {exited})"
        raise PingError(f"ping failed: {why}", text)
    sent, received = int(stats[1]), int(stats[2])
    errors = int(stats[3] or 0)
    rtt = _RTT.search(stdout)
    if received == 0 or rtt is None:
        unreachable = "; destination unreachable" if errors else ""
        raise PingError(f"no reply: {sent} sent, 100% packet loss{unreachable}", text)
    try:
        mn, avg, mx, mdev = (float(x) for x in rtt.groups())
        lost = float(stats[4])
    except ValueError:
        raise PingError("ping printed statistics that are not numbers", text) from None
    return PingResult(sent, received, errors, lost, mn, avg, mx, mdev, replies(stdout))
