"""The iperf3 release in the baseline's comparability rule (release.tool_version_change):
-P above 1 across 3.15 and 3.16 (threaded streams) is incomparable; any other change of
release is shown beside the verdict, once: not again among the hosts' context changes."""

from __future__ import annotations

import copy
import json
from typing import Any

from netrun.history import baseline, release
from netrun.history.regress import compare
from netrun.results import context
from tests.conftest import HISTORY_FIXTURES, RESULTS_FIXTURES


def run_of(version: str | None) -> dict[str, Any]:
    doc = json.loads((HISTORY_FIXTURES / "baremetal-1" / "results.json").read_text())
    for sample in doc["tests"]:
        sample["tool_version"] = version
    return doc


def verdicts(now: str | None, before: str | None) -> dict[str, Any]:
    return {v.test: v for v in compare(run_of(now), run_of(before))}


def test_parallel_streams_across_3_16_are_incomparable() -> None:
    got = verdicts("3.16", "3.15")
    four = got["tcp-4-streams"]
    assert four.verdict == "incomparable"
    assert "iperf3 3.16 (baseline 3.15) with streams 4" in four.detail
    assert "threads" in four.detail
    assert got["tcp-forward"].verdict != "incomparable"  # one stream: no threads to differ by
    assert "iperf3 3.16 (baseline 3.15)" in got["tcp-forward"].detail


def test_another_release_change_is_shown_beside_the_verdict() -> None:
    got = verdicts("3.12", "3.9")
    for name in ("tcp-forward", "tcp-4-streams", "udp-500m"):
        assert got[name].verdict != "incomparable"
        assert got[name].detail.endswith("; iperf3 3.12 (baseline 3.9)")


def test_the_same_release_adds_nothing() -> None:
    got = verdicts("3.12", "3.12")
    assert not any("baseline 3.12" in v.detail for v in got.values())


def test_runs_before_tool_version_fall_back_on_the_probed_client_version() -> None:
    old = run_of(None)
    for sample in old["tests"]:
        del sample["tool_version"]
    new = copy.deepcopy(old)
    for sample in new["tests"]:
        sample["tool_version"] = "3.16"
    four = [s for s in new["tests"] if s["name"] == "tcp-4-streams"]
    before = [s for s in old["tests"] if s["name"] == "tcp-4-streams"]
    assert before[0]["iperf3_version"]["client"] == "3.12"
    why, note = release.tool_version_change(four, before)
    assert why is not None and "3.16 (baseline 3.12)" in why and note is None


def test_unknown_versions_are_no_change() -> None:
    assert release.tool_version_change([{}], [{"tool_version": "3.9"}]) == (None, None)


def test_the_table_notes_name_the_release_change_and_its_tests() -> None:
    doc = run_of("3.16")
    got = compare(doc, run_of("3.12"))
    doc["baseline"] = {
        "run_id": "b1",
        "started": "2026-12-01T00:00:00Z",
        "verdicts": [{"test": v.test, "verdict": v.verdict, "detail": v.detail} for v in got],
    }
    lines = baseline.describe(doc)
    assert lines[0] == "baseline: run b1 of 2026-12-01T00:00:00Z"
    assert lines[1] == (
        "iperf3 changed since the baseline: 3.12 -> 3.16 "
        "(tcp-forward, tcp-reverse, tcp-4-streams, udp-500m)"
    )


def release_runs(alpha: str = "3.16") -> tuple[dict[str, Any], dict[str, Any]]:
    """context-a then context-b (real lab runs whose hosts' sysctls differ), B's iperf3 3.16
    by its JSON and by bravo's context, ``alpha``'s by alpha's context."""
    a = json.loads((RESULTS_FIXTURES / "context-a" / "results.json").read_text())
    b = json.loads((RESULTS_FIXTURES / "context-b" / "results.json").read_text())
    for doc, version in ((a, "3.12"), (b, "3.16")):
        for sample in doc["tests"]:
            sample["tool_version"] = version
    b["hosts"]["bravo"]["context"]["tools"]["iperf3"] = "3.16"
    b["hosts"]["alpha"]["context"]["tools"]["iperf3"] = alpha
    return a, b


def test_a_release_change_is_named_once_in_the_verdict_and_the_report() -> None:
    a, b = release_runs()
    (verdict,) = compare(b, a)
    assert verdict.detail.count("3.16") == 1 and "; iperf3 3.16 (baseline 3.12)" in verdict.detail
    assert "iperf3 version" not in verdict.detail
    assert "context changed: alpha: net.ipv4.tcp_congestion_control bbr -> reno" in verdict.detail
    b["baseline"] = {
        "run_id": a["run_id"],
        "started": a["started"],
        "verdicts": [{"test": "tcp", "verdict": verdict.verdict, "detail": verdict.detail}],
        "context_changes": context.records(context.changes(a, b)),
    }
    lines = baseline.describe(b)
    assert sum("3.16" in line for line in lines) == 1, lines
    assert "iperf3 changed since the baseline: 3.12 -> 3.16 (tcp)" in lines
    assert any(line.startswith("tcp: ok; alpha: net.ipv4.tcp_congestion_control") for line in lines)
    # the document keeps every change; only what is shown is said once
    assert {c["field"] for c in b["baseline"]["context_changes"]} >= {"iperf3 version"}


def test_a_host_whose_release_changed_otherwise_is_still_named() -> None:
    a, b = release_runs(alpha="3.17")
    (verdict,) = compare(b, a)
    assert "alpha: iperf3 version 3.12 -> 3.17" in verdict.detail
    assert "bravo: iperf3 version" not in verdict.detail  # the verdict's own note says it


def test_an_incomparable_verdict_names_the_release_once() -> None:
    a, b = release_runs()
    for doc in (a, b):
        doc["tests"][0]["options"]["streams"] = 4
    (verdict,) = compare(b, a)
    assert verdict.verdict == "incomparable" and "iperf3 version" not in verdict.detail
    assert verdict.detail.count("3.12") == 1  # "iperf3 3.16 (baseline 3.12) with streams 4"
