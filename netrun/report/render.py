"""Rendering a results document: the side-by-side table as text, markdown, CSV or JSON.

Nothing here talks to hosts, so any saved run can be rendered again later. The rows and
notes come from netrun.report.summary; the HTML page from netrun.report.html; ``render`` picks one.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from tabulate import tabulate

from netrun.history import baseline
from netrun.report import fanin, load_table, metric_table, overlay_tax, relay_latency, tcp_table
from netrun.report.brief import render_brief
from netrun.report.notes import notes
from netrun.report.plots import matrix
from netrun.report.summary import (
    CSV_FIELDS,
    HEADERS,
    REGRESSED,
    SPREAD,
    STATS_HEADERS,
    VERDICT_HEADERS,
    VerdictLike,
    bare_metal_reference,
    drop,
    group_samples,
    incomplete,
    is_regression,
    shows_bare,
    summarize,
    summary_rows,
    table_rows,
    title,
    why_lines,
)
from netrun.report.textgrid import text_table
from netrun.results.fanin import fanins, sweeps
from netrun.results.overlay_tax import breakdowns

__all__ = [  # the table's names stay importable from here, as before the split
    "CSV_FIELDS", "FORMATS", "HEADERS", "REGRESSED", "SPREAD", "STATS_HEADERS",
    "VERDICT_HEADERS", "VerdictLike", "bare_metal_reference", "drop", "group_samples",
    "is_regression", "notes", "render", "render_csv", "render_json",
    "render_markdown", "render_table", "shows_bare", "summarize", "summary_rows",
    "table_rows", "text_table", "title",
]  # fmt: skip

FORMATS = ("table", "markdown", "csv", "json", "html")


def render_table(
    doc: dict[str, Any],
    tablefmt: str = "simple",
    verdicts: Sequence[VerdictLike] | None = None,
) -> str:
    """The side-by-side table, with a header line naming the run and notes under it."""
    headers, rows = table_rows(doc, verdicts, why_column=tablefmt != "simple")
    if tablefmt == "simple":
        table = text_table(headers, rows)
    else:
        table = tabulate(rows, headers=headers, tablefmt=tablefmt, disable_numparse=True)
    lines = [title(doc), *filter(None, [incomplete(doc)]), table]
    if tablefmt == "simple" and (because := why_lines(summary_rows(doc, verdicts))):
        lines += ["", *because]  # the table fits 170 columns; why is one line per test
    if extra := metric_table.rows(doc):
        lines += ["", text_table(metric_table.HEADERS, extra)]
    if tcp := tcp_table.rows(doc):  # the senders' TCP internals (RTT, windows, path MTU)
        lines += ["", text_table(tcp_table.headers(doc), tcp)]
    if loaded := load_table.rows(doc):  # latency idle vs under load
        lines += ["", load_table.title(doc), text_table(load_table.HEADERS, loaded)]
    lines += notes(doc, summary_rows(doc, verdicts))
    for head, cols, cells, found in matrix.text_blocks(doc):  # generated pairs' grids
        lines += ["", head, text_table(cols, cells), *found]
    for head, flows in fanin.blocks(doc):  # each fan-in's flows under its aggregate
        lines += ["", head, text_table(fanin.HEADERS, flows)]
    for head, counts in fanin.count_blocks(doc):  # a fan swept over its clients
        lines += ["", head, text_table(fanin.COUNT_HEADERS, counts)]
    if tax := overlay_tax.lines(doc):  # why each mode is slower than bare metal
        lines += ["", *tax]
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
    if tcp := tcp_table.rows(doc):
        table += "\n\n" + tabulate(
            tcp, headers=tcp_table.headers(doc), tablefmt="github", disable_numparse=True
        )
    if loaded := load_table.rows(doc):  # latency idle vs under load
        grid = tabulate(
            loaded, headers=load_table.HEADERS, tablefmt="github", disable_numparse=True
        )
        table += f"\n\n#### {load_table.TITLE}\n\n{grid}"
        if note := load_table.bucket_note(doc):
            table += f"\n\n{note}"
    extra = [f"- {line}" for line in notes(doc, summary_rows(doc, verdicts))]
    for head, cols, cells, found in matrix.text_blocks(doc):  # generated pairs' grids
        grid = tabulate(cells, headers=cols, tablefmt="github", disable_numparse=True)
        extra += ["", f"#### {head}", "", grid, "", *(f"- {line}" for line in found)]
    for head, flows in fanin.blocks(doc):  # each fan-in's flows under its aggregate
        grid = tabulate(flows, headers=fanin.HEADERS, tablefmt="github", disable_numparse=True)
        extra += ["", f"#### {head}", "", grid]
    for head, counts in fanin.count_blocks(doc):  # a fan swept over its clients
        grid = tabulate(
            counts, headers=fanin.COUNT_HEADERS, tablefmt="github", disable_numparse=True
        )
        extra += ["", f"#### {head}", "", grid]
    if tax := overlay_tax.lines(doc):
        extra += ["", f"#### {tax[0]}", "", "```", *tax[1:], "```"]
    top = [f"### {title(doc)}", *(f"**{line}**" for line in [incomplete(doc)] if line)]
    return "\n".join([*top, "", table, "", *extra]).rstrip() + "\n"


def render_csv(doc: dict[str, Any], verdicts: Sequence[VerdictLike] | None = None) -> str:
    """One row per test with every number unrounded, for spreadsheets and scripts; a
    generated pair's row names its matrix, so a pivot (client x server) redraws the grid."""
    buf = io.StringIO()
    more = metric_table.csv_fields(doc)
    cells = matrix.members(doc)  # generated pairs: their matrix, long form (pivot on it)
    fields = CSV_FIELDS + more + (["matrix"] if cells else [])
    writer = csv.DictWriter(buf, fieldnames=fields, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in summary_rows(doc, verdicts):
        values = {k: row[k] for k in CSV_FIELDS} | {
            "flags": ";".join(row["flags"]),
            "flagged": ";".join(row["flagged"]),  # the flags behind status "flagged"
        }
        values.update({k: row["metrics"].get(k, {}).get("median") for k in more})
        values["matrix"] = cells.get(row["name"])
        writer.writerow({k: "" if v is None else v for k, v in values.items()})
    return buf.getvalue()


def render_json(doc: dict[str, Any], verdicts: Sequence[VerdictLike] | None = None) -> str:
    """The summary rows with the run's identity: smaller than results.json, same numbers."""
    head = {k: doc.get(k) for k in ("scenario", "run_id", "started", "finished", "status")}
    head |= baseline.identity(doc)  # tag, and which run(s) the verdicts compare with
    out = {**head, "tests": summary_rows(doc, verdicts), "errors": doc.get("errors", [])}
    out["matrices"] = [grid.to_dict() for grid in matrix.grids(doc)]  # generated pairs
    out["overlay_tax"] = [found.to_dict() for found in breakdowns(doc)]
    if fans := fanins(doc):  # tests of several flows: each flow's share
        out["fanin"] = [f.to_dict() for f in fans]
    if widths := sweeps(doc):  # a fan swept over its clients: each count's aggregate
        out["fanin_by_clients"] = [w.to_dict() for w in widths]
    if relayed := relay_latency.added(doc):  # what a TURN relay added to one-way latency
        out["relay_latency"] = [a.to_dict() for a in relayed]
    if found := load_table.loaded(doc):  # latency idle vs under load
        out["latency_under_load"] = [r.to_dict() for r in found]
    return json.dumps(out, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def render(
    doc: dict[str, Any],
    fmt: str = "table",
    verdicts: Sequence[VerdictLike] | None = None,
    plots: Iterable[Path | str] | None = None,
    detail: bool = True,
    where: str = "RUN",
) -> str:
    """The run in one of FORMATS; ``plots`` (PNG paths) only matter for html. The table
    is the full one with ``detail``, else the one-screen report (``where``: the run's
    folder, named in its last line)."""
    if fmt == "html":  # imported here: every run renders a table, few a page (17 ms)
        from netrun.report.html import render_html

        return render_html(doc, verdicts, plots)
    renderers = {"markdown": render_markdown, "csv": render_csv, "json": render_json}
    if fmt == "table":
        if not detail:
            return render_brief(doc, verdicts, where)
        return render_table(doc, "simple", verdicts)
    if fmt not in renderers:
        raise ValueError(f"unknown report format {fmt!r}; expected one of {', '.join(FORMATS)}")
    return renderers[fmt](doc, verdicts)
