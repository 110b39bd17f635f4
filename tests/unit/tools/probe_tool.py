"""A tool that exists only in the tests: proof that a tool is its own package plus one
registry line (netrun.tools._MODULES), measured through the placement's ends in any mode.

``probe ADDRESS`` prints ``rtt=<ms>``; its metric is that number."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from netrun.core.measurement import Measurement
from netrun.core.metrics import Metric
from netrun.core.options import Option, integer
from netrun.core.programs import Program
from netrun.errors import ToolError
from netrun.tools.base import Tool

if TYPE_CHECKING:
    from netrun.core.spec import TestSpec
    from netrun.tools.base import Placement

OPTIONS = (
    Option("duration", (int, float), 1, "seconds (unused)"),
    Option("count", int, 3, "probes per run", check=integer(1, 100)),
)
METRICS = (Metric("rtt_ms", "ms", "lower", "the probe's round trip", digits=3),)


def argv(mode: Placement) -> list[str]:
    """The client end's probe to the server end's address."""
    found = ["probe", "-c", str(mode.test.value("count")), mode.end("server").address]
    return mode.end("client").wrap(found)


def measure(mode: Placement, repeat: int) -> Measurement:
    res = mode.end("client").run(shlex.join(argv(mode)), timeout=30, check=False)
    if not res.stdout.startswith("rtt="):
        raise ToolError(f"{mode.client.name}: probe said {res.stdout!r}", res.stdout)
    rtt = float(res.stdout.strip().removeprefix("rtt="))
    return Measurement(res.stdout, None, {}, {"rtt_ms": rtt}, {})


def preview(mode: Placement) -> list[tuple[str, str]]:
    return [("client", shlex.join(argv(mode)))]


def describe(test: TestSpec) -> str:
    return f"probing {test.value('count')} times"


TOOL = Tool(
    name="probe",
    options=OPTIONS,
    metrics=METRICS,
    measure=measure,
    describe=describe,
    protocol="icmp",
    needs={"client": ("probe",)},
    installs=(Program("probe", "netrun_probe", "probe-utils", "probe-tools"),),
    preview=preview,
)
