"""One plan per test (netrun.run.plan): once the run planned its tests, nothing looks a
tool or a mode up by name again. Every mode x tool case (tests/unit/modes/cases) runs whole
through scripted hosts with both registries raising after planning, and sends the same
commands, says the same lines and saves the same samples as it does with them."""

from __future__ import annotations

from pathlib import Path

import pytest

from netrun.modes import get_mode
from netrun.tools import get_tool
from tests.unit.modes.sequences import case_files, load, record

CASES = case_files()


class Closed(dict[str, str]):
    """A registry after planning: any lookup by name is a failure of this test."""

    def __getitem__(self, name: str) -> str:
        raise AssertionError(f"{name!r} looked up by name after planning")

    def get(self, name: str, default: object = None) -> str:  # type: ignore[override]
        raise AssertionError(f"{name!r} looked up by name after planning")


def close_registries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every tool and mode lookup by name raises from now on."""
    monkeypatch.setattr("netrun.tools._MODULES", Closed())
    monkeypatch.setattr("netrun.modes._modules", lambda: Closed())


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_a_whole_test_runs_from_its_plan_alone(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    case = load(path)
    if "refused" in case["expected"]:  # refused by the scenario check: no run, no plan
        pytest.skip("refused before planning")
    assert record(case, planned=lambda: close_registries(monkeypatch)) == case["expected"]


def test_the_registries_are_closed_for_real(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above would prove nothing if closing them did not close them."""
    close_registries(monkeypatch)
    with pytest.raises(AssertionError):
        get_tool("iperf3")
    with pytest.raises(AssertionError):
        get_mode("baremetal")


#: Two tests of two repeats each on the same pair, one after another (bare metal starts each
#: next server ahead; docker keeps its containers for the next test) and two at once (a
#: parallel run's rounds): the run's look-ahead builds later tests' modes from their plans.
MORE = {
    "sequential": "  - {{name: t, mode: {mode}, server: alpha, client: bravo, duration: 2,"
    " repeat: 2}}\n  - {{name: u, mode: {mode}, server: alpha, client: bravo, duration: 2,"
    " repeat: 2, bitrate: 1M}}\n",
    "parallel": "parallel: 2\n",
}


@pytest.mark.parametrize("mode", ["baremetal", "docker"])
@pytest.mark.parametrize("kind", ["sequential", "parallel"])
def test_the_look_ahead_of_later_tests_runs_from_their_plans_too(
    mode: str, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = load(Path(CASES[0]).with_name(f"{mode}-iperf3.json"))
    tests = MORE["sequential"].format(mode=mode)
    case["scenario"] = (MORE[kind] if kind == "parallel" else "") + "tests:\n" + tests
    opened = record(case)
    assert [s[0] for s in opened["samples"]] == ["t", "t", "u", "u"]
    assert record(case, planned=lambda: close_registries(monkeypatch)) == opened
