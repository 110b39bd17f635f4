"""Rendering a results document: the side-by-side table, from results.json alone.

Nothing here talks to hosts, so any saved run can be rendered again later.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from typing import Any

from tabulate import tabulate

HEADERS = [
    "test",
    "mode",
    "client→server",
    "proto",
    "Mbit/s",
    "% line",
    "% bare",
    "ceiling Mbit/s",
    "retr",
    "CPU c/s %",
    "jitter ms / loss %",
    "status",
]


def group_samples(tests: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Samples by test name, in the order tests first appear."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for sample in tests:
        groups.setdefault(sample["name"], []).append(sample)
    return groups


def _median(values: Iterable[float | int | None]) -> float | None:
    known = [float(v) for v in values if v is not None]
    return statistics.median(known) if known else None


def _fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def summarize(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """One row's numbers from a test's samples (medians over the ok repeats)."""
    ok = [s for s in samples if s["status"] == "ok"]
    first = samples[0]
    bps = _median(s["throughput_bps"] for s in ok)
    failed = len(samples) - len(ok)
    if not ok:
        status = "FAILED: " + (first.get("error") or "failed")
    elif failed:
        status = f"{failed}/{len(samples)} failed"
    else:
        status = "ok"
    return {
        "name": first["name"],
        "mode": first["mode"],
        "pair": f"{first['client']}→{first['server']}",
        "protocol": first["protocol"],
        "mbps": None if bps is None else bps / 1e6,
        "line_rate_mbps": first.get("line_rate_mbps"),
        "ceiling_mbps": first.get("goodput_ceiling_mbps"),
        "retransmits": _median(s["retransmits"] for s in ok),
        "cpu_client": _median(s["cpu_client_pct"] for s in ok),
        "cpu_server": _median(s["cpu_server_pct"] for s in ok),
        "jitter_ms": _median(s["jitter_ms"] for s in ok),
        "lost_percent": _median(s["lost_percent"] for s in ok),
        "samples": len(samples),
        "status": status,
    }


def bare_metal_reference(rows: list[dict[str, Any]]) -> dict[tuple[str, str], float]:
    """Bare-metal throughput per (host pair, protocol), to compare the other modes with."""
    ref: dict[tuple[str, str], float] = {}
    for row in rows:
        if row["mode"] == "baremetal" and row["mbps"]:
            ref.setdefault((row["pair"], row["protocol"]), row["mbps"])
    return ref


def table_rows(doc: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    rows = [summarize(s) for s in group_samples(doc.get("tests", [])).values()]
    ref = bare_metal_reference(rows)
    modes_per_pair: dict[str, set[str]] = {}
    for row in rows:
        modes_per_pair.setdefault(row["pair"], set()).add(row["mode"])
    show_bare = any(len(m) > 1 and "baremetal" in m for m in modes_per_pair.values())
    out = []
    for row in rows:
        pct_line = (
            100 * row["mbps"] / row["line_rate_mbps"]
            if row["mbps"] and row["line_rate_mbps"]
            else None
        )
        base = ref.get((row["pair"], row["protocol"]))
        pct_bare = 100 * row["mbps"] / base if row["mbps"] and base else None
        if row["protocol"] == "udp":
            udp = f"{_fmt(row['jitter_ms'], 3)} / {_fmt(row['lost_percent'], 2)}"
        else:
            udp = "-"
        cpu = f"{_fmt(row['cpu_client'])} / {_fmt(row['cpu_server'])}"
        name = row["name"] + (f" (n={row['samples']})" if row["samples"] > 1 else "")
        out.append(
            [
                name,
                row["mode"],
                row["pair"],
                row["protocol"],
                _fmt(row["mbps"]),
                _fmt(pct_line),
                _fmt(pct_bare),
                _fmt(row["ceiling_mbps"]),
                "-" if row["retransmits"] is None else f"{row['retransmits']:.0f}",
                cpu,
                udp,
                row["status"],
            ]
        )
    headers = list(HEADERS)
    if not show_bare:
        idx = headers.index("% bare")
        headers.pop(idx)
        for r in out:
            r.pop(idx)
    return headers, out


def render_table(doc: dict[str, Any], tablefmt: str = "simple") -> str:
    """The side-by-side table, with a header line naming the run."""
    headers, rows = table_rows(doc)
    title = f"scenario {doc.get('scenario')}  run {doc.get('run_id', '-')}  {doc.get('started')}"
    lines = [title, tabulate(rows, headers=headers, tablefmt=tablefmt, disable_numparse=True)]
    speeds = {t.get("line_rate_mbps") for t in doc.get("tests", []) if t.get("line_rate_mbps")}
    if speeds:
        lines.append(
            "line rate: "
            + ", ".join(f"{s:g} Mbit/s" for s in sorted(speeds))
            + "; ceiling = best TCP/UDP goodput for the path MTU on that line rate"
        )
    for err in doc.get("errors", []):
        lines.append(f"error: {err}")
    return "\n".join(lines) + "\n"
