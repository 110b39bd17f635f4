"""What one run is asked to do (``RunRequest``: the request the CLI, or any caller of the
library, builds for netrun.run.runner.Run), and what the runner's parts see of the run
(``Runner``): apart from the runner, so that its parts (the fleet, the flow tests) name
those types without importing it.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from netrun.cleanup.journal import Journal
from netrun.core.measurement import Measurement
from netrun.core.spec import Scenario
from netrun.hosts.ssh.settings import SSHSettings
from netrun.inventory.model import Inventory
from netrun.modes.base import Mode, RunContext
from netrun.results.store import Document, ResultsDir
from netrun.run.mtu import MtuSettings
from netrun.run.plan import TestPlan
from netrun.run.preconnect import Preconnect
from netrun.run.progress import Events

Progress = Callable[[str], None]


def new_run_id() -> str:
    return secrets.token_hex(4)


@dataclass
class RunRequest:
    """Everything one run needs; built by the CLI, or by any other caller of the library."""

    scenario: Scenario
    inventory: Inventory
    outdir: Path
    settings: SSHSettings = field(default_factory=SSHSettings)
    limit: str | None = None
    run_id: str = field(default_factory=new_run_id)
    progress: Progress = lambda _line: None
    #: results.json of an interrupted run to finish: tests whose samples all passed are kept.
    resume: dict[str, Any] | None = None
    #: Tests at once (never two on one host); None takes the scenario's ``parallel``.
    parallel: int | None = None
    #: Where runs note the hosts they touch, so a SIGKILLed run is swept by the next one.
    journal: Journal | None = None
    #: Samples starting and ending, for a progress display (netrun.run.progress).
    events: Events = field(default_factory=Events)
    #: Called once, as the first measurement starts: work the run's end needs can be
    #: done while the controller only waits (netrun.job imports the report renderer).
    measuring: Callable[[], None] = lambda: None
    #: Connections already being opened (netrun.run.preconnect.Preconnect), or None.
    preconnect: Preconnect | None = None
    #: Seconds to wait for hosts another run measures (netrun.hosts.lease); 0 refuses at
    #: once (HostLeased).
    wait_for_hosts: float = 0.0


class Runner(Protocol):
    """What a flow test needs of the run (netrun.run.runner.Run)."""

    req: RunRequest
    ctx: RunContext
    out: ResultsDir
    mtu: MtuSettings

    def progress(self, line: str) -> None: ...
    def note_error(self, message: str) -> None: ...
    def interrupt(self, running: bool = True) -> None: ...
    def add_sample(
        self,
        p: TestPlan,
        repeat: int,
        m: Measurement | None,
        *,
        error: str | None = None,
        mode: Mode | None = None,
        raw: str | None = None,
        started: str | None = None,
        extra: Mapping[str, object] | None = None,
    ) -> Document:
        """Add one sample (a results.json record) of a planned test to the results, and save."""
        ...
