"""What each mode allows of the round-trip savers (netrun.tools.savers.model), and which of
them a run takes (netrun.tools.savers.choice): the choices the modes' old flags made
(bare metal: every saver in every run; docker: the early sweep in sequential runs only;
the others: none, so every tool measures through their ends)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from netrun.modes import get_mode
from netrun.tools.savers.choice import takes
from netrun.tools.savers.model import NONE, Saver, Savers


def plan(mode: str, *, tool_starts_ahead: bool = True, mtu: Any = None, flows: bool = False) -> Any:
    """A planned test as the choice reads it (netrun.run.plan.TestPlan's fields)."""
    return SimpleNamespace(
        spec=SimpleNamespace(flows=(1, 2) if flows else ()),
        tool=SimpleNamespace(starts_ahead=tool_starts_ahead),
        mtu=mtu,
        savers=get_mode(mode).savers,
    )


def test_a_saver_allowed_in_sequential_runs_only_is_refused_in_a_parallel_one() -> None:
    s = Savers(frozenset({Saver.KEEP_CONTAINERS}), sequential_only=frozenset({Saver.EARLY_SWEEP}))
    assert s.allows(Saver.KEEP_CONTAINERS, sequential=False)
    assert s.allows(Saver.EARLY_SWEEP) and not s.allows(Saver.EARLY_SWEEP, sequential=False)
    assert not s.allows(Saver.START_AHEAD)
    assert s and not NONE


@pytest.mark.parametrize(
    ("mode", "sweeps", "sweeps_parallel", "ahead"),
    [
        ("baremetal", True, True, True),
        ("docker", True, False, False),
        ("flannel", True, False, False),
        ("freeflow", True, False, False),
        ("kubernetes", False, False, False),
        ("turn", False, False, False),
    ],
)
def test_each_mode_allows_what_its_old_flags_did(
    mode: str, sweeps: bool, sweeps_parallel: bool, ahead: bool
) -> None:
    tests = [plan(mode), plan(mode)]
    assert takes(tests, Saver.EARLY_SWEEP, sequential=True) is sweeps
    assert takes(tests, Saver.EARLY_SWEEP, sequential=False) is sweeps_parallel
    assert takes(tests, Saver.START_AHEAD, sequential=True) is ahead
    assert bool(get_mode(mode).savers) is (mode not in ("kubernetes", "turn"))


def test_one_test_that_cannot_take_a_saver_turns_it_off_for_the_run() -> None:
    for other in (
        plan("kubernetes"),
        plan("baremetal", tool_starts_ahead=False),  # not iperf3: nothing to arm
        plan("baremetal", mtu=object()),  # its undo records stay tracked
        plan("baremetal", flows=True),  # its measurements are its flows'
    ):
        assert not takes([plan("baremetal"), other], Saver.EARLY_SWEEP, sequential=True)
        assert not takes([plan("baremetal"), other], Saver.START_AHEAD, sequential=True)
