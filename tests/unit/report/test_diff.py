"""`netrun diff`: every declared metric judged with tolerances, exit 3 on a regression
(issue 25), and what changed on the hosts (netrun.results.context), from real runs.

The judged runs are the captured lab run baremetal-4s (tests/fixtures/results): its udp-500m
test with the loss set to what two nights measured.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from netrun import job
from netrun.cli import main as cli
from netrun.report import diff
from netrun.report.diff import render
from tests.conftest import RESULTS_FIXTURES

BASE = json.loads((RESULTS_FIXTURES / "baremetal-4s" / "results.json").read_text())


def load(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((RESULTS_FIXTURES / name / "results.json").read_text())
    return doc


def udp_run(run_id: str, lost: float, **options: Any) -> dict[str, Any]:
    doc = copy.deepcopy(BASE)
    doc.pop("baseline", None)
    doc["run_id"] = run_id
    doc["tests"] = [t for t in doc["tests"] if t["name"] == "udp-500m"]
    for t in doc["tests"]:
        t["lost_percent"] = lost
        t.setdefault("metrics", {})["lost_percent"] = lost
        t["options"].update(options)
    return doc


def row(text: str, metric: str) -> str:
    return next(x for x in text.splitlines() if metric in x and x.startswith("udp-500m"))


def test_every_metric_is_a_row_and_loss_is_judged() -> None:
    a, b = udp_run("aaaa0001", 0.2), udp_run("aaaa0002", 8.7)
    text = diff.render(a, b)
    loss = row(text, "lost_percent")
    assert "0.20" in loss and "8.70" in loss and "1 point" in loss and "regressed" in loss
    head = row(text, "throughput_bps")
    assert "regressed" in head  # the test's verdict: the loss regressed it
    assert "jitter_ms" in text and "sender_bps" in text
    assert "retransmits" not in text  # UDP has none: absent, not a row of dashes
    assert diff.regressed(a, b)
    assert not diff.regressed(a, udp_run("aaaa0003", 0.9))


def test_an_incomparable_test_is_never_a_regression() -> None:
    a, b = udp_run("aaaa0001", 0.2), udp_run("aaaa0002", 8.7, bitrate="900M")
    assert "incomparable" in row(diff.render(a, b), "throughput_bps")
    assert not diff.regressed(a, b)


@pytest.mark.parametrize(("lost", "code"), [(8.7, job.EXIT_REGRESSED), (0.5, job.EXIT_OK)])
def test_netrun_diff_exits_3_on_a_regression(
    tmp_path: Path, lost: float, code: int, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = []
    for run_id, value in (("aaaa0001", 0.2), ("aaaa0002", lost)):
        path = tmp_path / f"{run_id}.json"
        path.write_text(json.dumps(udp_run(run_id, value)))
        paths.append(str(path))
    assert cli.main(["diff", *paths]) == code
    assert "lost_percent" in capsys.readouterr().out


def test_diff_shows_the_context_changes() -> None:
    text = render(load("context-a"), load("context-b"))
    assert "host context changed (A -> B):\n" in text
    assert "  alpha: net.ipv4.tcp_congestion_control bbr -> reno\n" in text
    assert "  bravo: net.ipv4.tcp_rmem 4096 131072 33554432 -> 4096 65536 4194304\n" in text


def test_diff_with_an_old_run_says_the_context_is_unknown() -> None:
    text = render(load("baremetal-3"), load("context-a"))
    assert "host context: not recorded in A" in text
