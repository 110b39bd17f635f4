"""A sample's throughput over time, whatever tool measured it, and whose report it is.

iperf3 samples keep ``intervals`` ([start, end, bits/s, ...] per interval, the client's
report); iperf2 samples keep ``details.series`` (one dict per flow and interval, from the
server's report, or the client's copy of it: ``details.source``). A tool that reports no
intervals (ping) has none, which is not a failure.
"""

from __future__ import annotations

from typing import Any

from netrun.core.metrics import finite


def points(sample: dict[str, Any]) -> list[tuple[float, float]]:
    """(seconds since the start, Mbit/s) at each interval's end; [] without intervals."""
    out: list[tuple[float, float]] = []
    intervals = sample.get("intervals")
    if isinstance(intervals, list) and intervals:
        for iv in intervals:
            if isinstance(iv, list | tuple) and len(iv) >= 3:
                end, bps = finite(iv[1]), finite(iv[2])
                if end is not None and bps is not None:
                    out.append((end, bps / 1e6))
        return out
    details = sample.get("details")
    series = details.get("series") if isinstance(details, dict) else None
    if not isinstance(series, list):
        return out
    rows = [r for r in series if isinstance(r, dict)]
    summed = [r for r in rows if str(r.get("flow")).upper() == "SUM"]
    by_end: dict[float, float] = {}
    for row in summed or rows:  # the [SUM] lines, else every flow added up per interval
        end, bps = finite(row.get("end")), finite(row.get("bits_per_second"))
        if end is not None and bps is not None:
            by_end[end] = by_end.get(end, 0.0) + bps / 1e6
    return sorted(by_end.items())


def whose(sample: dict[str, Any]) -> str:
    """Whose report the intervals are: "iperf3 client", "iperf2 server"..."""
    tool = str(sample.get("tool") or "iperf3")
    details = sample.get("details")
    source = details.get("source") if isinstance(details, dict) else None
    if isinstance(sample.get("intervals"), list) and sample.get("intervals"):
        if isinstance(side := sample.get("intervals_side"), str):  # a run that says whose
            return f"{tool} {side}"
        options = sample.get("options") if isinstance(sample.get("options"), dict) else {}
        end = "receiver" if (options or {}).get("reverse") else "sender"
        return f"{tool} client ({end})"
    return f"{tool} {source}" if source else tool
