"""The ping tool: its parser on real iputils output, its command and its scenario checks.

Fixtures are iputils 20221126 output captured between two namespaces by
tests/fixtures/capture_ping.sh (NAME.stdout, NAME.stderr, NAME.rc).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from netrun.errors import ScenarioError
from netrun.scenario.loader import load_scenario
from netrun.tools import get_tool
from netrun.tools.ping import tool as ping


def test_command_is_numeric_and_never_uses_a_deadline() -> None:
    argv = ping.command("10.0.0.2", 5, 0.2, 56)
    assert argv == ["ping", "-n", "-c", "5", "-i", "0.2", "-s", "56", "-W", "2", "10.0.0.2"]
    assert "-w" not in argv  # with -w, -c counts replies: a lossy path would send more


def test_declares_its_metrics() -> None:
    tool = get_tool("ping")
    assert [m.name for m in tool.metrics] == [
        "rtt_avg_ms", "rtt_min_ms", "rtt_max_ms", "rtt_mdev_ms", "lost_percent",
        "rtt_p50_ms", "rtt_p90_ms", "rtt_p99_ms",
    ]  # fmt: skip
    assert all(m.better == "lower" for m in tool.metrics)
    assert tool.headline().name == "rtt_avg_ms"


# -- scenario checks ----------------------------------------------------------------------------
def test_percentiles_need_enough_replies_and_say_why_not() -> None:
    values, why = ping.percentiles([0.1, 0.2, 0.3, 0.4, 0.5])
    assert values["rtt_p50_ms"] == pytest.approx(0.3)
    assert values["rtt_p90_ms"] is None and values["rtt_p99_ms"] is None
    assert why["rtt_p90_ms"] == "5 replies; a p90 needs at least 10"
    values, why = ping.percentiles([float(i) for i in range(1, 101)])
    assert values["rtt_p90_ms"] == pytest.approx(90.1)
    assert values["rtt_p99_ms"] == pytest.approx(99.01) and not why
    assert ping.percentiles([])[0]["rtt_p50_ms"] is None


def scenario(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return path


def problems(path: Path) -> str:
    with pytest.raises(ScenarioError) as err:
        load_scenario(path, hosts=["a", "b"])
    return str(err.value)


def test_a_ping_test_refuses_iperf3_options(tmp_path: Path) -> None:
    text = problems(scenario(tmp_path, """
tests:
  - {name: p, mode: baremetal, tool: ping, server: a, client: b, omit: 2, window: 1M}
"""))  # fmt: skip
    assert "unknown key 'omit' for tool 'ping' (an option of tool 'iperf3')" in text
    assert "unknown key 'window' for tool 'ping'" in text


@pytest.mark.parametrize(
    ("key", "value", "expect"),
    [
        ("interval", 0.1, "ping refuses a shorter interval to a non-root login"),
        ("interval", 0, "from 0.2 to 60"),
        ("interval", "1" * 400, "interval must be a number"),
        ("count", 0, "count must be an integer from 1 to 100000"),
        ("count", int("9" * 400), "count must be an integer from 1 to 100000"),
        ("size", 65508, "size must be an integer from 0 to 65507"),
    ],
)
def test_values_ping_refuses_are_scenario_errors(
    tmp_path: Path, key: str, value: object, expect: str
) -> None:
    shown = value if not isinstance(value, str) else repr(value)
    path = scenario(tmp_path, f"""
tests:
  - {{name: p, mode: baremetal, tool: ping, server: a, client: b, {key}: {shown}}}
""")  # fmt: skip
    assert expect in problems(path)


def test_tool_is_checked_against_the_mode_and_the_registry(tmp_path: Path) -> None:
    text = problems(scenario(tmp_path, """
tests:
  - {name: p, mode: docker, tool: ping, server: a, client: b}
  - {name: q, mode: baremetal, tool: pong, server: a, client: b}
  - {name: r, mode: baremetal, tool: ping, server: a, client: b, tolerances: {rtt: 5%}}
  - {name: s, mode: baremetal, server: a, client: b, tolerances: {throughput_bps: five}}
"""))  # fmt: skip
    assert "mode 'docker' measures with tool iperf3, iperf2, netperf only, not tool 'ping'" in text
    assert "or another mode (ping runs in mode baremetal, kubernetes)" in text
    assert "unknown tool 'pong'; did you mean 'ping'?" in text
    assert "tolerances: ping has no metric 'rtt'" in text
    assert "tolerances.throughput_bps: use a percentage (20%), an amount in the metric" in text


def test_mixed_scenario_and_tool_in_defaults(tmp_path: Path) -> None:
    path = scenario(tmp_path, """
defaults: {tool: ping, count: 3, duration: 2}
tests:
  - {name: p, mode: baremetal, server: a, client: b, interval: 0.5}
  - {name: i, mode: baremetal, tool: iperf3, server: a, client: b}
""")  # fmt: skip
    p, i = load_scenario(path, hosts=["a", "b"]).tests
    assert (p.tool, p.options["count"], p.options["interval"]) == ("ping", 3, 0.5)
    assert "duration" not in p.options and "count" not in i.options
    assert (i.tool, i.duration) == ("iperf3", 2)


def test_a_ping_test_needs_ping_on_its_client_and_no_iperf3(tmp_path: Path) -> None:
    from netrun.run.needs import plan_needs
    from netrun.run.plan import plan_tests
    from netrun.scenario.loader import load_scenario

    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\ntests:\n"
        " - {name: p, mode: baremetal, tool: ping, server: alpha, client: bravo}\n"
        " - {name: i, mode: baremetal, server: charlie, client: bravo}\n"
    )
    tests = load_scenario(path, hosts=("alpha", "bravo", "charlie")).tests
    tools = plan_needs(list(plan_tests(tests).values())).tools
    assert tools == {"bravo": ["ping", "iperf3"], "charlie": ["iperf3"]}  # alpha: nothing
