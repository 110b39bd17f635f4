"""The side-by-side table's content: one summary row per test and its text cells.

Computed from results.json alone, so any saved run can be rendered again later. A test
run N times is one row: the median throughput, with the spread (mean±sd, min-max, 95% CI)
next to it, and every outlier repeat named in a note below the table (netrun.report.notes),
never dropped.
The renderers (netrun.report.render for text, markdown, CSV and JSON, netrun.report.html for
the page) lay these rows out; the plots and the exporters read the same rows.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from netrun.core import metrics, mtuplan, numeric
from netrun.report import headline, metric_table, ratelimit, why
from netrun.results import flags, stats
from netrun.results.fanin import ends, pair_label

SPREAD = ("mean", "stdev", "min", "max", "ci_low", "ci_high")
REGRESSED = frozenset({"regressed", "regression"})
#: Options that change what a throughput figure is: % bare compares only tests alike in them.
ALIKE = ("streams", "bitrate", "length", "reverse", "bidir", "protocol")

HEADERS = [
    "test", "mode", "sender→receiver", "proto", "MTU", "Mbit/s", "% bare", "ceiling", "% ceil",
    "retr", "CPU c/s %", "jitter/loss", "latency ms", "flags", "status",
]  # fmt: skip
STATS_HEADERS = ["mean±sd", "min-max", "95% CI"]
NUMERIC = {"n", "Mbit/s", "% line", "% bare", "ceiling", "% ceil", "retr", "Δ%"}
#: Columns about one metric: left out of a table none of whose tests' tools produce it
#: (a ping-only table has no Mbit/s), blank in the row of a test whose tool does not.
COLUMN_METRICS = {
    "Mbit/s": "throughput_bps", "% bare": "throughput_bps", "ceiling": "throughput_bps",
    "% ceil": "throughput_bps", "retr": "retransmits", "CPU c/s %": "cpu_client_pct",
    **dict.fromkeys(STATS_HEADERS, "throughput_bps"),
}  # fmt: skip
VERDICT_HEADERS = ["Δ%", "verdict"]
#: Last, as the widest: why a compared test got its verdict (netrun.report.why).
WHY = "why"
CSV_FIELDS = [
    "name", "mode", "server", "client", "protocol", "samples", "n_ok", "mbps", "mean_mbps",
    "stdev_mbps", "min_mbps", "max_mbps", "ci_low_mbps", "ci_high_mbps", "pct_line",
    "pct_bare", "line_rate_mbps", "ceiling_mbps", "mtu", "retransmits", "cpu_client", "cpu_server",
    "jitter_ms", "lost_percent", "status", "error", "delta_pct", "verdict", "direction",
    "pct_ceiling", "flags", "offered_mbps", "flagged",
]  # fmt: skip


class VerdictLike(Protocol):
    """What a regression check hands in: one verdict per test name."""

    @property
    def test(self) -> str: ...

    @property
    def verdict(self) -> str: ...

    @property
    def delta_pct(self) -> float | None: ...


def is_regression(verdict: VerdictLike) -> bool:
    """True for a verdict that should fail a nightly run (shared with the exporters): a
    regression whose cause pages (``--page-on``), as the exit code has it. A verdict saved
    before causes were judged has no ``pages`` and counts, as it did then."""
    return str(verdict.verdict).lower() in REGRESSED and bool(getattr(verdict, "pages", True))


def group_samples(tests: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Samples by test name, in the order tests first appear."""
    return stats.samples_by_test({"tests": list(tests)})


def _median(values: Iterable[float | int | None]) -> float | None:
    known = [float(v) for v in values if v is not None]
    return statistics.median(known) if known else None


def _fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _mbps(value: float | None) -> float | None:
    return None if value is None else value / 1e6


def _details(sample: dict[str, Any]) -> dict[str, Any]:
    details = sample.get("details")
    return details if isinstance(details, dict) else {}


def _retransmits(row: dict[str, Any]) -> str:
    if row["retransmits"] is None:
        return "unavailable" if "retransmits" in row["unavailable"] else "-"
    return f"{row['retransmits']:.0f}"


def _value(sample: dict[str, Any], name: str) -> float | None:
    return metrics.of_sample(sample).get(name)


def _via(sample: dict[str, Any]) -> str | None:
    """How a relayed test reached its server (TURN-UDP, TURN-TCP), from what it ran with."""
    if sample.get("mode") != "turn":
        return None
    relay = _details(sample).get("relay")
    options = sample.get("options") if isinstance(sample.get("options"), dict) else {}
    transport = (relay.get("transport") if isinstance(relay, dict) else None) or (
        options or {}
    ).get("turn_transport")
    return f"TURN-{str(transport).upper()}" if transport else "TURN"


def _latency(samples: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The test's latency family (ping's rtt_*, iperf2's latency_*): medians in ms."""
    found = headline.latency(samples)
    if found is None:
        return None
    return {"metric": found.metric, "min": found.low, "avg": found.mid,
            "max": found.high, "spread": found.spread, "n": found.n,
            "percentiles": [list(cut) for cut in found.percentiles]}  # fmt: skip


def _latency_cell(row: dict[str, Any]) -> str:
    found = row.get("latency_ms")
    if not found:
        return "-" if headline.latency_prefix(row["produces"]) else ""
    cell = _fmt(found["avg"], 3)
    if found["min"] is not None and found["max"] is not None:
        cell += f" ({_fmt(found['min'], 3)}-{_fmt(found['max'], 3)})"
    return cell


def _alike(sample: dict[str, Any]) -> str:
    """The ALIKE options a test ran with, as one comparable string."""
    options = sample.get("options") if isinstance(sample.get("options"), dict) else None
    return ";".join(f"{k}={(options or {}).get(k)}" for k in ALIKE)


def _mode(row: dict[str, Any]) -> str:
    return f"{row['mode']} ({row['via']})" if row.get("via") else row["mode"]


def summarize(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """One row's numbers from a test's samples (medians over the ok repeats, in Mbit/s)."""
    ok = [s for s in samples if s["status"] == "ok"]
    first = samples[0]
    measured = [s for s in ok if _value(s, "throughput_bps") is not None]
    values = [_value(s, "throughput_bps") or 0.0 for s in measured]
    summary = stats.summarize([v / 1e6 for v in values])
    outliers = [
        {"repeat": measured[i].get("repeat"), "mbps": values[i] / 1e6}
        for i in stats.outliers(values)
    ]
    errors = [
        {"repeat": s.get("repeat"), "error": s.get("error") or "failed"}
        for s in samples
        if s["status"] != "ok"
    ]
    status = "ok" if not errors else f"{len(errors)}/{len(samples)} failed" if ok else "FAILED"
    # FreeFlow: how many repeats were not accelerated, and why (the first reason)
    slow = [
        _details(s).get("path_check") or "-" for s in ok if _details(s).get("accelerated") is False
    ]
    unavailable: dict[str, str] = {}
    for s in ok:
        unavailable |= _details(s).get("unavailable") or {}
    line = first.get("line_rate_mbps")
    mbps = summary.median if summary else None
    return {
        "name": first["name"],
        "mode": first["mode"],
        "via": _via(first),
        "tool": first.get("tool") or "iperf3",
        "headline": headline.produced(samples)[0] if headline.produced(samples) else None,
        "produces": headline.produced(samples),
        "alike": _alike(first),
        # a fan's every flow (its first flow's pair would name one client of three)
        "server": ends(first)[1],
        "client": ends(first)[0],
        "pair": pair_label(first),
        "direction": flags.direction(first),  # sender -> receiver (reverse: the server sends)
        "flags": flags.of_test(samples),
        # the flags that make an ok test's status "flagged" (none for a failed one)
        "flagged": [] if errors else flags.not_as_asked(flags.of_test(samples)),
        # roles beyond server and client (a relay), shown beside the pair
        "roles": {
            r: h for r, h in (first.get("hosts") or {}).items() if r not in ("server", "client")
        },
        "protocol": first["protocol"],
        "mtu": mtuplan.cell(_details(first).get("mtu")),
        "mbps": mbps,
        **{f"{k}_mbps": getattr(summary, k, None) for k in SPREAD},
        "pct_line": 100 * mbps / line if mbps and line else None,
        "pct_bare": None,
        "line_rate_mbps": line,
        "ceiling_mbps": first.get("goodput_ceiling_mbps"),
        "pct_ceiling": flags.pct_of_ceiling(mbps, first.get("goodput_ceiling_mbps")),
        "offered_mbps": ratelimit.offered_mbps(first),  # asked below the ceiling: % ceil marked
        "retransmits": _median(_value(s, "retransmits") for s in ok),
        "cpu_client": _median(_value(s, "cpu_client_pct") for s in ok),
        "cpu_server": _median(_value(s, "cpu_server_pct") for s in ok),
        "jitter_ms": _median(_value(s, "jitter_ms") for s in ok),
        "lost_percent": _median(_value(s, "lost_percent") for s in ok),
        "latency_ms": _latency(samples),
        "samples": len(samples),
        "n_ok": len(ok),
        # a passing figure that is not what the test asked for: "flagged: <flags>"
        "status": "not accelerated"
        if status == "ok" and slow
        else flags.status_cell(status, flags.of_test(samples)),
        "not_accelerated": slow,
        "unavailable": unavailable,
        "error": errors[0]["error"] if errors else None,
        "errors": errors,
        "outliers": outliers,
        "delta_pct": None,
        "verdict": None,
        "confirmation": None,  # a paging regression measured again (netrun.history.confirm)
        "why": None,
    }


def bare_metal_reference(rows: list[dict[str, Any]]) -> dict[tuple[str, ...], float]:
    """Bare-metal throughput per (host pair, protocol, MTU, the options that shape the
    figure), to compare the other modes with: a 4-stream or 10000 pps test is not 1-stream
    or 1000 pps bare metal's."""
    ref: dict[tuple[str, ...], float] = {}
    for row in rows:
        if row["mode"] == "baremetal" and row["mbps"]:
            ref.setdefault(_bare_key(row), row["mbps"])
    return ref


def _bare_key(row: dict[str, Any]) -> tuple[str, ...]:
    return (row["pair"], row["protocol"], _mtu(row), row.get("alike") or "")


def _mtu(row: dict[str, Any]) -> str:
    """The host MTU a row ran at (bare metal compares at the same MTU); "" if not set."""
    return str(row.get("mtu") or "").split("/")[0]


def shows_bare(rows: list[dict[str, Any]]) -> bool:
    """The % bare column only helps when a pair was measured in several modes incl. bare."""
    modes_per_pair: dict[str, set[str]] = {}
    for row in rows:
        modes_per_pair.setdefault(row["pair"], set()).add(row["mode"])
    return any(len(m) > 1 and "baremetal" in m for m in modes_per_pair.values())


def summary_rows(
    doc: dict[str, Any], verdicts: Sequence[VerdictLike] | None = None
) -> list[dict[str, Any]]:
    """Every test's numbers (one dict per test), with % bare and the verdicts filled in."""
    rows = [summarize(s) for s in group_samples(doc.get("tests", [])).values()]
    ref = bare_metal_reference(rows) if shows_bare(rows) else {}
    by_test = {v.test: v for v in verdicts or ()}
    because = why.reasons(verdicts, metrics.declared(doc))
    per_metric = metric_table.json_rows(doc)
    for row in rows:
        row["metrics"] = per_metric.get(row["name"], {})
        base = ref.get(_bare_key(row))
        row["pct_bare"] = 100 * row["mbps"] / base if row["mbps"] and base else None
        verdict = by_test.get(row["name"])
        if verdict is not None:
            row["verdict"] = str(verdict.verdict)
            row["delta_pct"] = verdict.delta_pct
            row["confirmation"] = getattr(verdict, "confirmation", None) or None
            row["why"] = because.get(row["name"])
    return rows


def table_rows(
    doc: dict[str, Any],
    verdicts: Sequence[VerdictLike] | None = None,
    rows: list[dict[str, Any]] | None = None,
    why_column: bool = True,
) -> tuple[list[str], list[list[str]]]:
    """Headers and text cells of the summary table (stats columns only when n > 1);
    ``rows``: summary_rows(doc, verdicts) when the caller has them already; without
    ``why_column`` (the terminal's table, kept narrow) why_lines say it under the table."""
    rows = summary_rows(doc, verdicts) if rows is None else rows
    with_stats = any(r["samples"] > 1 for r in rows)
    headers = list(HEADERS)
    if with_stats:
        at = headers.index("Mbit/s") + 1
        headers[at:at] = STATS_HEADERS
        headers.insert(1, "n")
    if verdicts is not None:
        headers[-1:-1] = VERDICT_HEADERS
        headers += [WHY] if why_column else []
    out = []
    for row in rows:
        if row["protocol"] == "udp" and (
            "jitter_ms" in row["produces"] or "lost_percent" in row["produces"]
        ):
            udp = f"{_fmt(row['jitter_ms'], 3)}/{_fmt(row['lost_percent'], 2)}"
        else:
            udp = "-"
        pair = row["direction"] + "".join(f" {r} {h}" for r, h in row.get("roles", {}).items())
        cells = [row["name"], _mode(row), pair, row["protocol"], row["mtu"] or "-"]
        cells.append(_fmt(row["mbps"]))
        if with_stats:
            cells.insert(1, str(row["samples"]))
            cells += _stats_cells(row)
        cells += [
            _fmt(row["pct_bare"]),
            _fmt(row["ceiling_mbps"]),
            ratelimit.cell(_fmt(row["pct_ceiling"]), row),
            _retransmits(row),
            f"{_fmt(row['cpu_client'])}/{_fmt(row['cpu_server'])}",
            udp,
            _latency_cell(row),
            flags.marker(row["flags"]),
        ]
        if verdicts is not None:
            cells += verdict_cells(row)
        cells.append(row["status"])  # "flagged" already (summarize: flags.status_cell)
        if verdicts is not None and why_column:
            cells.append(row.get("why") or "")
        for at, header in enumerate(headers):  # a metric the test's tool does not produce
            if header in COLUMN_METRICS and COLUMN_METRICS[header] not in row["produces"]:
                cells[at] = ""
        out.append(cells)
    if not any(r["mtu"] for r in rows):  # no test set an MTU
        drop(headers, out, "MTU")
    if not shows_bare(rows) or not any(r["mode"] != "baremetal" and r["pct_bare"] for r in rows):
        drop(headers, out, "% bare")
    for header, name in COLUMN_METRICS.items():  # no test's tool produces it
        if header in headers and not any(name in r["produces"] for r in rows):
            drop(headers, out, header)
    if not any(
        r["protocol"] == "udp" and c != "-"
        for r, c in zip(rows, _column(headers, out, "jitter/loss"), strict=True)
    ):
        drop(headers, out, "jitter/loss")
    if not any(r.get("latency_ms") for r in rows):
        drop(headers, out, "latency ms")
    if WHY in headers and not any(r.get("why") for r in rows):
        drop(headers, out, WHY)
    return headers, out


def why_lines(rows: list[dict[str, Any]]) -> list[str]:
    """A line per compared test with a reason, for a table without the why column:
    ``udp-500m regressed: lost_percent 0.10 -> 28.26 % (+28.16 points), limit 1 points``."""
    return [f"{r['name']} {r['verdict']}: {r['why']}" for r in rows if r.get("why")]


def verdict_cells(row: dict[str, Any]) -> list[str]:
    """The Δ% and verdict cells of a test compared with a baseline (a verdict measured
    again marked: netrun.report.why.MARKS)."""
    delta = row["delta_pct"]
    verdict = why.mark(row["verdict"], row.get("confirmation")) if row["verdict"] else "-"
    return ["-" if delta is None else f"{delta:+.1f}", verdict]


def _column(headers: list[str], rows: list[list[str]], column: str) -> list[str]:
    idx = headers.index(column)
    return [cells[idx] for cells in rows]


def drop(headers: list[str], rows: list[list[str]], column: str) -> None:
    """Remove a column from the headers and every row."""
    idx = headers.index(column)
    headers.pop(idx)
    for cells in rows:
        cells.pop(idx)


def _stats_cells(row: dict[str, Any]) -> list[str]:
    if row["mean_mbps"] is None:
        return ["-", "-", "-"]
    mean_sd = numeric.short(row["mean_mbps"])
    if row["stdev_mbps"] is not None:
        mean_sd += "±" + numeric.short(row["stdev_mbps"], numeric.digits(row["mean_mbps"]))
    ci = "-"
    if row["ci_low_mbps"] is not None:
        ci = f"{numeric.short(row['ci_low_mbps'])}-{numeric.short(row['ci_high_mbps'])}"
    return [mean_sd, f"{numeric.short(row['min_mbps'])}-{numeric.short(row['max_mbps'])}", ci]


def title(doc: dict[str, Any]) -> str:
    return f"scenario {doc.get('scenario')}  run {doc.get('run_id', '-')}  {doc.get('started')}"


def incomplete(doc: dict[str, Any]) -> str | None:
    """One line saying a run did not finish, and what it did not reach; None if it did.
    A run killed outright (SIGKILL, a crash of the machine) never wrote its end: its
    results.json still says "running"."""
    status = doc.get("status")
    if status in (None, "finished"):
        return None
    done = {str(t.get("name")) for t in doc.get("tests", [])}
    missing = doc.get("not_run") or [n for n in doc.get("planned") or [] if n not in done]
    why = {
        "running": "it never saved its end: killed (SIGKILL, a crash) or still running",
        "interrupted": "interrupted (Ctrl-C or SIGTERM)",
        "error": "stopped by an internal error",
    }.get(str(status), f"status {status}")
    reached = f"; not measured: {', '.join(missing)}" if missing else ""
    return f"INCOMPLETE RUN: {why}; {len(done)} test(s) measured{reached}"
