"""A latency test with ``load:``: its tool measured idle, then under a bulk iperf3 flow.

``with_load(tool, options)`` is the test's tool when its options carry a load (the run plans
it, netrun.run.plan; the validator reads its metrics for ``tolerances:``). Each repeat:

1. the tool measures idle, as it would without ``load:``;
2. the load starts on the same pair and path (netrun.tools.load.flow);
3. after ``RAMP`` seconds the tool measures again, loaded;
4. the load runs out its ``-t`` (the loaded window plus the ramp and a second) and its
   receiver throughput over the run is ``load_throughput_bps``.

``RAMP`` is 2 s: the client's start crosses an SSH session (0.1-0.5 s), then iperf3's
control connection and streams, then TCP slow start; a queue fills within a few round
trips of that, and a probe sent before it has filled measures an idle path.

Metrics: the tool's own, each as ``<name>_idle`` and ``<name>_loaded``, then
``latency_added_p50_ms`` and ``latency_added_p99_ms`` (loaded minus idle, in ms whatever the
tool's unit) and ``load_throughput_bps``. The headline is ``latency_added_p50_ms``: a bulk
flow's standing queue shifts the whole distribution, so the median shows it, and the median
exists for any probe count, where a p99 needs 100 probes (20 s of ping at its 0.2 s
floor): a short test would otherwise have no headline. The p99 is reported beside it when
the probes allow. The raw file is one JSON document holding the idle and loaded outputs
and the load's iperf3 JSON; ``details`` keep each phase's own (ping's per-reply RTTs,
netperf's percentiles) for the latency-under-load plot.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from netrun.core.measurement import Measurement
from netrun.core.metrics import Metric
from netrun.errors import Cancelled
from netrun.tools.base import Latency, Tool
from netrun.tools.iperf3 import command as iperf3_command
from netrun.tools.load import spec as load_spec
from netrun.tools.load.flow import EndFlow, Flow, HostFlow

if TYPE_CHECKING:
    from netrun.core.spec import TestSpec
    from netrun.tools.base import Placement

RAMP = 2.0
PHASES = ("idle", "loaded")
# fmt: off
ADDED: tuple[Metric, ...] = (
    Metric("latency_added_p50_ms", "ms", "lower", "median latency under load minus idle "
           "(the queue the load builds)", tolerance=2.0, digits=3),
    Metric("latency_added_p99_ms", "ms", "lower", "99th percentile latency under load minus "
           "idle (>= 100 probes)", tolerance=5.0, digits=3),
    Metric("load_throughput_bps", "bits/s", "higher", "the load's receiver throughput while "
           "it ran (iperf3; direction: both sums the two directions, each in "
           "details.load.bidir_bps)", tolerance="10%", scale=1e6, shown_unit="Mbit/s",
           digits=1),
)
# fmt: on


def phased(metric: Metric, phase: str) -> Metric:
    return replace(
        metric, name=f"{metric.name}_{phase}", description=f"{metric.description} ({phase})"
    )


def metrics_of(tool: Tool) -> tuple[Metric, ...]:
    """A loaded test's metrics: the added latency first, then each of the tool's own idle
    and loaded."""
    own = tuple(phased(m, p) for m in tool.metrics for p in PHASES)
    return (*ADDED, *own)


def window(test: TestSpec) -> float:
    """Seconds the tool measures for (ping: count x interval; the others: duration)."""
    o = test.options
    if "count" in o and "interval" in o:
        return float(o["count"]) * float(o["interval"])
    return float(o.get("duration") or 10)


def added(
    tool: Tool, idle: Measurement, loaded: Measurement
) -> tuple[dict[str, float | None], dict[str, str]]:
    """latency_added_p50_ms / _p99_ms (loaded minus idle, in ms), and why either is null
    (the phase's own reason, e.g. too few replies for a p99), from the metrics the tool
    says are its latency's (Tool.latency)."""
    latency = tool.latency or Latency(None, None)
    values: dict[str, float | None] = {}
    why: dict[str, str] = {}
    for name, source in (
        ("latency_added_p50_ms", latency.p50),
        ("latency_added_p99_ms", latency.p99),
    ):
        if source is None:
            values[name] = None
            why[name] = f"{tool.name} reports no such percentile (see its _idle and _loaded forms)"
            continue
        a, b = idle.metrics.get(source), loaded.metrics.get(source)
        values[name] = None if a is None or b is None else (float(b) - float(a)) * latency.per_ms
        if values[name] is None:
            phase, m = ("idle", idle) if a is None else ("loaded", loaded)
            why[name] = f"{source} {phase}: {m.unavailable.get(source, 'not reported')}"
    return values, why


def place(mode: Placement, load: load_spec.Load, seconds: float, tag: str) -> Flow:
    """The flow at the test's ends: on a fixed port where they have ports of their own
    (a container's), else on a free one of the hosts' range."""
    if mode.end("server").own_ports:
        return EndFlow(mode, load, seconds, tag)
    return HostFlow(mode, load, seconds, tag)


def measure(tool: Tool, mode: Placement, repeat: int) -> Measurement:
    """One repeat: idle, then loaded with the flow running (see the module docstring)."""
    test = mode.test
    load = load_spec.of(test.options)
    assert load is not None
    idle = tool.measure(mode, repeat)
    flow = place(mode, load, flow_seconds(test), f"{test.tag}r{repeat}load")
    flow.start()
    try:
        stopping = getattr(mode.ctx, "stopping", None)  # the run's (RunContext.stopping)
        if stopping is None:
            time.sleep(RAMP)
        elif stopping.wait(RAMP):
            raise Cancelled(mode.client.name)
        loaded = tool.measure(mode, repeat)
        result, load_raw = flow.finish()
    except BaseException:
        flow.stop()
        raise
    metrics: dict[str, float | None] = {}
    why: dict[str, str] = {}
    for phase, m in (("idle", idle), ("loaded", loaded)):
        for x in tool.metrics:
            metrics[f"{x.name}_{phase}"] = m.metrics.get(x.name)
            if x.name in m.unavailable:
                why[f"{x.name}_{phase}"] = m.unavailable[x.name]
    values, reasons = added(tool, idle, loaded)
    metrics.update(values)
    why.update(reasons)
    metrics["load_throughput_bps"] = result.receiver_bps
    if result.receiver_bps is None:
        why["load_throughput_bps"] = "the load's iperf3 reported no receiver figure"
    raw = json.dumps({"idle": idle.raw, "loaded": loaded.raw, "load": load_raw}, indent=1)
    details = {
        **loaded.details,
        "idle": idle.details,
        "loaded": loaded.details,
        "load": {
            **vars(load),
            "ramp_s": RAMP,
            "seconds": flow_seconds(test),
            "receiver_bps": result.receiver_bps,
            "sender_bps": result.sender_bps,
            "retransmits": result.retransmits,
            "bidir_bps": list(result.bidir_bps) if result.bidir_bps else None,
        },
    }
    for key in ("rtts_ms", "histogram_us", "per_instance"):  # each phase keeps its own
        details.pop(key, None)
    return Measurement(raw, (idle.result, loaded.result, result), details, metrics, why)


def flow_seconds(test: TestSpec) -> int:
    """The load's -t: the ramp, the loaded window and a second."""
    return int(-(-(RAMP + window(test) + 1) // 1))


def preview(mode: Placement) -> list[tuple[str, str]]:
    """The load's bulk iperf3 flow, both ends, placed as the run places it (on the hosts,
    or in a container mode's containers): what ``--check-only`` shows beside the tool's."""
    test = mode.test
    load = load_spec.of(test.options)
    assert load is not None  # the loaded form's (with_load)
    return place(mode, load, flow_seconds(test), f"{test.tag}r1load").preview()


def with_load(tool: Tool, options: Mapping[str, Any]) -> Tool:
    """The test's tool: ``tool`` itself, or its loaded form when ``options`` carry a load."""
    if load_spec.of(options) is None:
        return tool
    needs = dict(tool.needs or {})
    for role in ("server", "client"):  # the load's ends run iperf3 on the hosts (bare metal)
        needs[role] = (*needs.get(role, ()), "iperf3")

    def describe(test: TestSpec) -> str:
        load = load_spec.of(test.options)
        shown = load.describe() if load else "load"
        return f"{tool.describe(test)} idle, then under {shown}"

    return replace(
        tool,
        metrics=metrics_of(tool),
        measure=lambda mode, repeat: measure(tool, mode, repeat),
        describe=describe,
        needs=needs,
        installs=(*tool.installs, iperf3_command.PROGRAM),
        raw_suffix=".json",  # one JSON document: idle, loaded, the load's iperf3 JSON
        beside_preview=preview,
        beside_seconds=flow_seconds,
    )
