"""The overlay-tax breakdown as text: one block per mode test compared with bare metal.

Printed below the main table (and shown in the HTML page) whenever a pair was measured in
bare metal and another mode; the figures come from netrun.results.overlay_tax.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from netrun.results.overlay_tax import BARE_WORDS, Breakdown, breakdowns


def block(found: Breakdown) -> list[str]:
    """A breakdown's lines: the gap, then each cause with its share and evidence."""
    head = (
        f"{found.test} ({found.mode}, {found.pair}, {found.protocol}): "
        f"{found.mode_mbps:.1f} vs {found.reference}'s {found.bare_mbps:.1f} Mbit/s "
        f"({found.bare_test}), {found.gap_words}"
    )
    lines = [head]
    for part in found.parts:
        share = "evidence" if part.mbps is None else f"{part.mbps:.1f} Mbit/s"
        lines.append(f"  {part.cause:<12} {share:>14}  {part.evidence}")
    return lines


def lines(doc: Mapping[str, Any]) -> list[str]:
    """The whole section; empty when no test has a bare-metal twin."""
    found = breakdowns(doc)
    if not found:
        return []
    out = ["Overlay tax (each mode's gap to bare metal on the same pair and sizes):"]
    for item in found:
        out += block(item)
    return out


def table(doc: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The one-screen form: a row per mode test, the gap to bare metal and the Mbit/s each
    cause takes of it (a column only for causes that take a share in some row; the
    evidence lines are in the full report)."""
    found = breakdowns(doc)
    causes: dict[str, None] = {}
    for item in found:
        causes.update(dict.fromkeys(p.cause for p in item.parts if p.mbps is not None))
    bare = all(item.reference == BARE_WORDS for item in found)
    headers = ["test", "mode", "Mbit/s", BARE_WORDS if bare else "reference", "gap %", *causes]
    rows = []
    for item in found:
        shares = {p.cause: p.mbps for p in item.parts if p.mbps is not None}
        ref = f"{item.bare_mbps:.1f}" + ("" if bare else f" ({item.reference})")
        rows.append(
            [item.test, item.mode, f"{item.mode_mbps:.1f}", ref,
             f"{item.gap_pct:.1f}", *(f"{shares[c]:.1f}" if c in shares else "-" for c in causes)]
        )  # fmt: skip
    return headers, rows


TABLE_TITLE = (
    "overlay tax (each mode's gap to bare metal on the same pair and sizes; causes in Mbit/s)"
)
