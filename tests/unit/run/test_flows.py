"""A test of several flows as its flows' own tests (issue 28): names, tags, ports, what the
run turns off for it, and the sample's line rate (the fan-in host's)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import pytest

from netrun.core.spec import TestSpec
from netrun.errors import ToolError
from netrun.hosts.host import Host
from netrun.modes.baremetal.mode import BareMetal
from netrun.modes.base import Mode, RunContext
from netrun.run import flows as flows_module
from netrun.run.flows import FlowError, FlowTest, centre, unsupported
from netrun.run.plan import plan_test
from netrun.run.sample import build_sample
from netrun.run.startline import StartLineBroken, once
from netrun.scenario.loader import load_scenario
from netrun.testing.recording import RecordingTransport
from netrun.tools import get_tool
from netrun.tools.iperf3.flows import FAN_OMIT_S
from netrun.tools.savers.choice import takes
from netrun.tools.savers.model import Saver

HOSTS = ["alpha", "bravo", "charlie", "delta"]


def fan(tmp_path: Path, extra: str = "", mode: str = "baremetal", kind: str = "fanin"):
    path = tmp_path / "f.yaml"
    path.write_text(
        "name: f\ntests:\n"
        f"  - {{name: f, mode: {mode}, hosts: all, pairs: {{{kind}: delta}}, duration: 1{extra}}}\n"
    )
    (test,) = load_scenario(path, hosts=HOSTS).tests
    return test


def flow_specs(test: TestSpec) -> list[TestSpec]:
    """Each flow's spec, as the test's plan holds them (netrun.run.plan)."""
    return [f.spec for f in plan_test(test).flows]


def test_each_flow_is_a_test_of_its_own_name_tag_and_hosts(tmp_path: Path) -> None:
    test = fan(tmp_path)
    specs = flow_specs(test)
    assert [s.name for s in specs] == [
        "f[3->delta]:alpha->delta", "f[3->delta]:bravo->delta", "f[3->delta]:charlie->delta"
    ]  # fmt: skip
    assert [(s.client, s.server) for s in specs] == [(h, "delta") for h in HOSTS[:3]]
    assert len({s.tag for s in specs} | {test.tag}) == 4  # files and containers apart
    assert all(not s.flows and s.options["port"] is None for s in specs)
    assert all(f.tool.name == "iperf3" and f.mode is BareMetal for f in plan_test(test).flows)


def test_a_fixed_port_gives_each_flow_the_next(tmp_path: Path) -> None:
    specs = flow_specs(fan(tmp_path, ", port: 6000"))
    assert [s.options["port"] for s in specs] == [6000, 6001, 6002]


def test_the_run_turns_its_shortcuts_off_for_a_flow_test(tmp_path: Path) -> None:
    test = fan(tmp_path)
    assert not takes([plan_test(test)], Saver.EARLY_SWEEP, sequential=True)
    assert not takes([plan_test(test)], Saver.START_AHEAD, sequential=True)
    plain = plan_test(flow_specs(test)[0])  # a plain test would take it
    assert takes([plain], Saver.EARLY_SWEEP, sequential=True)


def test_what_a_flow_test_refuses_is_one_line(tmp_path: Path) -> None:
    test = fan(tmp_path)
    assert unsupported(plan_test(test)) is None
    hosted = fan(tmp_path, ", network: host", mode="docker")
    assert "network: host" in (unsupported(plan_test(hosted)) or "")
    assert "mtu:" in (unsupported(plan_test(fan(tmp_path, ", mtu: 1400"))) or "")


@pytest.mark.parametrize("kind,host", [("fanin", "delta"), ("fanout", "delta")])
def test_the_sample_holds_the_fan_hosts_line_rate(tmp_path: Path, kind: str, host: str) -> None:
    test = fan(tmp_path, kind=kind)
    assert centre(test) == host
    speeds = {"alpha": 1000.0, "bravo": 1000.0, "charlie": 1000.0, "delta": 100.0}
    inventory = SimpleNamespace(get=lambda n: SimpleNamespace(link_speed_mbps=speeds[n]))
    rec = build_sample(plan_test(test), 1, None, {}, inventory, error="x")  # type: ignore[arg-type]
    assert rec["line_rate_mbps"] == 100.0
    assert rec["flows"] == [[f.client, f.server] for f in test.flows]
    assert "aggregate_bps" in rec["metrics"]


def test_the_listing_and_preview_show_every_flow(tmp_path: Path) -> None:
    from netrun.inventory.loader import load_inventory
    from netrun.run.preview import preview
    from netrun.run.rounds import listing

    inv = tmp_path / "inv.yaml"
    inv.write_text(
        "all:\n  hosts:\n"
        + "".join(f"    {h}: {{ansible_host: 127.0.0.{i + 1}}}\n" for i, h in enumerate(HOSTS))
    )
    path = tmp_path / "f.yaml"
    path.write_text(
        "name: f\ntests:\n  - {name: f, mode: baremetal, hosts: all, pairs: {fanin: delta}}\n"
    )
    scenario = load_scenario(path, hosts=HOSTS)
    lines = listing(scenario, None, 1)
    assert (
        "  f[3->delta]: baremetal, 3 flows at once: alpha->delta, bravo->delta, charlie->delta"
        in lines
    )
    found = preview(scenario.tests[0], load_inventory(inv))
    assert list(found.addresses) == ["server", "client1", "client2", "client3"]
    assert [role for role, _ in found.commands][:2] == [
        "server alpha->delta",
        "client alpha->delta",
    ]
    assert len(found.commands) == 6


def test_bare_metal_flows_line_up_after_their_servers_start() -> None:
    """A bare-metal flow's server listens and its client is armed before the start line
    (issue 28's fan-in above its ceiling); a mode without it waits before measuring."""
    assert BareMetal.has_start_line and not Mode.has_start_line


def test_a_flow_that_failed_before_the_line_is_the_repeats_error(tmp_path: Path) -> None:
    """The others' broken start line is not the error: the flow that broke it is."""
    flows = FlowTest(SimpleNamespace(), plan_test(fan(tmp_path)), "f")
    flows.modes = [None] * len(flows.test.flows)  # type: ignore[list-item]
    line = threading.Barrier(1)
    line.abort()

    def step(i: int) -> None:
        if i == 1:
            raise ToolError(f"{flows.test.flows[1].client}: iperf3 server did not start")
        once(line, [])()

    with ThreadPoolExecutor(max_workers=3) as pool, pytest.raises(FlowError) as err:
        flows._each(pool, step)
    assert str(err.value) == (
        f"flow {flows.test.flows[1].label} failed on {flows.test.flows[1].client}:"
        " iperf3 server did not start"
    )
    with pytest.raises(StartLineBroken, match="another flow failed before the start line"):
        once(line, [])()


def test_each_flow_leaves_its_start_out_unless_the_test_says(tmp_path: Path) -> None:
    """The flows' first second (their ramps, some ms apart) is left out of the aggregate
    by default; ``omit:`` set on the test (0 too) is each flow's."""
    assert {s.omit for s in flow_specs(fan(tmp_path))} == {FAN_OMIT_S}
    assert {s.omit for s in flow_specs(fan(tmp_path, ", omit: 0"))} == {0}
    assert {s.omit for s in flow_specs(fan(tmp_path, ", omit: 2"))} == {2}
    assert max(s.deadline for s in flow_specs(fan(tmp_path))) > fan(tmp_path).deadline


class Stoppable:
    """A flow's mode whose measurement runs until ``stop_flow`` (or ``can``: it cannot)."""

    def __init__(self, can: bool = True) -> None:
        self.can = can
        self.ended = threading.Event()
        self.stops = 0

    def stop_flow(self) -> bool:
        self.stops += 1
        if self.can:
            self.ended.set()
        return self.can


def test_a_flow_failing_mid_measurement_stops_the_others(tmp_path: Path) -> None:
    """Flow 1 fails while 0 and 2 run: they are stopped (Mode.stop_flow), their own errors
    give way to flow 1's one line, and each stopped flow has its line."""
    flows = FlowTest(SimpleNamespace(), plan_test(fan(tmp_path)), "f")
    modes = [Stoppable(), Stoppable(), Stoppable()]
    flows.modes = modes  # type: ignore[assignment]
    label = [f.label for f in flows.test.flows]

    def step(i: int) -> None:
        if i == 1:
            raise ToolError(f"{flows.test.flows[1].client}: iperf3 failed: boom")
        assert modes[i].ended.wait(30), "never stopped"
        raise ToolError(f"{flows.test.flows[i].client}: iperf3 failed: interrupted")

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=3) as pool, pytest.raises(FlowError) as err:
        flows._each(pool, step, stop=True)
    assert time.monotonic() - started < 10
    assert (
        str(err.value)
        == f"flow {label[1]} failed on {flows.test.flows[1].client}: iperf3 failed: boom"
    )
    assert flows.stopped == [
        f"flow {label[0]} stopped: flow {label[1]} failed",
        f"flow {label[2]} stopped: flow {label[1]} failed",
    ]
    assert modes[1].stops == 0 and modes[0].stops >= 1 and modes[2].stops >= 1


def test_a_flow_not_started_at_the_first_stop_is_stopped_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A flow whose client had not started at the first stop (nothing to kill yet) is
    stopped again every STOP_EVERY_S until it ended; one whose mode cannot stop it
    (Mode's default) is left to end on its own, and asked once."""
    monkeypatch.setattr(flows_module, "STOP_EVERY_S", 0.05)
    flows = FlowTest(SimpleNamespace(), plan_test(fan(tmp_path)), "f")
    late, unable = Stoppable(), Stoppable(can=False)
    late.can = False  # its first stops find nothing to kill: it keeps running
    late_stop = late.stop_flow

    def stop_later() -> bool:
        late.can = late.stops >= 2
        late_stop()
        return True

    late.stop_flow = stop_later  # type: ignore[method-assign]
    flows.modes = [late, Stoppable(), unable]  # type: ignore[list-item]
    released = threading.Timer(0.5, unable.ended.set)

    def step(i: int) -> str:
        if i == 1:
            raise ToolError(f"{flows.test.flows[1].client}: boom")
        assert (late, None, unable)[i].ended.wait(30)  # type: ignore[union-attr]
        return "ok"

    released.start()
    with ThreadPoolExecutor(max_workers=3) as pool, pytest.raises(FlowError, match="boom"):
        flows._each(pool, step, stop=True)
    assert late.stops == 3 and unable.stops == 1
    assert len(flows.stopped) == 1  # the one that could not be stopped ran out its own way


def test_a_mode_stops_no_flow_of_a_tool_that_cannot() -> None:
    """Mode's default asks the tool (Tool.stop); a tool with none (ping) cannot stop a
    running measurement, so none is cut."""
    ping = SimpleNamespace(tool=get_tool("ping"))
    assert Mode.stop_flow(ping) is False  # type: ignore[arg-type]


def test_bare_metal_stops_a_flow_by_its_clients_pid_file(tmp_path: Path) -> None:
    """The client host's command kills the repeat's iperf3 client by its pid file (with the
    identity check), nothing by name."""
    test = fan(tmp_path)
    spec = flow_specs(test)[0]
    log: list[tuple[str, str]] = []
    server, client = Host(spec.server), Host(spec.client)
    for h in (server, client):
        h.transport = RecordingTransport(h.name, log)
    mode = plan_test(spec).start(
        server, client, RunContext("abc"), {"server": server, "client": client}
    )
    mode.repeat = 2
    assert mode.stop_flow() is True
    ((host, line),) = log
    assert host == spec.client
    assert f"{spec.tag}r2.client.pid" in line and "pkill" not in line and "killall" not in line
