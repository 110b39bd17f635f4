"""% ceil of a rate-limited test: still against the line's ceiling, annotated.

A test that asks for a rate (``bitrate:``, or UDP, which iperf3 sends at 1 Mbit/s unless
told) below its goodput ceiling cannot reach the ceiling by design: a 500 Mbit/s UDP
test at 52% of a 1 GbE ceiling is what it asked for, not a slow link. Its % ceil keeps
the column's one meaning (the figure against what the line allows, comparable down the
table), and the cell carries a mark whose note says the rate it asked for and what share
of the ceiling that is. Whether it reached the asked rate is the target-not-reached flag's
call (netrun.results.flags).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from netrun.results import flags

MARK = "*"


def offered_mbps(sample: Mapping[str, Any]) -> float | None:
    """The rate a test asked for in Mbit/s, when it is below its goodput ceiling (a rate at
    or above the ceiling limits nothing); None for a test that asked for none."""
    offered = flags.offered_bps(sample)
    ceiling = sample.get("goodput_ceiling_mbps")
    if offered is None or not isinstance(ceiling, int | float) or offered / 1e6 >= ceiling:
        return None
    return offered / 1e6


def cell(pct: str, row: Mapping[str, Any]) -> str:
    """The % ceil cell, marked when the row's test was rate limited."""
    return f"{pct}{MARK}" if row.get("offered_mbps") and pct != "-" else pct


def note(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """One line naming each rate-limited test with its asked rate and its share of the
    ceiling, or none."""
    asked = [
        f"{r['name']} asked {r['offered_mbps']:g} Mbit/s "
        f"({100 * r['offered_mbps'] / r['ceiling_mbps']:.1f}% of its ceiling)"
        for r in rows
        if r.get("offered_mbps") and r.get("ceiling_mbps") and r.get("pct_ceiling") is not None
    ]
    if not asked:
        return []
    return [
        f"{MARK} rate limited (bitrate:, or UDP at its target): % ceil is against the line's "
        f"ceiling all the same, and the test asked for less: {'; '.join(asked)}"
    ]
