"""The top of the HTML page: the run in four counts, then the hosts it ran on.

A reader who opens a report first wants to know whether anything is wrong (passed,
failed, regressed, flagged) and what the figures were measured on (kernel, NIC driver
and firmware, qdisc, congestion control, tool versions: netrun.results.context). One
section, rendered from results.json and the summary rows alone, so any saved run shows it.
A run from before netrun read the context shows what its probe recorded (kernel, iperf3,
NIC driver) and says the rest was not recorded.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from netrun.report.summary import REGRESSED
from netrun.results import context, flags

COUNTS = ("tests", "passed", "failed", "regressed", "flagged")


def counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """tests, passed (no failed sample), failed, regressed (a verdict against the baseline)
    and flagged (status flagged, or FreeFlow not accelerated) over the summary rows."""
    failed = sum(1 for r in rows if r.get("errors"))
    return {
        "tests": len(rows),
        "passed": len(rows) - failed,
        "failed": failed,
        "regressed": sum(1 for r in rows if str(r.get("verdict") or "").lower() in REGRESSED),
        "flagged": sum(1 for r in rows if _flagged(r) or r.get("not_accelerated")),
    }


def _flagged(row: Mapping[str, Any]) -> bool:
    """A row whose status says its figure is not what the test asked for (the same
    rows the status column marks flagged: a footnote-only flag such as cpu-bound is not)."""
    return row.get("status") == flags.FLAGGED


def environment(doc: Mapping[str, Any]) -> tuple[list[list[str]], list[str]]:
    """The environment table's rows (context.ROW_HEADERS), and notes on hosts whose context
    was not recorded (their probe facts fill what they can)."""
    rows = context.rows(doc)
    have = {r[0] for r in rows}
    notes = []
    hosts = doc.get("hosts") if isinstance(doc.get("hosts"), Mapping) else {}
    for name, facts in (hosts or {}).items():
        if name in have or not isinstance(facts, Mapping):
            continue
        nic = facts.get("nic") if isinstance(facts.get("nic"), Mapping) else {}
        driver = (nic or {}).get("driver")
        iface = (nic or {}).get("iface")
        version = facts.get("iperf3_version")
        rows.append(
            [
                str(name),
                str(facts.get("kernel") or "-"),
                "-",
                f"{iface}: {driver}" if iface and driver else str(driver or "-"),
                *["-"] * 3,
                f"iperf3 {version}" if version else "-",
            ]
        )
        notes.append(str(name))
    why = (
        [f"context not recorded for {', '.join(notes)} (a run from before netrun read it)"]
        if notes
        else []
    )
    return rows, why


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows
    )
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    return f'<div class="scroll">{table}</div>'


def section(doc: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> str:
    """The counts, then the environment table (HTML)."""
    return counts_section(rows) + "\n" + environment_section(doc)


def counts_section(rows: Sequence[Mapping[str, Any]]) -> str:
    """The page's opening: the run in four counts (HTML)."""
    found = counts(rows)
    cells = [str(found[k]) for k in COUNTS]
    return "\n".join(['<section id="overview">', "<h2>summary</h2>", _table(COUNTS, [cells]),
                      "</section>"])  # fmt: skip


def environment_section(doc: Mapping[str, Any]) -> str:
    """What the figures were measured on: the hosts' environment table (HTML), or ""."""
    parts = ['<section id="environment">']
    env, notes = environment(doc)
    if env:
        parts += ["<h2>environment</h2>", _table(context.ROW_HEADERS, env)]
        parts += [f"<p>{html.escape(n)}</p>" for n in notes]
        if any(context.of_doc(doc).values()):
            parts.append(
                "<p>every host's full context (offloads, rings, sysctls, what it could not "
                "read and why) is in results.json under hosts.&lt;name&gt;.context</p>"
            )
    parts.append("</section>")
    return "\n".join(parts) if env else ""
