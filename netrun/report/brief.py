"""The terminal report a person reads in one screen: the answer first, one table per kind
of result the run holds, and only the notes that change how a figure reads.

The kinds: throughput (the side-by-side table's rows of bulk tests), latency (each latency
test's percentiles, netrun.report.latency_table), latency under load (idle beside loaded,
netrun.report.load_table), the generated pairs' grids, each fan-in's flows and the overlay
tax. Each table keeps only the columns that have a value in one of its rows. Everything
else (the metrics table, TCP internals, the overlay tax's evidence, every note) is the
full report's: ``netrun report RUN --detail`` (netrun.report.render) and the HTML page.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from netrun.history import baseline
from netrun.report import (
    fanin,
    latency_table,
    load_table,
    overlay_tax,
    ratelimit,
    relay_latency,
    why,
)
from netrun.report.notes import shaped_notes
from netrun.report.plots import matrix
from netrun.report.summary import (
    VerdictLike,
    group_samples,
    incomplete,
    summary_rows,
    table_rows,
    title,
    verdict_cells,
    why_lines,
)
from netrun.report.textgrid import text_table
from netrun.results import flags

#: Cells that hold no figure: a column of only these is left out of a brief table.
EMPTY = frozenset({"", "-", "-/-", "-/"})
#: Columns a brief table keeps even when empty (they name the row or its outcome).
KEEP = frozenset({"test", "status"})
DETAIL = "every metric and note: netrun report {where} --detail (or --format html)"


def trim(headers: list[str], rows: list[list[str]]) -> tuple[list[str], list[list[str]]]:
    """The table without the columns that have no value in any of its rows."""
    keep = [
        i
        for i, h in enumerate(headers)
        if h in KEEP or any(r[i].strip() not in EMPTY for r in rows)
    ]
    return [headers[i] for i in keep], [[r[i] for i in keep] for r in rows]


def kinds(doc: dict[str, Any]) -> tuple[set[str], set[str]]:
    """The tests of the latency table and of the under-load table, by name."""
    from_tests = group_samples(doc.get("tests", []))
    loaded = {r.test for r in load_table.loaded(doc)}
    latency = {n for n, s in from_tests.items() if n not in loaded and latency_table.is_latency(s)}
    return latency, loaded


def _throughput(
    doc: dict[str, Any],
    rows: list[dict[str, Any]],
    verdicts: Sequence[VerdictLike] | None,
    skip: set[str],
) -> tuple[list[str], list[list[str]]]:
    headers, cells = table_rows(doc, verdicts, rows, why_column=False)  # why: a line below
    picked = []
    for row, line in zip(rows, cells, strict=True):
        if row["name"] in skip:
            continue
        if "retr" in headers and row["protocol"] != "tcp":  # no retransmits to count
            line[headers.index("retr")] = ""
        picked.append(line)
    return trim(headers, picked) if picked else (headers, [])


def _outcome(
    rows: list[dict[str, Any]], verdicts: Sequence[VerdictLike] | None
) -> Callable[[str], list[str]]:
    """A test's verdict cells (with verdicts) and its flags and status, as the main table."""
    by_name = {r["name"]: r for r in rows}

    def cells(name: str) -> list[str]:
        row = by_name[name]
        out = verdict_cells(row) if verdicts is not None else []
        return [*out, flags.marker(row["flags"]), flags.status_cell(row["status"], row["flags"])]

    return cells


class Table(NamedTuple):
    """One table of the report: its kind (load, latency, throughput, matrix, fanin,
    overlay), its title line ("" for the throughput table), headers and rows."""

    kind: str
    title: str
    headers: list[str]
    rows: list[list[str]]


def tables(doc: dict[str, Any], verdicts: Sequence[VerdictLike] | None = None) -> list[Table]:
    """Each table the run holds, answer first."""
    rows = summary_rows(doc, verdicts)
    latency, loaded = kinds(doc)
    outcome = _outcome(rows, verdicts)
    tail = (["Δ%", "verdict"] if verdicts is not None else []) + ["flags", "status"]
    found: list[Table] = []
    if loaded:
        cells = [[*r, *outcome(r[0])] for r in load_table.brief_rows(doc)]
        found.append(Table("load", load_table.title(doc, load_table.BRIEF_TITLE),
                           *trim(load_table.BRIEF_HEADERS + tail, cells)))  # fmt: skip
    if latency:
        cells = [[*r, *outcome(r[0])] for r in latency_table.rows(doc, latency)]
        found.append(Table("latency", latency_table.TITLE,
                           *trim(latency_table.HEADERS + tail, cells)))  # fmt: skip
    headers, cells = _throughput(doc, rows, verdicts, latency | loaded)
    if cells:
        found.insert(0 if not loaded else len(found), Table("throughput", "", headers, cells))
    for head, cols, grid_rows, _ in matrix.text_blocks(doc):  # generated pairs' grids
        found.append(Table("matrix", head, cols, grid_rows))
    for head, flows in fanin.blocks(doc):  # each fan-in's flows under its aggregate
        found.append(Table("fanin", head, fanin.HEADERS, flows))
    for head, counts in fanin.count_blocks(doc):
        found.append(Table("fanin", head, fanin.COUNT_HEADERS, counts))
    headers, cells = overlay_tax.table(doc)
    if cells:
        found.append(Table("overlay", overlay_tax.TABLE_TITLE, *trim(headers, cells)))
    return found


def brief_notes(doc: dict[str, Any], rows: list[dict[str, Any]], shown: set[str]) -> list[str]:
    """Only the notes that change how a shown figure reads: flags, rate limits, losses,
    outliers, FreeFlow repeats not accelerated, the baseline, failures and run errors."""
    lines: list[str] = []
    if "n" in shown:
        lines.append(
            "n = repeats; Mbit/s = median of the ok ones; mean±sd, min-max and the 95% CI "
            "(Student t, of the mean) in Mbit/s"
        )
    if "jitter/loss" in shown:
        lines.append("jitter/loss = UDP jitter in ms / datagrams lost in %")
    lines += ratelimit.note(r for r in rows if "throughput_bps" in r["produces"])
    # a ceiling set by the sender's shaping qdisc, not its NIC: the ceiling column's proof
    lines += shaped_notes(doc, {r["name"] for r in rows if "throughput_bps" in r["produces"]})
    lines += flags.footnotes(f for r in rows for f in r["flags"])
    lines += why.legend(r.get("confirmation") for r in rows)  # the verdicts' marks
    lines += flags.loss_notes(doc.get("tests", []))
    lines += baseline.describe(doc)
    lines += why_lines(rows)  # why each compared test got its verdict
    for row in rows:
        for out in row["outliers"]:
            lines.append(
                f"{row['name']}: repeat {out['repeat']} is an outlier ({out['mbps']:.1f} Mbit/s)"
            )
        if row["not_accelerated"]:
            lines.append(
                f"{row['name']}: not accelerated in {len(row['not_accelerated'])} of "
                f"{row['n_ok']} repeats (FreeFlow's bytes crossed the overlay)"
            )
    for row in rows:
        for err in {e["error"]: e for e in row["errors"]}.values():
            lines.append(f"{row['name']}: FAILED: {err['error']}")
    lines += relay_latency.notes(doc)
    failed = {e["error"] for row in rows for e in row["errors"]}
    lines += [f"error: {err}" for err in doc.get("errors", []) if err not in failed]
    return lines


def verdict_notes(verdicts: Sequence[VerdictLike] | None) -> list[str]:
    """Why a test could not be compared with its baseline (its verdict's detail): the
    verdict column says only ``incomparable``."""
    return [
        f"{v.test}: incomparable: {detail}"
        for v in verdicts or ()
        if str(v.verdict) == "incomparable" and (detail := getattr(v, "detail", ""))
    ]


def render_brief(
    doc: dict[str, Any],
    verdicts: Sequence[VerdictLike] | None = None,
    where: str = "RUN",
) -> str:
    """The one-screen report: title, each kind's table, the notes that matter, and where
    the rest is (``where``: the run folder)."""
    lines = [title(doc)]
    if (unfinished := incomplete(doc)) is not None:
        lines.append(unfinished)
    shown: set[str] = set()
    for at, (_, head, headers, cells) in enumerate(tables(doc, verdicts)):
        shown.update(headers)
        lines += ([""] if at else []) + ([head] if head else []) + [text_table(headers, cells)]
    extra = brief_notes(doc, summary_rows(doc, verdicts), shown) + verdict_notes(verdicts)
    if extra:
        lines += ["", *extra]
    lines.append(DETAIL.format(where=where))
    return "\n".join(lines) + "\n"
