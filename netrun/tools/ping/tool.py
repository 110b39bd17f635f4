"""ping (iputils): ICMP round-trip time from the client host to the server's data address.

The proof that a tool needs no core change: this module, one line in tools/__init__.py,
docs and tests. It runs in bare-metal mode only (the hosts' own addresses); the parser was
built from real iputils 20221126 output (tests/fixtures/ping, captured by
tests/fixtures/capture_ping.sh): replies, partial loss, 100% loss, unreachable, refusals.

Decided on purpose:
- no reply at all (100% loss, unreachable) fails the sample: there is no RTT to record,
  and a nightly run must not pass on a dead path;
- ``interval`` below 0.2 s is refused. iputils refuses an interval below its
  MINUSERINTERVAL to anyone but root: 2 ms since iputils 20210202, 200 ms before (RHEL 8,
  Debian 11), as busybox and other pings still do. netrun cannot know at validation time
  whether a host's login is root (the lab's are), so it holds every host to 200 ms;
- ``-w`` is never passed: with a deadline, iputils' ``-c`` counts replies, not probes, so
  a lossy path would send more than ``count``. The remote ``timeout`` bounds the run.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from netrun.core.measurement import Measurement
from netrun.core.metrics import Metric
from netrun.core.numeric import percentile
from netrun.core.options import Option, expecting, integer
from netrun.core.programs import Program
from netrun.tools.base import Latency, Tool
from netrun.tools.load import spec as load_spec
from netrun.tools.ping.parse import PingError, parse

if TYPE_CHECKING:
    from netrun.core.spec import TestSpec
    from netrun.tools.base import Placement

#: iputils' non-root floor before 2021 (200 ms), the portable one: see the module docstring.
MIN_INTERVAL = 0.2
#: The largest ICMP payload an IPv4 packet holds (65535 - 20 - 8); iputils errors above it.
MAX_SIZE = 65507
MAX_COUNT = 100_000
#: Seconds a reply may take (-W); also the slack of the run's deadline.
REPLY_WAIT = 2

# fmt: off
OPTIONS: tuple[Option, ...] = (
    Option("count", int, 10, "echo requests per run (ping -c)", check=integer(1, MAX_COUNT)),
    Option("interval", (int, float), 1.0, "seconds between requests (ping -i); >= 0.2, "
           "what ping allows a non-root login", check=expecting(
               "a number of seconds from 0.2 to 60 (ping refuses a shorter interval to a "
               "non-root login: 200 ms in iputils before 2021, busybox and others)",
               lambda v: MIN_INTERVAL <= max(-1.0, min(v, 1e9)) <= 60)),
    Option("size", int, 56, "ICMP payload bytes (ping -s)", check=integer(0, MAX_SIZE)),
    load_spec.OPTION,  # latency under load (netrun.tools.load)
)

#: ping's round-trip times move by tens of microseconds with the hosts' scheduling: a
#: change under 0.05 ms is never judged (see Metric.floor).
RTT_FLOOR_MS = 0.05
METRICS: tuple[Metric, ...] = (
    Metric("rtt_avg_ms", "ms", "lower", "mean round-trip time of the replies",
           tolerance="20%", digits=3, floor=RTT_FLOOR_MS),
    Metric("rtt_min_ms", "ms", "lower", "shortest round-trip time", tolerance="20%",
           digits=3, floor=RTT_FLOOR_MS),
    Metric("rtt_max_ms", "ms", "lower", "longest round-trip time", tolerance="50%", digits=3,
           floor=RTT_FLOOR_MS),
    Metric("rtt_mdev_ms", "ms", "lower", "mean deviation of the round-trip times (ping's mdev)",
           tolerance="50%", digits=3, floor=RTT_FLOOR_MS),
    Metric("lost_percent", "%", "lower", "echo requests without a reply", tolerance=1.0,
           digits=2),
    # the same quantity as the headline rtt_avg_ms (one central figure of the same replies):
    # judged once, through the headline, unless a scenario names it in tolerances:
    Metric("rtt_p50_ms", "ms", "lower", "median round-trip time of the replies",
           digits=3, floor=RTT_FLOOR_MS),
    Metric("rtt_p90_ms", "ms", "lower", "90th percentile round-trip time (>= 10 replies)",
           tolerance="50%", digits=3, floor=RTT_FLOOR_MS),
    Metric("rtt_p99_ms", "ms", "lower", "99th percentile round-trip time (>= 100 replies)",
           tolerance="50%", digits=3, floor=RTT_FLOOR_MS),
)
# fmt: on

#: percentile -> its metric. A p-th percentile is reported only from at least 100/(100-p)
#: replies (p90 from 10, p99 from 100): from fewer it would be the maximum under another name.
PERCENTILES = {50: "rtt_p50_ms", 90: "rtt_p90_ms", 99: "rtt_p99_ms"}


def percentiles(rtts: list[float]) -> tuple[dict[str, float | None], dict[str, str]]:
    """The RTT percentile metrics of one run's replies, and why any is unavailable."""
    values: dict[str, float | None] = {}
    why: dict[str, str] = {}
    for q, name in PERCENTILES.items():
        needed = round(100 / (100 - q))
        if len(rtts) >= needed:
            values[name] = percentile(rtts, q)
        else:
            values[name] = None
            why[name] = f"{len(rtts)} replies; a p{q} needs at least {needed}"
    return values, why


def command(target: str, count: int, interval: float, size: int, binary: str = "ping") -> list[str]:
    """The argv: numeric output (-n), so no name lookups between probes."""
    return [binary, "-n", "-c", str(count), "-i", f"{interval:g}", "-s", str(size),
            "-W", str(REPLY_WAIT), target]  # fmt: skip


def _deadline(test: TestSpec) -> float:
    count, interval = int(test.value("count")), float(test.value("interval"))
    if test.value("timeout") is not None:
        return float(test.value("timeout"))
    return count * interval + REPLY_WAIT + 10


def _command(mode: Placement) -> list[str]:
    """The ping to the server end's address, as the client end runs it."""
    test = mode.test
    return command(mode.end("server").address, test.value("count"), test.value("interval"),
                   test.value("size"))  # fmt: skip


def argv(mode: Placement) -> list[str]:
    """The client end's ping to the server end's address."""
    return mode.end("client").wrap(_command(mode))


def measure(mode: Placement, repeat: int) -> Measurement:
    """One run from the client end to the server end's address."""
    deadline = _deadline(mode.test)
    client = mode.end("client")
    # its pid in the one pid-file format at its end, as every process netrun starts: a run
    # killed meanwhile leaves it to the next run's sweep or `netrun cleanup`, not to its bound;
    # coreutils timeout bounds it on the host too, should the controller disappear
    recorded, _ = client.recording(_command(mode), f"ping-t{mode.test.index}r{repeat}")
    bounded = ["timeout", "-k", "5", f"{deadline:g}", *recorded]
    res = client.run(shlex.join(bounded), timeout=deadline + 15, check=False)
    try:
        r = parse(res.stdout, res.exited, res.stderr)
    except PingError as exc:
        if res.exited == 124:
            exc = PingError(f"ping did not finish within {deadline:g}s", exc.output)
        raise PingError(f"{mode.client.name}: {exc.message}", exc.output) from None
    metrics: dict[str, float | None] = {
        "rtt_avg_ms": r.rtt_avg_ms,
        "rtt_min_ms": r.rtt_min_ms,
        "rtt_max_ms": r.rtt_max_ms,
        "rtt_mdev_ms": r.rtt_mdev_ms,
        "lost_percent": r.lost_percent,
    }
    spread, why = percentiles(r.rtts_ms)
    metrics.update(spread)
    # every reply's RTT is kept, so a report can draw the distribution (not just its summary)
    details = {"target": mode.end("server").address, "transmitted": r.transmitted,
               "received": r.received, "rtt_count": len(r.replies),
               "rtts_ms": [[seq, rtt] for seq, rtt in r.replies]}  # fmt: skip
    return Measurement(res.stdout, r, details, metrics, why)


def preview(mode: Placement) -> list[tuple[str, str]]:
    """The client end's ping; the server end runs nothing (its kernel answers)."""
    return [("server", "(none: its kernel answers)"), ("client", shlex.join(argv(mode)))]


def describe(test: TestSpec) -> str:
    return f"pinging {test.value('count')} x {test.value('interval'):g}s"


TOOL = Tool(
    name="ping",
    options=OPTIONS,
    metrics=METRICS,
    measure=measure,
    describe=describe,
    protocol="icmp",
    needs={"client": ("ping",)},  # the server only answers: its kernel does
    installs=(Program("ping", None, "iputils-ping", "iputils", version_flag="-V"),),
    preview=preview,
    latency=Latency("rtt_p50_ms", "rtt_p99_ms"),
)
