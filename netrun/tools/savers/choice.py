"""Which of the run-wide savers a run takes: each host swept by its last test
(Saver.EARLY_SWEEP), each next server started while the test before runs
(Saver.START_AHEAD). A run takes one only when every one of its tests allows it: its
mode (``Mode.savers``, in this kind of run) and its tool (Tool.starts_ahead: the armed
client and the server start are iperf3's).

A test that sets an MTU (``mtu:``) or has flows turns both off: its undo records would be
swept while the run still tracks them, and a flow test's measurements are its flows'
(netrun.run.flows).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from netrun.hosts import lease
from netrun.tools.savers.model import Saver, Savers
from netrun.tools.savers.sweep import EarlySweep

if TYPE_CHECKING:
    from netrun.core.mtuplan import MtuWant
    from netrun.core.spec import TestSpec
    from netrun.hosts.host import Host
    from netrun.tools.savers.state import Ahead, StartsAhead


class Starting(Protocol):
    """A test's tool as the choice reads it (netrun.tools.base.Tool)."""

    @property
    def starts_ahead(self) -> bool: ...


class Choosable(Protocol):
    """A planned test as the choice reads it (netrun.run.plan.TestPlan)."""

    @property
    def spec(self) -> TestSpec: ...
    @property
    def tool(self) -> Starting: ...
    @property
    def mtu(self) -> MtuWant | None: ...
    @property
    def savers(self) -> Savers: ...


def takes(tests: Sequence[Choosable], saver: Saver, *, sequential: bool) -> bool:
    """Whether a run of ``tests`` (sequential or not) takes ``saver``: every test's mode
    allows it, its tool starts ahead (iperf3), and none sets an MTU or has flows."""
    return all(
        t.savers.allows(saver, sequential=sequential)
        and t.tool.starts_ahead
        and t.mtu is None
        and not t.spec.flows  # a flow test's measurements are its flows' (netrun.run.flows)
        for t in tests
    )


class Run(Protocol):
    """What the choice reads of the run's shared state (netrun.modes.base.RunContext)."""

    @property
    def run_id(self) -> str: ...
    @property
    def ahead(self) -> Ahead: ...
    def workdir(self, host: Host) -> str: ...


def arrange(
    ctx: Run,
    ordered: Sequence[Choosable],
    *,
    sequential: bool,
    start_ahead: Callable[[], StartsAhead | None],
) -> None:
    """Set the run's early sweep and its starts ahead (``start_ahead``: the first test's
    mode's, Mode.start_ahead) on ``ctx.ahead``, where the tests (in run order) allow them."""
    if takes(ordered, Saver.EARLY_SWEEP, sequential=sequential):
        tests = [p.spec for p in ordered]
        release = lease.release_script(ctx.run_id)
        ctx.ahead.early_sweep = EarlySweep(tests, ctx.workdir, release)
        if ordered and takes(ordered, Saver.START_AHEAD, sequential=sequential):
            ctx.ahead.pipeline = start_ahead()
