"""Rendering a results document: the side-by-side table, from results.json alone.

Nothing here talks to hosts, so any saved run can be rendered again later. A test run N
times is one row: the median throughput, with the spread (mean±sd, min-max, 95% CI) next to
it, and every outlier repeat named in a note below the table, never dropped.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import re
import statistics
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

from tabulate import tabulate

from netrun import baseline, flags, matrix, metric_table, mtuplan, relay_latency, stats

FORMATS = ("table", "markdown", "csv", "json", "html")
SPREAD = ("mean", "stdev", "min", "max", "ci_low", "ci_high")
REGRESSED = frozenset({"regressed", "regression"})

HEADERS = [
    "test", "mode", "sender→receiver", "proto", "MTU", "Mbit/s", "% bare", "ceiling", "% ceil",
    "retr", "CPU c/s %", "jitter/loss", "flags", "status",
]  # fmt: skip
STATS_HEADERS = ["mean±sd", "min-max", "95% CI"]
NUMERIC = {"n", "Mbit/s", "% line", "% bare", "ceiling", "% ceil", "retr", "Δ%"}
VERDICT_HEADERS = ["Δ%", "verdict"]
CSV_FIELDS = [
    "name", "mode", "server", "client", "protocol", "samples", "n_ok", "mbps", "mean_mbps",
    "stdev_mbps", "min_mbps", "max_mbps", "ci_low_mbps", "ci_high_mbps", "pct_line",
    "pct_bare", "line_rate_mbps", "ceiling_mbps", "mtu", "retransmits", "cpu_client", "cpu_server",
    "jitter_ms", "lost_percent", "status", "error", "delta_pct", "verdict", "direction",
    "pct_ceiling", "flags",
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
    """True for a verdict that should fail a nightly run (shared with the exporters)."""
    return str(verdict.verdict).lower() in REGRESSED


def group_samples(tests: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Samples by test name, in the order tests first appear."""
    return stats.samples_by_test({"tests": list(tests)})


def _median(values: Iterable[float | int | None]) -> float | None:
    known = [float(v) for v in values if v is not None]
    return statistics.median(known) if known else None


def _fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _digits(value: float) -> int:
    return 0 if abs(value) >= 100 else 1 if abs(value) >= 10 else 2


def _short(value: float | None, digits: int | None = None) -> str:
    """About three significant figures: the stats columns must stay narrow."""
    if value is None:
        return "-"
    return f"{value:.{_digits(value) if digits is None else digits}f}"


def _mbps(value: float | None) -> float | None:
    return None if value is None else value / 1e6


def _details(sample: dict[str, Any]) -> dict[str, Any]:
    details = sample.get("details")
    return details if isinstance(details, dict) else {}


def _strongest(reasons: list[str]) -> str:
    """The first reason that shows the bytes on the overlay, else the first one."""
    return next((r for r in reasons if "crossed the overlay" in r), reasons[0])


def _retransmits(row: dict[str, Any]) -> str:
    if row["retransmits"] is None:
        return "unavailable" if "retransmits" in row["unavailable"] else "-"
    return f"{row['retransmits']:.0f}"


def summarize(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """One row's numbers from a test's samples (medians over the ok repeats, in Mbit/s)."""
    ok = [s for s in samples if s["status"] == "ok"]
    first = samples[0]
    measured = [s for s in ok if s.get("throughput_bps") is not None]
    summary = stats.summarize([s["throughput_bps"] / 1e6 for s in measured])
    values = [s["throughput_bps"] for s in measured]
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
        "tool": first.get("tool") or "iperf3",
        "server": first["server"],
        "client": first["client"],
        "pair": f"{first['client']}→{first['server']}",
        "direction": flags.direction(first),  # sender -> receiver (reverse: the server sends)
        "flags": flags.of_test(samples),
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
        "retransmits": _median(s["retransmits"] for s in ok),
        "cpu_client": _median(s["cpu_client_pct"] for s in ok),
        "cpu_server": _median(s["cpu_server_pct"] for s in ok),
        "jitter_ms": _median(s["jitter_ms"] for s in ok),
        "lost_percent": _median(s["lost_percent"] for s in ok),
        "samples": len(samples),
        "n_ok": len(ok),
        "status": "not accelerated" if status == "ok" and slow else status,
        "not_accelerated": slow,
        "unavailable": unavailable,
        "error": errors[0]["error"] if errors else None,
        "errors": errors,
        "outliers": outliers,
        "delta_pct": None,
        "verdict": None,
    }


def bare_metal_reference(rows: list[dict[str, Any]]) -> dict[tuple[str, str, str], float]:
    """Bare-metal throughput per (host pair, protocol, MTU), to compare the other modes with."""
    ref: dict[tuple[str, str, str], float] = {}
    for row in rows:
        if row["mode"] == "baremetal" and row["mbps"]:
            ref.setdefault((row["pair"], row["protocol"], _mtu(row)), row["mbps"])
    return ref


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
    per_metric = metric_table.json_rows(doc)
    for row in rows:
        row["metrics"] = per_metric.get(row["name"], {})
        base = ref.get((row["pair"], row["protocol"], _mtu(row)))
        row["pct_bare"] = 100 * row["mbps"] / base if row["mbps"] and base else None
        verdict = by_test.get(row["name"])
        if verdict is not None:
            row["verdict"] = str(verdict.verdict)
            row["delta_pct"] = verdict.delta_pct
    return rows


def table_rows(
    doc: dict[str, Any], verdicts: Sequence[VerdictLike] | None = None
) -> tuple[list[str], list[list[str]]]:
    """Headers and text cells of the summary table (stats columns only when n > 1)."""
    rows = summary_rows(doc, verdicts)
    with_stats = any(r["samples"] > 1 for r in rows)
    headers = list(HEADERS)
    if with_stats:
        at = headers.index("Mbit/s") + 1
        headers[at:at] = STATS_HEADERS
        headers.insert(1, "n")
    if verdicts is not None:
        headers[-1:-1] = VERDICT_HEADERS
    out = []
    for row in rows:
        if row["protocol"] == "udp":
            udp = f"{_fmt(row['jitter_ms'], 3)}/{_fmt(row['lost_percent'], 2)}"
        else:
            udp = "-"
        pair = row["direction"] + "".join(f" {r} {h}" for r, h in row.get("roles", {}).items())
        cells = [row["name"], row["mode"], pair, row["protocol"], row["mtu"] or "-"]
        cells.append(_fmt(row["mbps"]))
        if with_stats:
            cells.insert(1, str(row["samples"]))
            cells += _stats_cells(row)
        cells += [
            _fmt(row["pct_bare"]),
            _fmt(row["ceiling_mbps"]),
            _fmt(row["pct_ceiling"]),
            _retransmits(row),
            f"{_fmt(row['cpu_client'])}/{_fmt(row['cpu_server'])}",
            udp,
            flags.marker(row["flags"]),
        ]
        if verdicts is not None:
            delta = row["delta_pct"]
            cells += ["-" if delta is None else f"{delta:+.1f}", row["verdict"] or "-"]
        cells.append(row["status"])
        out.append(cells)
    if not any(r["mtu"] for r in rows):  # no test set an MTU
        drop(headers, out, "MTU")
    if not shows_bare(rows):
        idx = headers.index("% bare")
        headers.pop(idx)
        for cells in out:
            cells.pop(idx)
    return headers, out


def drop(headers: list[str], rows: list[list[str]], column: str) -> None:
    """Remove a column from the headers and every row."""
    idx = headers.index(column)
    headers.pop(idx)
    for cells in rows:
        cells.pop(idx)


def _stats_cells(row: dict[str, Any]) -> list[str]:
    if row["mean_mbps"] is None:
        return ["-", "-", "-"]
    mean_sd = _short(row["mean_mbps"])
    if row["stdev_mbps"] is not None:
        mean_sd += "±" + _short(row["stdev_mbps"], _digits(row["mean_mbps"]))
    ci = "-"
    if row["ci_low_mbps"] is not None:
        ci = f"{_short(row['ci_low_mbps'])}-{_short(row['ci_high_mbps'])}"
    return [mean_sd, f"{_short(row['min_mbps'])}-{_short(row['max_mbps'])}", ci]


def notes(doc: dict[str, Any], rows: list[dict[str, Any]] | None = None) -> list[str]:
    """The lines under the table: line rates, outlier repeats, failures and run errors."""
    rows = summary_rows(doc) if rows is None else rows
    lines = []
    speeds = {t.get("line_rate_mbps") for t in doc.get("tests", []) if t.get("line_rate_mbps")}
    if speeds:
        lines.append(
            "line rate: "
            + ", ".join(f"{s:g} Mbit/s" for s in sorted(speeds))
            + "; ceiling = best goodput (Mbit/s) this test's packets allow on that line"
            " rate (TCP: its MSS, UDP: its datagram size); % ceil = Mbit/s as a share of it"
        )
    if any(r["protocol"] == "udp" for r in rows):
        lines.append("jitter/loss = UDP jitter in ms / datagrams lost in %")
    lines += flags.footnotes(f for r in rows for f in r["flags"])
    lines += baseline.describe(doc)
    if any(r["samples"] > 1 for r in rows):
        lines.append(
            "n = repeats; Mbit/s = median of the ok ones; mean±sd, min-max and the 95% CI "
            "(Student t, of the mean) in Mbit/s"
        )
    for row in rows:
        for out in row["outliers"]:
            lines.append(
                f"{row['name']}: repeat {out['repeat']} is an outlier ({out['mbps']:.1f} Mbit/s)"
            )
    for row in rows:
        if row["not_accelerated"]:
            lines.append(
                f"{row['name']}: not accelerated ({len(row['not_accelerated'])} of "
                f"{row['n_ok']} repeats): {_strongest(row['not_accelerated'])}; "
                "FreeFlow's library was loaded but the bytes did not bypass the overlay"
            )
    reasons: dict[str, list[str]] = {}  # one line per reason: "retransmits and cwnd ..."
    for field, why in sorted({(f, why) for r in rows for f, why in r["unavailable"].items()}):
        reasons.setdefault(why, []).append(field)
    for why, fields in reasons.items():
        names = ", ".join(r["name"] for r in rows if why in r["unavailable"].values())
        lines.append(f"{' and '.join(fields)} unavailable for {names}: {why}")
    for row in rows:
        seen: set[str] = set()
        for err in row["errors"]:
            if err["error"] in seen:
                continue
            seen.add(err["error"])
            which = [e["repeat"] for e in row["errors"] if e["error"] == err["error"]]
            where = f" (repeat {', '.join(map(str, which))})" if row["samples"] > 1 else ""
            lines.append(f"{row['name']}: FAILED{where}: {err['error']}")
    lines += relay_latency.notes(doc)  # one-way latency: relay added, clocks (iperf2)
    failed = {e["error"] for row in rows for e in row["errors"]}
    lines += [f"error: {err}" for err in doc.get("errors", []) if err not in failed]  # once
    if doc.get("not_run"):
        lines.append(f"not run (the run was interrupted): {', '.join(doc['not_run'])}")
    return lines


def title(doc: dict[str, Any]) -> str:
    return f"scenario {doc.get('scenario')}  run {doc.get('run_id', '-')}  {doc.get('started')}"


def text_table(headers: list[str], rows: list[list[str]]) -> str:
    """tabulate's "simple" look without its extra padding, to fit repeats in 170 columns."""
    widths = [max(len(c) for c in col) for col in zip(headers, *rows, strict=True)]
    right = [h in NUMERIC for h in headers]

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right, strict=True)
        ).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])


def render_table(
    doc: dict[str, Any],
    tablefmt: str = "simple",
    verdicts: Sequence[VerdictLike] | None = None,
) -> str:
    """The side-by-side table, with a header line naming the run and notes under it."""
    headers, rows = table_rows(doc, verdicts)
    if tablefmt == "simple":
        table = text_table(headers, rows)
    else:
        table = tabulate(rows, headers=headers, tablefmt=tablefmt, disable_numparse=True)
    lines = [title(doc), table]
    if extra := metric_table.rows(doc):
        lines += ["", text_table(metric_table.HEADERS, extra)]
    lines += notes(doc, summary_rows(doc, verdicts))
    for head, cols, cells, found in matrix.text_blocks(doc):  # generated pairs' grids
        lines += ["", head, text_table(cols, cells), *found]
    return "\n".join(lines) + "\n"


def render_markdown(doc: dict[str, Any], verdicts: Sequence[VerdictLike] | None = None) -> str:
    """A GitHub-flavoured table for a wiki page or a pull request comment."""
    headers, rows = table_rows(doc, verdicts)
    table = tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True)
    if more := metric_table.rows(doc):
        more_table = tabulate(
            more, headers=metric_table.HEADERS, tablefmt="github", disable_numparse=True
        )
        table += "\n\n" + more_table
    extra = [f"- {line}" for line in notes(doc, summary_rows(doc, verdicts))]
    for head, cols, cells, found in matrix.text_blocks(doc):  # generated pairs' grids
        grid = tabulate(cells, headers=cols, tablefmt="github", disable_numparse=True)
        extra += ["", f"#### {head}", "", grid, "", *(f"- {line}" for line in found)]
    return "\n".join([f"### {title(doc)}", "", table, "", *extra]).rstrip() + "\n"


def render_csv(doc: dict[str, Any], verdicts: Sequence[VerdictLike] | None = None) -> str:
    """One row per test with every number unrounded, for spreadsheets and scripts."""
    buf = io.StringIO()
    more = metric_table.csv_fields(doc)
    fields = CSV_FIELDS + more
    writer = csv.DictWriter(buf, fieldnames=fields, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in summary_rows(doc, verdicts):
        values = {k: row[k] for k in CSV_FIELDS} | {"flags": ";".join(row["flags"])}
        values.update({k: row["metrics"].get(k, {}).get("median") for k in more})
        writer.writerow({k: "" if v is None else v for k, v in values.items()})
    return buf.getvalue()


def render_json(doc: dict[str, Any], verdicts: Sequence[VerdictLike] | None = None) -> str:
    """The summary rows with the run's identity: smaller than results.json, same numbers."""
    head = {k: doc.get(k) for k in ("scenario", "run_id", "started", "finished", "status")}
    head |= baseline.identity(doc)  # tag, and which run(s) the verdicts compare with
    out = {**head, "tests": summary_rows(doc, verdicts), "errors": doc.get("errors", [])}
    return json.dumps(out, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


# A wide table scrolls inside its box (a 1400 px window shows every column's start, and
# the header stays readable); verdict, status and flag cells carry generic classes.
_CSS = """body{font-family:sans-serif;margin:1.5em;color:#222;max-width:100%}
.scroll{overflow-x:auto;max-width:100%;margin:1em 0}
table{border-collapse:collapse;font-size:85%}
th,td{border:1px solid #ccc;padding:3px 6px;text-align:right;white-space:nowrap}
th{background:#f0f0f0}td:nth-child(-n+4){text-align:left}
td.error{white-space:normal;text-align:left;min-width:20em}
.failed{background:#fde2e2}.regressed{background:#fff2cc}
td.verdict-regressed,td.verdict-regression,td.status-failed{background:#f4b6b6;font-weight:bold}
td.verdict-improved{background:#c8ecc8}td.verdict-ok,td.status-ok{color:#1a6b1a}
td.verdict-noisy,td.verdict-incomparable,td.verdict-new{background:#eee;color:#555}
td.flag{background:#ffe8a8}img{max-width:100%;display:block}"""
#: Header -> the class its cells get: ``verdict-<value>``, ``status-<value>``, ``flag``.
_CELL_CLASSES = {"verdict": "verdict", "status": "status", "flags": "flag", "error": "error"}


def _cell(header: str, text: str) -> str:
    kind = _CELL_CLASSES.get(header)
    value = text.strip()
    if kind in ("verdict", "status") and value not in ("", "-"):
        return f' class="{kind}-{re.sub(r"[^a-z0-9-]+", "-", value.lower())}"'
    if kind in ("flag", "error") and value not in ("", "-"):
        return f' class="{kind}"'
    return ""


def _html_table(headers: list[str], rows: list[list[str]], classes: list[str]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = []
    for cells, cls in zip(rows, classes, strict=True):
        tds = "".join(
            f"<td{_cell(h, c)}>{html.escape(c)}</td>" for h, c in zip(headers, cells, strict=False)
        )
        attr = f' class="{cls}"' if cls else ""
        body.append(f"<tr{attr}>{tds}</tr>")
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    return f'<div class="scroll">{table}</div>'


def _samples_table(doc: dict[str, Any]) -> str:
    headers = ["test", "repeat", "status", "Mbit/s", "retr", "jitter ms", "loss %", "error"]
    samples = doc.get("tests", [])
    rows = [
        [
            str(s["name"]),
            str(s.get("repeat", "-")),
            str(s["status"]),
            _fmt(_mbps(s.get("throughput_bps"))),
            "-" if s.get("retransmits") is None else str(s["retransmits"]),
            _fmt(s.get("jitter_ms"), 3),
            _fmt(s.get("lost_percent"), 2),
            s.get("error") or "",
        ]
        for s in samples
    ]
    classes = ["" if s["status"] == "ok" else "failed" for s in samples]
    return _html_table(headers, rows, classes)


def render_html(
    doc: dict[str, Any],
    verdicts: Sequence[VerdictLike] | None = None,
    plots: Iterable[Path | str] | None = None,
) -> str:
    """A standalone page (no external files): tables, notes and the PNG plots inlined."""
    headers, rows = table_rows(doc, verdicts)
    summary = summary_rows(doc, verdicts)
    classes = [
        "failed" if r["status"] != "ok" else "regressed" if r["verdict"] in REGRESSED else ""
        for r in summary
    ]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>netrun: {html.escape(str(doc.get('scenario')))}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(title(doc))}</h1>",
        f"<p>finished {html.escape(str(doc.get('finished')))}, "
        f"status {html.escape(str(doc.get('status')))}</p>",
        _html_table(headers, rows, classes),
        *(
            [_html_table(metric_table.HEADERS, more, [""] * len(more))]
            if (more := metric_table.rows(doc))
            else []
        ),
        "<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes(doc, summary)) + "</ul>",
    ]
    for head, cols, cells, found in matrix.text_blocks(doc):  # generated pairs' grids
        marks = ["failed" if matrix.FAILED in row else "" for row in cells]
        parts += [f"<h2>{html.escape(head)}</h2>", _html_table(cols, cells, marks)]
        parts.append("<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in found) + "</ul>")
    for plot in plots or ():
        data = base64.b64encode(Path(plot).read_bytes()).decode("ascii")
        alt = html.escape(Path(plot).stem, quote=True)
        parts.append(f'<h2>{alt}</h2><img alt="{alt}" src="data:image/png;base64,{data}">')
    parts += ["<h2>samples</h2>", _samples_table(doc), "</body></html>"]
    return "\n".join(parts) + "\n"


def render(
    doc: dict[str, Any],
    fmt: str = "table",
    verdicts: Sequence[VerdictLike] | None = None,
    plots: Iterable[Path | str] | None = None,
) -> str:
    """The run in one of FORMATS; ``plots`` (PNG paths) only matter for html."""
    if fmt == "html":
        return render_html(doc, verdicts, plots)
    renderers = {"markdown": render_markdown, "csv": render_csv, "json": render_json}
    if fmt == "table":
        return render_table(doc, "simple", verdicts)
    if fmt not in renderers:
        raise ValueError(f"unknown report format {fmt!r}; expected one of {', '.join(FORMATS)}")
    return renderers[fmt](doc, verdicts)
