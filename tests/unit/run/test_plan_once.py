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
