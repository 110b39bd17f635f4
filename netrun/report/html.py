"""The HTML report: one standalone page with the table, notes, matrices, plots, samples.

The page is a list of sections (``SECTIONS``), each a function of one ``Page`` (the run,
its verdicts, summary rows, plots and matrices) that returns its HTML or "" to be left out;
a new part of the page is one more function in that list.

Split from netrun.report.render, which renders the text formats; both lay out
netrun.report.summary's rows. netrun.report.page decides which plots the page inlines.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netrun.core import metrics
from netrun.report import (
    brief,
    fanin,
    headline,
    load_table,
    metric_table,
    overview,
    relay_latency,
    tcp_table,
)
from netrun.report.notes import notes
from netrun.report.plots import matrix
from netrun.report.plots.figures import captions
from netrun.report.summary import (
    REGRESSED,
    VerdictLike,
    incomplete,
    summary_rows,
    table_rows,
    title,
)
from netrun.results.overlay_tax import breakdowns

# A wide table scrolls inside its box (a 1400 px window shows every column's start, and
# the header stays readable); verdict, status and flag cells carry generic classes.
_CSS = """body{font-family:sans-serif;margin:1.5em;color:#222;max-width:100%}
.scroll{overflow-x:auto;max-width:100%;margin:1em 0}
table{border-collapse:collapse;font-size:85%}
th,td{border:1px solid #ccc;padding:3px 6px;text-align:right;white-space:nowrap}
th{white-space:normal;vertical-align:bottom}td.text{white-space:normal;text-align:left;min-width:24em}
th{background:#f0f0f0}td:nth-child(-n+4){text-align:left}
td.error{white-space:normal;text-align:left;min-width:20em}
.failed{background:#fde2e2}.regressed{background:#fff2cc}
td.verdict-regressed,td.verdict-regression,td.status-failed{background:#f4b6b6;font-weight:bold}
td.verdict-improved{background:#c8ecc8}td.verdict-ok,td.status-ok{color:#1a6b1a}
td.verdict-noisy,td.verdict-incomparable,td.verdict-new{background:#eee;color:#555}
td.flag{background:#ffe8a8}img{max-width:100%;display:block}"""
#: Header -> the class its cells get: ``verdict-<value>``, ``status-<value>``, ``flag``.
_CELL_CLASSES = {"verdict": "verdict", "status": "status", "flags": "flag", "error": "error"}
#: A cell longer than this wraps (evidence, reasons, a sample's metrics), so no table is
#: wider than a 1400-pixel window.
_WRAP = 48


def _cell(header: str, text: str) -> str:
    kind = _CELL_CLASSES.get(header)
    value = text.strip()
    if kind == "verdict" and value not in ("", "-"):  # its word, not its mark (why.MARKS)
        return f' class="verdict-{re.sub(r"[^a-z0-9-]+", "-", value.split()[0].lower())}"'
    if kind == "status" and value not in ("", "-"):
        return f' class="{kind}-{re.sub(r"[^a-z0-9-]+", "-", value.lower())}"'
    if kind in ("flag", "error") and value not in ("", "-"):
        return f' class="{kind}"'
    return ' class="text"' if len(value) > _WRAP else ""


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
    """Every sample with the metrics its tool declares, in declaration order, as one
    wrapped cell of "label value" pairs (a column per metric would be some 30 columns
    wide); a metric the tool could not know is "-"."""
    samples = doc.get("tests", [])
    shown = metrics.used(doc, samples)
    headers = ["test", "repeat", "status", "metrics", "error"]
    rows = []
    for s in samples:
        values = metrics.of_sample(s)
        mine = set(headline.produced([s]))
        said = [
            f"{m.label} {'-' if values.get(m.name) is None else m.show(values[m.name])}"
            for m in shown
            if m.name in mine
        ]
        cells = [str(s["name"]), str(s.get("repeat", "-")), str(s["status"])]
        rows.append([*cells, " · ".join(said), s.get("error") or ""])
    classes = ["" if s["status"] == "ok" else "failed" for s in samples]
    return _html_table(headers, rows, classes)


@dataclass
class Page:
    """What the sections of one page read: the run, its verdicts, rows, plots and grids."""

    doc: dict[str, Any]
    verdicts: Sequence[VerdictLike] | None
    summary: list[dict[str, Any]]
    plots: list[Path]
    grids: list[matrix.Grid] = field(default_factory=list)


def _head(page: Page) -> str:
    doc = page.doc
    return "\n".join([
        f"<h1>{html.escape(title(doc))}</h1>",
        f"<p>finished {html.escape(str(doc.get('finished')))}, "
        f"status {html.escape(str(doc.get('status')))}</p>",
        *[f'<p class="incomplete">{html.escape(line)}</p>' for line in [incomplete(doc)] if line],
    ])  # fmt: skip


def _row_class(row: dict[str, Any]) -> str:
    """A row is red only when a repeat failed; a passing but flagged one (not accelerated)
    is yellow, as a regression is."""
    if row["errors"]:
        return "failed"
    if row["verdict"] in REGRESSED or row["status"] != "ok":
        return "regressed"
    return ""


def _tables(page: Page) -> str:
    headers, rows = table_rows(page.doc, page.verdicts, page.summary)
    parts = [_html_table(headers, rows, [_row_class(r) for r in page.summary])]
    if more := metric_table.rows(page.doc):
        parts.append(_html_table(metric_table.HEADERS, more, [""] * len(more)))
    if tcp := tcp_table.rows(page.doc):
        parts.append(_html_table(tcp_table.headers(page.doc), tcp, [""] * len(tcp)))
    return "\n".join(parts)


def _notes(page: Page) -> str:
    items = "".join(f"<li>{html.escape(n)}</li>" for n in notes(page.doc, page.summary))
    return f"<ul>{items}</ul>"


def _relay(page: Page) -> str:
    """What a TURN relay added to one-way latency: transport, difference, packets, interval."""
    found = relay_latency.added(page.doc)
    if not found:
        return ""
    headers = ["test", "transport", "added ms", "95% interval ms", "relayed n", "direct n",
               "relayed ms", "direct ms", "direct test"]  # fmt: skip
    rows = [
        [
            a.test, a.transport or "-", f"{a.added_ms:.3f}",
            "-" if a.low_ms is None or a.high_ms is None else f"{a.low_ms:.3f} to {a.high_ms:.3f}",
            str(a.relayed_n), str(a.direct_n), f"{a.relayed_ms:.3f}", f"{a.direct_ms:.3f}",
            a.direct,
        ]
        for a in found
    ]  # fmt: skip
    return "<h2>relay latency (one-way)</h2>\n" + _html_table(headers, rows, [""] * len(rows))


def _load(page: Page) -> str:
    """Latency idle vs under load, and what the load added (netrun.report.load_table)."""
    found = load_table.rows(page.doc)
    if not found:
        return ""
    note = load_table.bucket_note(page.doc)
    said = f"<p>{html.escape(note)}</p>\n" if note else ""
    return f"<h2>{html.escape(load_table.TITLE)}</h2>\n{said}" + _html_table(
        load_table.HEADERS, found, [""] * len(found)
    )


def _overlay_tax(page: Page) -> str:
    """Each mode's gap to bare metal on the same pair, split by cause with its evidence."""
    found = breakdowns(page.doc)
    if not found:
        return ""
    parts = ["<h2>overlay tax (gap to bare metal, by cause)</h2>"]
    for b in found:
        head = (f"{b.test} ({b.mode}, {b.pair}, {b.protocol}): {b.mode_mbps:.1f} vs "
                f"{b.bare_mbps:.1f} Mbit/s {b.reference} ({b.bare_test}), "
                f"{b.gap_words}")  # fmt: skip
        rows = [[p.cause, "evidence" if p.mbps is None else f"{p.mbps:.1f}", p.evidence]
                for p in b.parts]  # fmt: skip
        cols = ["cause", "Mbit/s of the gap", "evidence"]
        parts += [f"<h3>{html.escape(head)}</h3>", _html_table(cols, rows, [""] * len(rows))]
    return "\n".join(parts)


def _fanin(page: Page) -> str:
    """Each fan-in's flows under its aggregate (netrun.report.fanin)."""
    parts = []
    for head, flows in fanin.blocks(page.doc):
        parts += [
            f"<h2>{html.escape(head)}</h2>",
            _html_table(fanin.HEADERS, flows, [""] * len(flows)),
        ]
    for head, counts in fanin.count_blocks(page.doc):  # a fan swept over its clients
        parts += [
            f"<h2>{html.escape(head)}</h2>",
            _html_table(fanin.COUNT_HEADERS, counts, [""] * len(counts)),
        ]
    return "\n".join(parts)


def _matrices(page: Page) -> str:
    parts = []
    for grid in page.grids:
        cols, cells = grid.table()
        marks = ["failed" if matrix.FAILED in row else "" for row in cells]
        parts += [f"<h2>{html.escape(grid.title)}</h2>", _html_table(cols, cells, marks)]
        parts.append("<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in grid.notes) + "</ul>")
    return "\n".join(parts)


def _plots(page: Page) -> str:
    parts = []
    said = captions(page.doc, page.grids) if page.plots else {}
    for plot in page.plots:
        data = base64.b64encode(Path(plot).read_bytes()).decode("ascii")
        alt = html.escape(Path(plot).stem, quote=True)
        note = f"<p>{html.escape(said[Path(plot).stem])}</p>" if Path(plot).stem in said else ""
        parts.append(f'<h2>{alt}</h2>{note}<img alt="{alt}" src="data:image/png;base64,{data}">')
    return "\n".join(parts)


def _counts(page: Page) -> str:
    """The run in four counts (netrun.report.overview), before any table."""
    return overview.counts_section(page.summary)


def _answer(page: Page) -> str:
    """The scenario's own tables, as the terminal shows them (netrun.report.brief): its
    throughput, latency or latency under load first, then the notes that change a figure."""
    parts = []
    by_name = {r["name"]: _row_class(r) for r in page.summary}
    for kind, head, headers, cells in brief.tables(page.doc, page.verdicts):
        if kind in ("fanin", "matrix"):
            continue  # their own sections, with their notes
        name, _, says = (head or kind).partition(" (")
        parts += [f"<h2>{html.escape(name)}</h2>",
                  f"<p>({html.escape(says)}</p>" if says else "",
                  _html_table(headers, cells, [by_name.get(c[0], "") for c in cells])]  # fmt: skip
    said = brief.brief_notes(page.doc, page.summary, set()) + brief.verdict_notes(page.verdicts)
    if said:
        parts.append("<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in said) + "</ul>")
    return "\n".join(parts)


def _detail(page: Page) -> str:
    """Where the detail starts: every metric, note, host and sample below."""
    return '<h2 id="detail">detail</h2><p>every metric, the hosts and every sample</p>' + (
        overview.environment_section(page.doc)
    )


def _samples(page: Page) -> str:
    return "<h2>samples</h2>\n" + _samples_table(page.doc)


#: The page's sections, top to bottom: each renders its HTML from the Page ("" to skip).
#: A new section is a function here and an entry in this list.
SECTIONS: list[Callable[[Page], str]] = [
    _head, _counts, _answer, _matrices, _fanin, _plots, _detail, _tables, _notes, _load,
    _relay, _overlay_tax, _samples,
]  # fmt: skip


def render_html(
    doc: dict[str, Any],
    verdicts: Sequence[VerdictLike] | None = None,
    plots: Iterable[Path | str] | None = None,
    summary: list[dict[str, Any]] | None = None,
) -> str:
    """A standalone page (no external files): tables, notes and the PNG plots inlined.
    ``summary``: summary_rows(doc, verdicts), when the caller (netrun.report.page) has them."""
    summary = summary_rows(doc, verdicts) if summary is None else summary
    page = Page(doc, verdicts, summary, [Path(p) for p in plots or ()], matrix.grids(doc))
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>netrun: {html.escape(str(doc.get('scenario')))}</title>",
        f"<style>{_CSS}</style></head><body>",
        *(text for section in SECTIONS if (text := section(page))),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"
