"""What ``load:`` on a latency test asks for: the bulk iperf3 flow beside the measurement.

``load: true`` (or ``{}``) is 4 TCP streams up, client to server, like one direction of
flent's RRUL; a mapping sets ``streams``, ``direction`` (up: the test's client sends, as the
test's own probes go; down: iperf3 -R; both: --bidir), ``protocol`` (tcp, udp) and
``bitrate`` (iperf3 -b, per stream; a UDP load without one sends iperf3's 1 Mbit/s
default, which loads nothing, so it is required there). Each bad key is its own line
(``problems``), naming the key and the fix; the option's own check only sees the shape.
Which of a tool's metrics are its latency is the tool's word (Tool.latency).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from netrun.core.options import Option, expecting, show, size_value

DIRECTIONS = ("up", "down", "both")
PROTOCOLS = ("tcp", "udp")
MAX_STREAMS = 128
DEFAULTS: dict[str, Any] = {"streams": 4, "direction": "up", "protocol": "tcp", "bitrate": None}
KEYS = tuple(DEFAULTS)

#: netperf tests that measure latency (TCP_STREAM is a bulk transfer itself).
NETPERF_LATENCY = ("TCP_RR", "UDP_RR", "TCP_CRR")


@dataclass(frozen=True)
class Load:
    """The bulk flow of one test: streams, direction, protocol and bitrate (None: unlimited)."""

    streams: int = 4
    direction: str = "up"
    protocol: str = "tcp"
    bitrate: str | int | None = None

    def describe(self) -> str:
        rate = f" at {self.bitrate}" if self.bitrate is not None else ""
        return f"{self.streams} {self.protocol} stream(s) {self.direction}{rate}"


def _shape(value: Any) -> bool:
    return value is None or isinstance(value, (bool, dict))


OPTION = Option(
    "load",
    (bool, dict),
    None,
    "a bulk iperf3 flow on the same pair while the latency is measured a second time: "
    "true, or {streams: 4, direction: up|down|both, protocol: tcp|udp, bitrate (per stream)}",
    nullable=True,
    check=expecting("true, false or a mapping {streams, direction, protocol, bitrate}", _shape),
)


def of(options: Mapping[str, Any]) -> Load | None:
    """The test's load, or None when it has none (``load`` unset, null or false)."""
    value = options.get("load")
    if value is None or value is False:
        return None
    given = value if isinstance(value, dict) else {}
    merged = {**DEFAULTS, **{k: v for k, v in given.items() if k in DEFAULTS}}
    return Load(**merged)


def problems(tool: str, options: Mapping[str, Any]) -> list[str]:
    """One line per bad ``load`` key (the option's shape is checked on its own). A mode
    whose path a load cannot take says so itself (a Cannot record with ``load``: turn)."""
    value = options.get("load")
    if value is None or value is False or not _shape(value):
        return []
    out = []
    if tool == "netperf" and options.get("test") not in NETPERF_LATENCY:
        out.append(
            f"load: needs a latency test (test: {', '.join(NETPERF_LATENCY)}), not "
            f"{show(options.get('test'))}, which is a bulk transfer itself"
        )
    if not isinstance(value, dict):
        return out
    for key in value:
        if key not in DEFAULTS:
            out.append(f"load: unknown key {show(key)}; its keys: {', '.join(KEYS)}")
    streams = value.get("streams", 4)
    if isinstance(streams, bool) or not isinstance(streams, int) or not 1 <= streams <= MAX_STREAMS:
        out.append(f"load.streams must be an integer from 1 to {MAX_STREAMS}, got {show(streams)}")
    for key, choices in (("direction", DIRECTIONS), ("protocol", PROTOCOLS)):
        if key in value and value[key] not in choices:
            out.append(f"load.{key} must be one of {', '.join(choices)}, got {show(value[key])}")
    rate = value.get("bitrate")
    if rate is not None and (isinstance(rate, bool) or size_value(rate) is None):
        out.append(f"load.bitrate must be bits/s such as 100M or 500000, got {show(rate)}")
    elif value.get("protocol") == "udp" and rate is None:
        out.append("load.bitrate must be set for a udp load (iperf3 sends 1 Mbit/s without -b)")
    return out
