"""The run's shortcuts: each host swept by its last test, each next server started while
the test before runs. A run takes them only when every one of its tests allows them.

A test that sets an MTU (``mtu:``) or has flows turns both off: its undo records would be
swept while the run still tracks them, and a flow test's measurements are its flows'
(netrun.run.flows).
"""

from __future__ import annotations

from collections.abc import Sequence

from netrun.hosts import lease
from netrun.inventory.model import Inventory
from netrun.modes.base import RunContext
from netrun.modes.early_sweep import EarlySweep
from netrun.run.plan import TestPlan


def sweeps_early(tests: Sequence[TestPlan], sequential: bool) -> bool:
    """Whether each host's last test may sweep the host (netrun.modes.early_sweep): iperf3
    tests of modes that allow it (in this kind of run), none setting an MTU (their undo
    records would otherwise be swept while the run still tracks them)."""
    allowed = ("always", "sequential") if sequential else ("always",)
    return all(
        b.mode.sweeps_early in allowed
        and b.tool.starts_ahead
        and b.mtu is None
        and not b.spec.flows  # a flow test's measurements are its flows' (netrun.run.flows)
        for b in tests
    )


def starts_ahead(tests: Sequence[TestPlan]) -> bool:
    """Whether each next test's server may start while the one before runs."""
    return all(
        b.mode.starts_ahead and b.tool.starts_ahead and b.mtu is None and not b.spec.flows
        for b in tests
    )


def arrange(
    ctx: RunContext,
    ordered: Sequence[TestPlan],
    inventory: Inventory,
    rounds: Sequence[Sequence[TestPlan]] | None,
    *,
    sequential: bool,
) -> None:
    """Set the run's early sweep and its starts ahead on ``ctx``, where the tests (their
    plans, in run order) allow them; containers' hosts in sequential runs only."""
    if sweeps_early(ordered, sequential):
        tests = [p.spec for p in ordered]
        ctx.ahead.early_sweep = EarlySweep(tests, ctx.workdir, lease.release_script(ctx.run_id))
        if ordered and starts_ahead(ordered):  # each next server while the one before runs
            mode = ordered[0].mode
            ctx.ahead.pipeline = mode.start_ahead(ordered, inventory, ctx, rounds)
