"""A mode's polling waits end as soon as an interrupted parallel run sets ctx.stopping.

The main thread of a parallel run waits for its workers with SIGINT and SIGTERM shielded;
a worker polling for a container (start_timeout, up to an hour) must not make Ctrl-C wait
that long. The host answers through a stand-in transport: docker is exercised for real in
the integration tests.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from netrun.errors import Cancelled
from netrun.hosts.command import CommandResult
from netrun.hosts.host import Host
from netrun.modes.base import RunContext
from netrun.modes.docker import ready
from netrun.modes.docker.mode import DockerMode
from netrun.scenario.loader import load_scenario


class NoContainerYet:
    """Every command fails as `docker inspect` does for a container not created yet."""

    def run(self, argv: Any, *, timeout: float, sudo: bool = False, check: bool = True) -> Any:
        return CommandResult("alpha", str(argv), 1, "", "Error: No such object", 0.0)


def test_container_wait_ends_when_the_run_stops(tmp_path: Path) -> None:
    scen = tmp_path / "s.yaml"
    scen.write_text(
        "tests:\n  - {name: t, mode: docker, server: alpha, client: bravo, start_timeout: 3600}\n"
    )
    (test,) = load_scenario(scen, hosts=["alpha", "bravo"]).tests
    alpha, bravo = Host("alpha", {}), Host("bravo", {})
    alpha.transport = NoContainerYet()  # type: ignore[assignment]
    ctx = RunContext(run_id="1a2b")
    mode = DockerMode(test, alpha, bravo, ctx)
    threading.Timer(0.2, ctx.stopping.set).start()
    started = time.monotonic()
    with pytest.raises(Cancelled):
        ready.wait(mode, "server", alpha)
    assert time.monotonic() - started < 5
