"""``netrun diff`` names what changed on the hosts (netrun.results.context), real runs."""

from __future__ import annotations

import json
from typing import Any

from netrun.report.diff import render
from tests.conftest import RESULTS_FIXTURES


def load(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((RESULTS_FIXTURES / name / "results.json").read_text())
    return doc


def test_diff_shows_the_context_changes() -> None:
    text = render(load("context-a"), load("context-b"))
    assert "host context changed (A -> B):\n" in text
    assert "  alpha: net.ipv4.tcp_congestion_control bbr -> reno\n" in text
    assert "  bravo: net.ipv4.tcp_rmem 4096 131072 33554432 -> 4096 65536 4194304\n" in text


def test_diff_with_an_old_run_says_the_context_is_unknown() -> None:
    text = render(load("baremetal-3"), load("context-a"))
    assert "host context: not recorded in A" in text
