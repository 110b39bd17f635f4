"""A fan-in's block under the main table: the aggregate against the bottleneck host's
ceiling, then each flow's figure and its share (netrun.results.fanin has the numbers).

The main table's row of a fan-in is its aggregate (the sum of its receivers); this block
says who made it up, so one starved client shows beside a healthy sum.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from netrun.results.fanin import FanIn, FanSweep, fanins, sweeps

HEADERS = ["flow", "mean Mbit/s", "% of the flows' sum"]


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def head(found: FanIn) -> str:
    """The block's first line: the aggregate, the host's ceiling and the fairness index."""
    into = "into" if found.kind == "fanin" else "out of"
    pct = found.pct_of_ceiling
    against = (
        f" against {found.host}'s ceiling {_num(found.ceiling_mbps)} Mbit/s ({_num(pct)}%)"
        if found.ceiling_mbps
        else ""
    )
    return (
        f"{found.kind} {found.test} ({found.mode}, {found.protocol}, {len(found.shares)} flows"
        f" {into} {found.host}, {found.repeats} ok repeat(s)): aggregate"
        f" {_num(found.aggregate_mbps)} Mbit/s{against}, fairness (Jain)"
        f" {_num(found.fairness, 3)}"
    )


def rows(found: FanIn) -> list[list[str]]:
    """Each flow's mean Mbit/s over the ok repeats and its share of the flows' sum."""
    return [[s.label, _num(s.mbps), _num(s.pct_of_aggregate)] for s in found.shares]


def blocks(doc: Mapping[str, Any]) -> list[tuple[str, list[list[str]]]]:
    """(head, rows) of each test of several flows; none for a run without one."""
    return [(head(f), rows(f)) for f in fanins(doc)]


COUNT_HEADERS = [
    "clients",
    "aggregate Mbit/s",
    "ceiling Mbit/s",
    "% of ceiling",
    "fairness (Jain)",
    "ok repeats",
    "test",
]


def count_head(found: FanSweep) -> str:
    """A width sweep's first line: what was swept and what each row is held against."""
    into = "into" if found.kind == "fanin" else "out of"
    return (
        f"{found.kind} {found.name} by clients ({found.mode}, {found.protocol}): the aggregate"
        f" {into} {found.host} against its goodput ceiling, at {len(found.points)} counts"
    )


def count_rows(found: FanSweep) -> list[list[str]]:
    """Each count's aggregate, the host's ceiling in that test's samples, and fairness."""
    return [
        [str(n), _num(f.aggregate_mbps), _num(f.ceiling_mbps), _num(f.pct_of_ceiling),
         _num(f.fairness, 3), str(f.repeats), f.test]
        for n, f in found.points
    ]  # fmt: skip


def count_blocks(doc: Mapping[str, Any]) -> list[tuple[str, list[list[str]]]]:
    """(head, rows) of each fan test swept over its clients; none without such a sweep."""
    return [(count_head(s), count_rows(s)) for s in sweeps(doc)]
