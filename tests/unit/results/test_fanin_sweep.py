"""A fan test swept over its clients (issue 28), from a lab run saved as results.json:
``sweep: {clients: [1, 3]}`` into delta, fan[1->delta] then fan[3->delta]."""

from __future__ import annotations

import copy
import json

import pytest

from netrun.results.fanin import fanins, sweeps
from tests.conftest import RESULTS_FIXTURES

DOC = json.loads((RESULTS_FIXTURES / "fanin-clients" / "results.json").read_text())


def test_the_counts_of_one_fan_are_grouped_fewest_first() -> None:
    (found,) = sweeps(DOC)
    assert (found.name, found.kind, found.host, found.mode) == (
        "fan[N->delta]",
        "fanin",
        "delta",
        "baremetal",
    )
    assert [(n, f.test) for n, f in found.points] == [(1, "fan[1->delta]"), (3, "fan[3->delta]")]
    by_test = {s["name"]: s for s in DOC["tests"]}
    for _n, fan in found.points:  # each figure is its test's own: aggregate and ceiling
        sample = by_test[fan.test]
        assert fan.aggregate_mbps == pytest.approx(sample["metrics"]["aggregate_bps"] / 1e6)
        assert fan.ceiling_mbps == sample["goodput_ceiling_mbps"]
    row = found.to_dict()["by_clients"][1]
    assert row["clients"] == 3 and row["test"] == "fan[3->delta]" and row["repeats"] == 1


def test_one_width_or_other_swept_keys_apart_are_no_sweep() -> None:
    one = copy.deepcopy(DOC)
    one["tests"] = one["tests"][:1]
    assert len(fanins(one)) == 1 and sweeps(one) == []
    apart = copy.deepcopy(DOC)
    apart["tests"][1]["name"] = "fan[3->delta][streams=2]"  # another combination: its own
    assert sweeps(apart) == []


def test_a_fanout_swept_over_its_clients() -> None:
    out = copy.deepcopy(DOC)
    for sample in out["tests"]:
        n = len(sample["flows"])
        sample["name"] = f"spread[delta->{n}]"
        sample["flows"] = [["delta", c] for c, _ in sample["flows"]]
        sample["details"]["fan"]["kind"] = "fanout"
    (found,) = sweeps(out)
    assert found.name == "spread[delta->N]" and found.kind == "fanout"
    assert [n for n, _ in found.points] == [1, 3]
