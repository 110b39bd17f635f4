"""The HTML report: one standalone page with the table, notes, matrices, plots, samples.

Split from netrun.report.render, which renders the text formats; both lay out
netrun.report.summary's rows. netrun.report.page decides which plots the page inlines.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from netrun.report import metric_table, overview
from netrun.report.plots import matrix
from netrun.report.plots.figures import captions
from netrun.report.summary import (
    REGRESSED,
    VerdictLike,
    _fmt,
    _mbps,
    notes,
    summary_rows,
    table_rows,
    title,
)

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
    summary: list[dict[str, Any]] | None = None,
) -> str:
    """A standalone page (no external files): tables, notes and the PNG plots inlined.
    ``summary``: summary_rows(doc, verdicts), when the caller (netrun.report.page) has them."""
    summary = summary_rows(doc, verdicts) if summary is None else summary
    headers, rows = table_rows(doc, verdicts, summary)
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
        overview.section(doc, summary),  # counts and the hosts' environment, first
        _html_table(headers, rows, classes),
        *(
            [_html_table(metric_table.HEADERS, more, [""] * len(more))]
            if (more := metric_table.rows(doc))
            else []
        ),
        "<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes(doc, summary)) + "</ul>",
    ]
    grids = matrix.grids(doc)  # generated pairs' grids
    for grid in grids:
        cols, cells = grid.table()
        marks = ["failed" if matrix.FAILED in row else "" for row in cells]
        parts += [f"<h2>{html.escape(grid.title)}</h2>", _html_table(cols, cells, marks)]
        parts.append("<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in grid.notes) + "</ul>")
    said: dict[str, str] | None = None
    for plot in plots or ():
        said = captions(doc, grids) if said is None else said  # how a large run's plots differ
        data = base64.b64encode(Path(plot).read_bytes()).decode("ascii")
        alt = html.escape(Path(plot).stem, quote=True)
        note = f"<p>{html.escape(said[Path(plot).stem])}</p>" if Path(plot).stem in said else ""
        parts.append(f'<h2>{alt}</h2>{note}<img alt="{alt}" src="data:image/png;base64,{data}">')
    parts += ["<h2>samples</h2>", _samples_table(doc), "</body></html>"]
    return "\n".join(parts) + "\n"
