"""iperf2: latency, jitter and loss at a fixed packet rate, read from its text report.

iperf2 (Debian's ``iperf``) is the only common tool that reports one-way UDP latency at a set
packet rate (``-e --trip-times``), which is what a TURN relay test needs. It has no JSON, so
this module reads the server's enhanced report line by line. The line's head is stable from
2.0.13 to 2.2 (interval, transfer, bandwidth, jitter, lost/total, latency, pps); the tail
changed (``inP NetPwr``, ``Rx/inP NetPwr``, ``Rx/inP Read/Timeo/Trunc NetPwr``) and is kept
verbatim, never read as a metric. A report line that does not match is an error carrying the
raw text: a guessed number would be worse than none.

The commands whose output this reads are built in netrun.tools.iperf2.command.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from netrun.core import numeric
from netrun.core.metrics import Metric
from netrun.errors import ToolError

#: Error kinds ``Iperf2Error.kind`` takes.
KINDS = ("refused", "no-ack", "incomplete", "bad-output", "no-output")


class Iperf2Error(ToolError):
    """iperf2 failed or printed output that cannot be trusted; ``kind`` says which way."""

    def __init__(self, kind: str, message: str, output: str = "") -> None:
        self.kind = kind
        self.message = message
        super().__init__(message, output)


#: iperf2's one-way latencies carry both hosts' timestamping: a change under 0.05 ms is
#: never judged (see Metric.floor).
LATENCY_FLOOR_MS = 0.05
# fmt: off
METRICS: tuple[Metric, ...] = (
    Metric("throughput_bps", "bit/s", "higher", "UDP payload rate the server received",
           tolerance="5%", scale=1e6, shown_unit="Mbit/s", digits=3),
    Metric("jitter_ms", "ms", "lower", "RFC 3550 inter-arrival jitter seen by the server",
           tolerance=1.0, digits=3),
    # lost restates lost_percent (lost / total): judged through it, on the worst repeat
    Metric("lost", "packets", "lower", "datagrams the server never received", digits=0),
    Metric("total", "packets", "higher", "datagrams the client sent (by sequence number)",
           tolerance="5%", digits=0),
    Metric("lost_percent", "%", "lower", "lost / total, computed from the counts",
           tolerance=1.0, digits=2),
    Metric("latency_avg_ms", "ms", "lower", "mean one-way latency (needs synced clocks)",
           tolerance="20%", digits=3, floor=LATENCY_FLOOR_MS),
    Metric("latency_min_ms", "ms", "lower", "smallest one-way latency", tolerance="20%",
           digits=3, floor=LATENCY_FLOOR_MS),
    Metric("latency_max_ms", "ms", "lower", "largest one-way latency", tolerance="50%",
           digits=3, floor=LATENCY_FLOOR_MS),
    Metric("latency_stdev_ms", "ms", "lower", "standard deviation of one-way latency",
           tolerance="50%", digits=3, floor=LATENCY_FLOOR_MS),
    # pps restates the headline (received datagrams x length): judged through it, with its
    # confidence-interval and noise rules, unless a scenario names it in tolerances:
    Metric("pps", "packets/s", "higher", "datagrams per second the server received",
           digits=0),
    Metric("out_of_order", "packets", "lower", "datagrams that arrived after a later one",
           tolerance=100, digits=0),
)
# fmt: on
METRIC_NAMES = tuple(m.name for m in METRICS)


@dataclass(frozen=True)
class Interval:
    """One report line of one flow (or the [SUM] of flows)."""

    flow: str
    start: float
    end: float
    bits_per_second: float
    jitter_ms: float | None
    lost: int | None
    total: int | None
    latency_ms: tuple[float, float, float, float] | None  # avg, min, max, stdev
    pps: float | None
    tail: str = ""


@dataclass(frozen=True)
class Iperf2Result:
    """What one iperf2 UDP test measured, from the server's (or the client's) report."""

    source: str  # "server" or "client (server report)"
    metrics: Mapping[str, float | int | None]
    unavailable: Mapping[str, str]  # metric -> why it is null
    intervals: tuple[Interval, ...]  # per-second series (all flows)
    flows: tuple[Interval, ...]  # the final line of each flow
    peers: tuple[str, ...]  # "ADDR port N" of each flow, as the server saw it
    peer_seen: str | None  # the one address every flow came from, else None
    sent: int | None  # datagrams the client says it sent
    warnings: tuple[str, ...] = field(default=())

    @property
    def received(self) -> int:
        """Datagrams the server received: its total less the lost (0 where it counts none;
        netrun.tools.base.PeersSeen, a relay mode's proof)."""
        return int(self.metrics.get("total") or 0) - int(self.metrics.get("lost") or 0)

    def details(self) -> dict[str, Any]:
        """What results.json keeps beside the metrics: the series, the peers, the proof."""
        return {
            "source": self.source,
            "peer_seen": self.peer_seen,
            "peers": list(self.peers),
            "sent": self.sent,
            "unavailable": dict(self.unavailable),
            "warnings": list(self.warnings),
            "series": [
                {
                    "flow": i.flow,
                    "start": i.start,
                    "end": i.end,
                    "bits_per_second": i.bits_per_second,
                    "jitter_ms": i.jitter_ms,
                    "lost": i.lost,
                    "total": i.total,
                    "pps": i.pps,
                    "latency_ms": list(i.latency_ms) if i.latency_ms else None,
                }
                for i in self.intervals
            ],
        }


# -- parsing --------------------------------------------------------------------------------
_NUM = r"\d+(?:\.\d+)?(?:[eE][+-]?\d+)?"
_HEAD = re.compile(
    rf"^\[\s*(?P<flow>\d+|SUM(?:-\d+)?)\]\s+(?P<start>{_NUM})-(?P<end>{_NUM})\s+sec\b"
)
_SERVER = re.compile(
    rf"^\[\s*(?P<flow>\d+|SUM(?:-\d+)?)\]\s+(?P<start>{_NUM})-(?P<end>{_NUM})\s+sec\s+"
    rf"(?P<xfer>{_NUM})\s+(?P<xunit>[KMGT]?Bytes)\s+(?P<bw>{_NUM})\s+(?P<bunit>[KMGT]?bits)/sec\s+"
    rf"(?P<jitter>{_NUM})\s+ms\s+(?P<lost>-?\d+)/\s*(?P<total>\d+)\s+\((?P<pct>{_NUM})%\)\s+"
    rf"(?:(?P<lat>{_NUM}/\s*{_NUM}/\s*{_NUM}/\s*{_NUM})|-/-/-/-)\s+ms\s+"
    rf"(?P<pps>{_NUM})\s+pps\b(?P<tail>.*)$"
)
_CLIENT = re.compile(
    rf"^\[\s*(?P<flow>\d+|SUM(?:-\d+)?)\]\s+(?P<start>{_NUM})-(?P<end>{_NUM})\s+sec\s+"
    rf"(?P<xfer>{_NUM})\s+(?P<xunit>[KMGT]?Bytes)\s+(?P<bw>{_NUM})\s+(?P<bunit>[KMGT]?bits)/sec"
    rf"(?:\s+(?P<writes>\d+)/(?P<errs>\d+)\s+(?P<pps>{_NUM})\s+pps)?\s*$"
)
_OOO = re.compile(
    rf"^\[\s*(\w+)\]\s+({_NUM})-({_NUM})\s+sec\s+(\d+)\s+datagrams received out-of-order"
)
_CONNECTED = re.compile(
    r"^\[\s*(\d+)\]\s+local\s+(\S+?)(?:%\S+)?\s+port\s+(\d+)\s+"
    r"connected with\s+(\S+)\s+port\s+(\d+)"
)
_LISTEN = re.compile(r"^Server listening on UDP port (\d+)")
_SENT = re.compile(r"^\[\s*(\d+)\]\s+Sent (\d+) datagrams")
TRIP_TIMES_HINT = (
    " (iperf2 ignored --trip-times: the two clocks differ by more than it accepts; sync them)"
)
_SCALE = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def _bad(line: str, text: str) -> Iperf2Error:
    return Iperf2Error("bad-output", f"cannot parse iperf2 output: {line.strip()!r}", text)


def _float(raw: str, line: str, text: str) -> float:
    value = numeric.finite(float(raw.replace(" ", "")))
    if value is None:
        raise _bad(line, text)
    return value


def _whole(raw: str, line: str, text: str) -> int:
    value = numeric.whole(int(raw)) if len(raw) < 20 else None
    if value is None or value < 0:
        raise _bad(line, text)
    return value


def _server_line(line: str, text: str) -> Interval:
    m = _SERVER.match(line)
    if not m:
        raise _bad(line, text)
    lat = None
    if m["lat"]:
        values = [_float(v, line, text) for v in m["lat"].split("/")]
        lat = (values[0], values[1], values[2], values[3])
    lost, total = _whole(m["lost"], line, text), _whole(m["total"], line, text)
    if lost > total:
        raise _bad(line, text)
    return Interval(
        flow=m["flow"],
        start=_float(m["start"], line, text),
        end=_float(m["end"], line, text),
        bits_per_second=_float(m["bw"], line, text) * _SCALE[m["bunit"][:-4]],
        jitter_ms=_float(m["jitter"], line, text),
        lost=lost,
        total=total,
        latency_ms=lat,
        pps=_float(m["pps"], line, text),
        tail=m["tail"].strip(),
    )


def _client_line(line: str, text: str) -> Interval:
    m = _CLIENT.match(line)
    if not m:
        raise _bad(line, text)
    return Interval(
        flow=m["flow"],
        start=_float(m["start"], line, text),
        end=_float(m["end"], line, text),
        bits_per_second=_float(m["bw"], line, text) * _SCALE[m["bunit"][:-4]],
        jitter_ms=None,
        lost=None,
        total=None,
        latency_ms=None,
        pps=_float(m["pps"], line, text) if m["pps"] else None,
    )


def _finals(lines: list[Interval]) -> tuple[dict[str, Interval], list[Interval]]:
    """Each flow's final report (from 0 to its last end, printed last) and the series."""
    finals: dict[str, Interval] = {}
    for item in lines:
        if item.start == 0 and (item.flow not in finals or item.end >= finals[item.flow].end):
            finals[item.flow] = item
    series = [item for item in lines if item is not finals.get(item.flow)]
    return finals, series


def parse(text: str, *, side: str = "server", expect_seconds: float | None = None) -> Iperf2Result:
    """The test's metrics from a server's output, or from a client's "Server Report".

    ``expect_seconds`` (the client's ``-t``) rejects a report that stops early, e.g. a server
    killed mid-run, whose last line would otherwise look like a whole (short) test.
    """
    if side not in ("server", "client"):
        raise ValueError(f"side {side!r}: server or client")
    if not text.strip():
        raise Iperf2Error("no-output", "iperf2 printed nothing")
    listen_port: str | None = None
    peers: list[str] = []
    reports: list[Interval] = []
    client_lines: list[Interval] = []
    ooo: list[tuple[str, float, float, int]] = []
    sent: int | None = None
    warnings: list[str] = []
    in_server_report = side == "server"
    for raw in text.splitlines():
        line = raw.strip()
        if m := _LISTEN.match(line):
            listen_port = m[1]
        elif m := _CONNECTED.match(line):
            # a server's own flows only: its local port is the one it listens on
            if side == "client" or listen_port in (None, m[3]):
                peers.append(f"{m[4]} port {m[5]}")
        elif m := _OOO.match(line):
            ooo.append((m[1], float(m[2]), float(m[3]), _whole(m[4], line, text)))
        elif m := _SENT.match(line):
            sent = (sent or 0) + _whole(m[2], line, text)
        elif line.endswith("Server Report:"):
            in_server_report = True
        elif "WARN" in line:
            warnings.append(line)
        elif _HEAD.match(line):
            if "ms" in line.split("sec", 1)[1] and in_server_report:
                try:
                    reports.append(_server_line(line, text))
                except Iperf2Error as err:
                    if any("ignore --trip-times" in w for w in warnings):
                        err.message += TRIP_TIMES_HINT
                        err.args = (err.args[0] + TRIP_TIMES_HINT,)
                    raise
            elif side == "client" or _CLIENT.match(line):
                # the server prints a client-style [SUM] (Write/Err) line with -P: not a report
                client_lines.append(_client_line(line, text))
            else:
                raise _bad(line, text)
    source = "server" if side == "server" else "client (server report)"
    if not reports:
        if "Connection refused" in text:
            raise Iperf2Error(
                "refused", "no iperf2 server listening (connection refused; stopped?)", text
            )
        if "did not receive ack" in text:
            raise Iperf2Error("no-ack", "iperf2 server never acknowledged the test", text)
        raise Iperf2Error("no-output", "iperf2 printed no UDP latency report", text)
    finals, series = _finals([r for r in reports if not r.flow.startswith("SUM")])
    if not finals:  # per-second lines only: the run never printed its whole-test report
        raise Iperf2Error("incomplete", "iperf2 printed no whole-test report (from 0 s)", text)
    if expect_seconds is not None:
        short = [f for f in finals.values() if f.end < 0.9 * expect_seconds]
        if short:
            raise Iperf2Error(
                "incomplete",
                f"iperf2 report ends at {short[0].end:g} s of a {expect_seconds:g} s test "
                "(server stopped mid-run?)",
                text,
            )
    metrics, unavailable = pool(list(finals.values()), ooo)
    addresses = {p.split(" port ")[0] for p in peers}
    return Iperf2Result(
        source=source,
        metrics=metrics,
        unavailable=unavailable,
        intervals=tuple(series),
        flows=tuple(finals.values()),
        peers=tuple(peers),
        peer_seen=addresses.pop() if len(addresses) == 1 else None,
        sent=sent,
        warnings=tuple(warnings),
    )


def pool(
    flows: list[Interval], ooo: list[tuple[str, float, float, int]]
) -> tuple[dict[str, Any], dict[str, str]]:
    """Flows combined: counts and rates add up, latency pools, jitter is the worst flow's
    (one run's ``-P`` streams, or a fan test's flows: netrun.tools.iperf2.flows)."""
    lost = sum(f.lost or 0 for f in flows)
    total = sum(f.total or 0 for f in flows)
    out: dict[str, Any] = {
        "throughput_bps": sum(f.bits_per_second for f in flows),
        "jitter_ms": max(f.jitter_ms or 0.0 for f in flows),
        "lost": lost,
        "total": total,
        # iperf prints the share with two digits (1e+02%), so compute it from the counts
        "lost_percent": 100.0 * lost / total if total else None,
        "pps": sum(f.pps or 0.0 for f in flows),
        "out_of_order": sum(
            n
            for flow, start, end, n in ooo
            if any(f.flow == flow and f.start == start and f.end == end for f in flows)
        ),
    }
    why: dict[str, str] = {}
    if not total:
        why["lost_percent"] = "the server counted no datagrams"
    timed = [(f, (f.total or 0) - (f.lost or 0)) for f in flows if f.latency_ms]
    timed = [(f, n) for f, n in timed if n > 0]
    names = ("latency_avg_ms", "latency_min_ms", "latency_max_ms", "latency_stdev_ms")
    if not timed:
        for name in names:
            out[name] = None
            why[name] = "iperf2 printed no latency (-/-/-/-): no datagram carried a timestamp"
        return out, why
    count = sum(n for _, n in timed)
    mean = sum(f.latency_ms[0] * n for f, n in timed if f.latency_ms) / count
    square = sum(
        n * (f.latency_ms[3] ** 2 + f.latency_ms[0] ** 2) for f, n in timed if f.latency_ms
    )
    out["latency_avg_ms"] = timed[0][0].latency_ms[0] if len(timed) == 1 else mean  # type: ignore[index]
    out["latency_min_ms"] = min(f.latency_ms[1] for f, _ in timed if f.latency_ms)
    out["latency_max_ms"] = max(f.latency_ms[2] for f, _ in timed if f.latency_ms)
    pooled = math.sqrt(max(square / count - mean**2, 0.0))
    out["latency_stdev_ms"] = timed[0][0].latency_ms[3] if len(timed) == 1 else pooled  # type: ignore[index]
    return out, why
