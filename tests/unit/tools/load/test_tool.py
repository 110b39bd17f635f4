"""A ``load:`` test's measurement: idle, then loaded beside the load's flow, on real output.

The fixtures (tests/fixtures/load, see its README) are one repeat's raw file from a
50 Mbit/s lab link: the idle and loaded ping outputs and the load's iperf3 JSON. Here the
ping tool parses them as if its hosts had printed them, and a stand-in flow hands back
the load's JSON, so the measurement's own arithmetic and bookkeeping are what is tested.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from netrun.core.measurement import Measurement
from netrun.core.spec import TestSpec
from netrun.errors import ToolError
from netrun.hosts.command import CommandResult
from netrun.scenario.loader import load_scenario
from netrun.tools import get_tool
from netrun.tools.ends import HostEnd
from netrun.tools.iperf3 import parse as iperf3_parse
from netrun.tools.iperf3.result import Iperf3Result
from netrun.tools.load import flow as load_flow
from netrun.tools.load import tool as load_tool
from netrun.tools.load.spec import Load
from tests.conftest import LOAD_FIXTURES

#: The module's own placement (the tests below stand a flow in for it).
PLACE = load_tool.place
RAW = json.loads((LOAD_FIXTURES / "ping-bidir-50mbit.raw.json").read_text())


def spec(tmp_path: Path, load: str = "{streams: 4, direction: both}") -> TestSpec:
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\ntests:\n  - {name: t, mode: baremetal, tool: ping, server: a, client: b,"
        f" count: 10, interval: 0.2, load: {load}}}\n"
    )
    return load_scenario(path, hosts=["a", "b"]).tests[0]


class Host:
    """A host whose commands print what the lab's printed, one output per call."""

    def __init__(self, name: str, outputs: list[str]) -> None:
        self.name = name
        self.data_ip = "10.202.34.10"
        self.vars: dict[str, Any] = {}
        self.outputs = outputs

    def run(self, command: str, *, timeout: float, check: bool = True) -> CommandResult:
        return CommandResult(self.name, command, 0, self.outputs.pop(0), "", 0.1)


class Ctx:
    def __init__(self) -> None:
        self.stopping = threading.Event()

    def workdir(self, host: Any) -> str:
        return "/tmp/netrun-x"


class Flow:
    """The load's flow as a placement gives it: its real iperf3 JSON, or a failure."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.calls: list[str] = []

    def start(self) -> None:
        self.calls.append("start")

    def finish(self) -> tuple[Iperf3Result, str]:
        self.calls.append("finish")
        if self.fail:
            raise ToolError("load flow b -> a: iperf3 client exited")
        return iperf3_parse.parse(RAW["load"], 0), RAW["load"]

    def stop(self) -> None:
        self.calls.append("stop")


class Mode:
    def __init__(self, test: TestSpec, flow: Flow) -> None:
        self.test = test
        self.server = Host("a", [])
        self.client = Host("b", [RAW["idle"], RAW["loaded"]])
        self.ctx = Ctx()
        self.details: dict[str, Any] = {}
        self.flow = flow
        self.placed: list[tuple[Load, float, str]] = []

    def end(self, role: str) -> HostEnd:
        host = self.server if role == "server" else self.client
        return HostEnd(self, role, host)  # type: ignore[arg-type]


def stand_in(mode: Mode, load: Load, seconds: float, tag: str) -> Flow:
    """The flow placed at the mode's ends (load_tool.place), the stand-in here."""
    mode.placed.append((load, seconds, tag))
    return mode.flow


@pytest.fixture(autouse=True)
def no_ramp(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(load_tool, "RAMP", 0.0)
    monkeypatch.setattr(load_tool, "place", stand_in)


def test_idle_then_loaded_with_the_added_latency_and_the_load(tmp_path: Path) -> None:
    test = spec(tmp_path)
    tool = load_tool.with_load(get_tool("ping"), test.options)
    mode = Mode(test, Flow())
    m = tool.measure(mode, 1)  # type: ignore[arg-type]
    assert mode.flow.calls == ["start", "finish"]
    (load, seconds, tag), = mode.placed  # fmt: skip
    assert load == Load(4, "both", "tcp", None) and tag == f"{test.tag}r1load"
    assert seconds == 3  # -t: 2 s of pings under load, the ramp (0 here), a second
    idle = m.metrics["rtt_p50_ms_idle"]
    loaded = m.metrics["rtt_p50_ms_loaded"]
    assert idle is not None and loaded is not None and loaded > 100 * idle  # a 50 Mbit/s queue
    assert m.metrics["latency_added_p50_ms"] == pytest.approx(loaded - idle)
    assert m.metrics["latency_added_p99_ms"] is None
    assert m.unavailable["latency_added_p99_ms"] == (
        "rtt_p99_ms idle: 10 replies; a p99 needs at least 100"
    )
    result = iperf3_parse.parse(RAW["load"], 0)
    assert m.metrics["load_throughput_bps"] == result.receiver_bps
    assert 80e6 < (result.receiver_bps or 0) < 100e6  # both ways over 50 Mbit/s
    assert m.details["load"]["direction"] == "both" and len(m.details["load"]["bidir_bps"]) == 2
    assert len(m.details["idle"]["rtts_ms"]) == 10 and len(m.details["loaded"]["rtts_ms"]) == 10
    assert "rtts_ms" not in m.details  # each phase keeps its own
    assert json.loads(m.raw) == RAW  # the proof of every figure, as it was printed


def test_a_failed_load_stops_the_flow_and_fails_the_repeat(tmp_path: Path) -> None:
    test = spec(tmp_path, "true")
    tool = load_tool.with_load(get_tool("ping"), test.options)
    mode = Mode(test, Flow(fail=True))
    with pytest.raises(ToolError, match="load flow b -> a"):
        tool.measure(mode, 1)  # type: ignore[arg-type]
    assert mode.flow.calls == ["start", "finish", "stop"]


def test_the_loaded_tool_declares_added_latency_first_then_each_phase(tmp_path: Path) -> None:
    ping = get_tool("ping")
    test = spec(tmp_path)
    assert load_tool.with_load(ping, {"load": None}) is ping
    tool = load_tool.with_load(ping, test.options)
    names = [m.name for m in tool.metrics]
    assert names[:3] == ["latency_added_p50_ms", "latency_added_p99_ms", "load_throughput_bps"]
    assert tool.headline().name == "latency_added_p50_ms"
    for metric in ping.metrics:
        assert f"{metric.name}_idle" in names and f"{metric.name}_loaded" in names
    assert tool.needs == {"client": ("ping", "iperf3"), "server": ("iperf3",)}
    assert tool.raw_suffix == ".json" and ping.raw_suffix == ".txt"
    assert tool.describe(test) == ("pinging 10 x 0.2s idle, then under 4 tcp stream(s) both")


def test_netperf_microseconds_are_added_in_milliseconds() -> None:
    idle = Measurement("", None, metrics={"latency_p50_us": 20.0, "latency_p99_us": 120.0})
    loaded = Measurement("", None, metrics={"latency_p50_us": 27580.0, "latency_p99_us": None},
                         unavailable={"latency_p99_us": "95 transactions timed"})  # fmt: skip
    values, why = load_tool.added(get_tool("netperf"), idle, loaded)
    assert values["latency_added_p50_ms"] == pytest.approx(27.56)
    assert values["latency_added_p99_ms"] is None
    assert why == {"latency_added_p99_ms": "latency_p99_us loaded: 95 transactions timed"}
    values, why = load_tool.added(get_tool("iperf2"), idle, loaded)
    assert values == {"latency_added_p50_ms": None, "latency_added_p99_ms": None}
    assert "no such percentile" in why["latency_added_p50_ms"]


class OwnPortsEnd(HostEnd):
    """An end with a network namespace of its own (as a container's)."""

    own_ports = True


def test_the_flow_is_placed_by_what_its_ends_are(tmp_path: Path) -> None:
    """Ends sharing the host's ports get a free port of the run's range (HostFlow); ends
    with ports of their own (a container's) the load's fixed port, through the ends."""
    test = spec(tmp_path)
    load = Load(4, "both", "tcp", None)
    mode = Mode(test, Flow())
    assert isinstance(PLACE(mode, load, 3, "t0r1load"), load_flow.HostFlow)  # type: ignore[arg-type]
    mode.end = lambda role: OwnPortsEnd(
        mode, role, mode.server if role == "server" else mode.client
    )  # type: ignore[method-assign,arg-type]
    flow = PLACE(mode, load, 3, "t0r1load")  # type: ignore[arg-type]
    assert isinstance(flow, load_flow.EndFlow)
    assert flow.preview()[0] == ("load server", f"iperf3 -s -1 -p {load_flow.PORT}")
