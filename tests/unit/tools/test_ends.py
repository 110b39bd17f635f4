"""A mode places the ends, a tool measures (netrun.tools.ends): a tool and a mode that
exist only in the tests, each registered by one line, run together through the recording
transport, and a shipped tool runs in the test-only mode unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from netrun import modes, tools
from netrun.hosts.host import Host
from netrun.modes import get_mode
from netrun.modes.base import RunContext
from netrun.run.needs import missing_message, plan_needs, program, programs
from netrun.run.plan import plan_tests
from netrun.scenario.loader import load_scenario
from netrun.testing.recording import RecordingTransport, Reply
from netrun.tools import get_tool

HOSTS = ["alpha", "bravo"]


@pytest.fixture(autouse=True)
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The one line each: the tool's module, the mode's module."""
    monkeypatch.setitem(tools._MODULES, "probe", "tests.unit.tools.probe_tool")
    monkeypatch.setitem(modes._MODULES, "boxed", "tests.unit.tools.boxed_mode")


def placed(tmp_path: Path, mode: str, tool: str, extra: str = ""):
    path = tmp_path / "s.yaml"
    path.write_text(
        f"tests:\n  - {{name: t, mode: {mode}, tool: {tool}, server: alpha, client: bravo"
        f"{extra}}}\n"
    )
    (test,) = load_scenario(path, hosts=HOSTS).tests
    log: list[tuple[str, str]] = []
    hosts = {}
    for name, ip in (("alpha", "10.0.0.1"), ("bravo", "10.0.0.2")):
        host = Host(name, {"netrun_data_ip": ip})
        host.transport = RecordingTransport(name, log)  # type: ignore[assignment]
        hosts[name] = host
    ctx = RunContext(run_id="1a2b")
    return get_mode(mode)(test, hosts["alpha"], hosts["bravo"], ctx), hosts, log


@pytest.mark.parametrize(
    ("mode", "line"),
    [
        ("baremetal", "probe -c 3 10.0.0.1"),
        ("boxed", "box exec client probe -c 3 10.99.0.2"),
    ],
)
def test_a_new_tool_measures_in_any_mode_through_its_ends(
    tmp_path: Path, mode: str, line: str
) -> None:
    m, hosts, log = placed(tmp_path, mode, "probe")
    hosts["bravo"].transport.answer("probe", Reply("rtt=0.25\n"))  # type: ignore[attr-defined]
    found = get_tool("probe").measure(m, 1)
    assert found.metrics == {"rtt_ms": 0.25}
    assert log == [("bravo", line)]  # one command, on the client end, nothing else
    assert m.preview() == [("client", line)]


def test_a_new_mode_runs_a_shipped_tool_unchanged(tmp_path: Path) -> None:
    m, hosts, log = placed(tmp_path, "boxed", "ping", ", count: 2")
    hosts["bravo"].transport.answer("ping", Reply(PING))  # type: ignore[attr-defined]
    found = get_tool("ping").measure(m, 1)
    assert found.metrics["rtt_avg_ms"] == pytest.approx(0.05)
    ((host, line),) = log
    assert host == "bravo"
    # in the box, behind the wrapper that records its pid in the one format at that end
    assert line.startswith("timeout -k 5 14 box exec client sh -c ")
    assert "> /tmp/netrun-1a2b-bravo/ping-t0r1.pid && exec" in line
    assert line.endswith("' sh ping -n -c 2 -i 1 -s 56 -W 2 10.99.0.2")
    assert found.details["target"] == "10.99.0.2"


def test_what_a_mode_cannot_carry_is_data_read_at_planning(tmp_path: Path) -> None:
    m, _, log = placed(tmp_path, "boxed", "iperf3", ", protocol: udp")
    assert m.refusal() == "test t: mode boxed carries no UDP"
    tcp, _, _ = placed(tmp_path, "boxed", "iperf3")
    assert tcp.refusal() is None
    assert log == []  # known from the files alone


PING = """PING 10.99.0.2 (10.99.0.2) 56(84) bytes of data.
64 bytes from 10.99.0.2: icmp_seq=1 ttl=64 time=0.040 ms
64 bytes from 10.99.0.2: icmp_seq=2 ttl=64 time=0.060 ms

--- 10.99.0.2 ping statistics ---
2 packets transmitted, 2 received, 0% packet loss, time 1001ms
rtt min/avg/max/mdev = 0.040/0.050/0.060/0.010 ms
"""


def test_a_new_tool_and_mode_name_their_programs_packages_themselves(tmp_path: Path) -> None:
    """A missing program is named with its package and its inventory variable from what
    the tool or mode declares (Tool.installs, Mode.installs), read from the test's plan:
    nothing in netrun.run names them."""
    path = tmp_path / "s.yaml"
    path.write_text(
        "tests:\n  - {name: t, mode: boxed, tool: probe, server: alpha, client: bravo}\n"
    )
    needs = plan_needs(list(plan_tests(load_scenario(path, hosts=HOSTS).tests).values()))
    assert needs.tools == {"alpha": ["box"], "bravo": ["box"]}
    assert {"probe", "box"} <= set(needs.programs) <= set(programs())
    known = needs.programs
    host = Host("bravo", {"netrun_data_ip": "10.0.0.2"})
    line = missing_message(host, ["probe", "box"], lambda name: f"the {name} role", known)
    assert line.startswith("bravo: probe not found ('probe', needed by the probe role)")
    assert "apt-get install probe-utils" in line and "dnf install probe-tools" in line
    assert "set netrun_probe to its path" in line and "apt-get install box-engine" in line
    assert program(Host("c", {"netrun_probe": "/opt/probe"}), "probe", known) == "/opt/probe"
