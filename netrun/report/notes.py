"""The notes under the side-by-side table: what its columns mean, then what happened.

First what the table's columns mean (line rate and ceiling, shared-kernel CPU, jitter/loss,
latency, % bare), the sanity flags' footnotes, where UDP was lost, the baseline in use and
the repeats' spread; then, per test, its outlier repeats, FreeFlow repeats that were not
accelerated, figures a tool could not give and failures; last the relay's latency notes,
the run's own errors and the tests an interrupted run did not run. Computed from
results.json and the summary rows (netrun.report.summary), so any saved run is annotated
the same way again later.
"""

from __future__ import annotations

import re
from typing import Any

from netrun.history import baseline
from netrun.report import headline, ratelimit, relay_latency
from netrun.report.summary import ALIKE, group_samples, shows_bare, summary_rows
from netrun.report.why import legend
from netrun.results import flags
from netrun.tools.load.tool import PHASES


def _strongest(reasons: list[str]) -> str:
    """The first reason that shows the bytes on the overlay, else the first one."""
    return next((r for r in reasons if "crossed the overlay" in r), reasons[0])


def _folded(fields: list[str]) -> list[str]:
    """A load test's ``X_idle`` and ``X_loaded`` as one ``X (idle and loaded)`` (one
    ``X (loaded)`` when only that phase's is missing), other names as they are."""
    phases: dict[tuple[str, bool], list[str]] = {}
    for field in fields:
        phase = next((p for p in PHASES if field.endswith(f"_{p}")), "")
        base = field.removesuffix(f"_{phase}") if phase else field
        phases.setdefault((base, bool(phase)), []).append(phase)
    return [
        f"{base} ({' and '.join(p for p in PHASES if p in found)})" if phased else base
        for (base, phased), found in phases.items()
    ]


#: A shaping qdisc in a ceiling's basis (netrun.core.linerate.Shaper.text), when it set it.
SHAPED = re.compile(
    r"((?:tbf|htb|cake) root rate [^()]*\([^()]*\)), MTU \d+(?:, overlay MTU \d+)?, below"
)


def shaped_notes(doc: dict[str, Any], rated: set[str]) -> list[str]:
    """One line per shaping qdisc that set tests' ceilings (netrun.core.linerate:
    the sender's tbf, htb or cake below its NIC's line rate), naming the tests."""
    by_basis: dict[str, list[str]] = {}
    for t in doc.get("tests", []):
        found = SHAPED.findall(str(t.get("ceiling_basis") or ""))
        for how in found if t.get("name") in rated else ():
            names = by_basis.setdefault(how, [])
            if t["name"] not in names:
                names.append(str(t["name"]))
    return [
        f"ceiling from the {how}, below its NIC's line rate: {', '.join(names)}"
        for how, names in by_basis.items()
    ]


def notes(doc: dict[str, Any], rows: list[dict[str, Any]] | None = None) -> list[str]:
    """The lines under the table: line rates, outlier repeats, failures and run errors."""
    rows = summary_rows(doc) if rows is None else rows
    lines = []
    rated = {r["name"] for r in rows if "throughput_bps" in r["produces"]}
    speeds = {
        t.get("line_rate_mbps")
        for t in doc.get("tests", [])
        if t.get("line_rate_mbps") and t.get("name") in rated
    }
    if speeds:
        lines.append(
            "line rate: "
            + ", ".join(f"{s:g} Mbit/s" for s in sorted(speeds))
            + "; ceiling = best goodput (Mbit/s) this test's packets allow on that line"
            " rate (TCP: its MSS, UDP: its datagram size); % ceil = Mbit/s as a share of it"
        )
        lines += ratelimit.note(r for r in rows if r["name"] in rated)
        lines += shaped_notes(doc, rated)
    shared = sorted({str(t.get("name")) for t in doc.get("tests", [])
                     if (t.get("details") or {}).get("cpu_shared_kernel")})  # fmt: skip
    if shared:
        lines.append(
            f"cpu: {', '.join(shared)}: client and server share one kernel (the same boot id):"
            " their per-core figures (busiest core, softirq, CPU-s/Gbit) are the machine's, "
            "not one end's; the tools' own process CPU still splits by end"
        )
    if any(r["protocol"] == "udp" and "jitter_ms" in r["produces"] for r in rows):
        lines.append("jitter/loss = UDP jitter in ms / datagrams lost in %")
    if any(r.get("latency_ms") for r in rows):
        lines.append(
            "latency ms = median of the repeats' mean (min-max): "
            + "; ".join(
                sorted(
                    {
                        headline.says(doc, str(r.get("tool") or ""), r["latency_ms"]["metric"])
                        + (" (percentiles in the metrics table)"
                           if r["latency_ms"].get("percentiles") else "")
                        for r in rows
                        if r.get("latency_ms")
                    }
                )
            )
        )  # fmt: skip
    if shows_bare(rows) and any(r["mode"] != "baremetal" and r["pct_bare"] for r in rows):
        lines.append(
            "% bare = Mbit/s as a share of bare metal's between the same hosts, with the same "
            f"protocol, MTU and {', '.join(ALIKE[:-1])}"
        )
    lines += flags.footnotes(f for r in rows for f in r["flags"])
    for name, group in group_samples(doc.get("tests", [])).items():  # why each is flagged
        if (line := flags.flagged_note(name, group)) is not None:
            lines.append(line)
    lines += flags.loss_notes(doc.get("tests", []))  # where UDP datagrams were lost
    lines += baseline.describe(doc)
    lines += legend(r.get("confirmation") for r in rows)  # the verdicts' marks
    if any(r["samples"] > 1 and r["name"] in rated for r in rows):
        lines.append(
            "n = repeats; Mbit/s = median of the ok ones; mean±sd, min-max and the 95% CI "
            "(Student t, of the mean; from 3 repeats, none below 0) in Mbit/s"
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
    for why, every in reasons.items():
        names = ", ".join(r["name"] for r in rows if why in r["unavailable"].values())
        fields = _folded(every)
        listed = ", ".join(fields[:-1]) + " and " + fields[-1] if len(fields) > 1 else fields[0]
        lines.append(f"{listed} unavailable for {names}: {why}")
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
