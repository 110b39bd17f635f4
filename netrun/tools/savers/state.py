"""What a run keeps of its round-trip savers (``RunContext.ahead``), and the small
Protocols through which the savers see a run's shared state and its tests."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from netrun.tools.savers.sweep import EarlySweep

if TYPE_CHECKING:
    from netrun.cleanup.ledger import Scope
    from netrun.core.spec import TestSpec


class Armed(Protocol):
    """A client started before its measurement, waiting for its server
    (netrun.tools.iperf3.run.ArmedClient, netrun.modes.docker.savers.client.ArmedExec): the
    run abandons the ones no measurement fired."""

    def abandon(self) -> None: ...


class StartsAhead(Protocol):
    """The run's starts ahead, each next test's server while the one before runs
    (netrun.tools.savers.pipeline.Pipeline), as the modes and the run drive them."""

    def ahead(
        self,
        test: TestSpec,
        repeat: int,
        deadline: float,
        running: Mapping[str, str] | None = None,
    ) -> set[str]: ...
    def reading_after(self, test: TestSpec, host: str) -> str | None: ...
    def wait(self, host: str, tag: str, timeout: float = 40) -> None: ...
    def join_all(self, timeout: float = 40) -> None: ...


@dataclass
class Ahead:
    """What the run starts ahead of a measurement, to save round trips: on a host's probe,
    while another test runs, or as a host's last measurement ends."""

    #: (host name, tag) -> what a start script printed when it rode on the host's probe
    #: or ran ahead (netrun.tools.savers.prestart); the measurement with that tag adopts
    #: the server.
    prestarted: dict[tuple[str, str], str] = field(default_factory=dict)
    #: Container name -> (its time bound's undo record, in a scope of its own until the
    #: test adopts it; images checked; engine checked) when its start rode on its host's
    #: probe (netrun.modes.docker.savers.probe).
    early: dict[str, tuple[Scope, list[str], bool]] = field(default_factory=dict)
    #: (host name, tag) -> an iperf3 client already started there, waiting for its
    #: server's port (netrun.tools.iperf3.run.ArmedClient, armed during the host's probe), or a
    #: container test's ``docker exec`` waiting for its server's address
    #: (netrun.modes.docker.savers.client).
    armed: dict[tuple[str, str], Armed] = field(default_factory=dict)
    #: Each host's last measurement sweeps the host (netrun.tools.savers.sweep), when the
    #: run allows it; None: the run's end sweeps every host.
    early_sweep: EarlySweep | None = None
    #: The next test's server and client, started while a test runs
    #: (netrun.tools.savers.pipeline), in a sequential bare-metal run; None otherwise.
    pipeline: StartsAhead | None = None


class Shares(Protocol):
    """What the savers read of the run's shared state (netrun.modes.base.RunContext)."""

    @property
    def ahead(self) -> Ahead: ...
    @property
    def stopping(self) -> threading.Event: ...


class Specced(Protocol):
    """A planned test as the savers' look-ahead reads it (netrun.run.plan.TestPlan)."""

    @property
    def spec(self) -> TestSpec: ...
