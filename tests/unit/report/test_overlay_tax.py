"""The overlay-tax section of the text report, on a real lab run."""

from __future__ import annotations

import json

from netrun.report.overlay_tax import lines
from tests.conftest import RESULTS_FIXTURES


def test_section_names_the_gap_and_each_cause() -> None:
    doc = json.loads((RESULTS_FIXTURES / "freeflow-real" / "results.json").read_text())
    text = "\n".join(lines(doc))
    assert text.startswith("Overlay tax")
    assert "flannel (flannel, bravo→alpha, tcp): 923.3 vs bare metal's 957.1 Mbit/s" in text
    assert "framing         33.0 Mbit/s  ceilings 909.0" in text
    assert "within 0.5% of bare metal" in text


def test_no_section_without_a_bare_metal_twin() -> None:
    doc = json.loads((RESULTS_FIXTURES / "baremetal-3" / "results.json").read_text())
    assert lines(doc) == []


def test_a_mode_above_bare_metal_reads_above_not_a_negative_gap() -> None:
    doc = json.loads((RESULTS_FIXTURES / "shipped-docker" / "results.json").read_text())
    text = "\n".join(lines(doc))
    assert "905.1 vs bare metal's 875.8 Mbit/s (bare-metal), 29.4 Mbit/s (3.4%) above" in text
    assert "gap -" not in text and "within 0.5%" not in text
