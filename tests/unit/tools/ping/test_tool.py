"""The ping tool: its parser on real iputils output, its command and its scenario checks.

Fixtures are iputils 20221126 output captured between two namespaces by
tests/fixtures/capture_ping.sh (NAME.stdout, NAME.stderr, NAME.rc).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from netrun.errors import ScenarioError, ToolError
from netrun.scenario.loader import load_scenario
from netrun.tools import get_tool
from netrun.tools.ping import tool as ping
from tests.conftest import PING_FIXTURES


def captured(name: str) -> tuple[str, int, str]:
    read = (PING_FIXTURES / name).with_suffix
    return read(".stdout").read_text(), int(read(".rc").read_text()), read(".stderr").read_text()


def parse(name: str) -> ping.PingResult:
    stdout, rc, stderr = captured(name)
    return ping.parse(stdout, rc, stderr)


def test_replies() -> None:
    r = parse("ok")
    assert (r.transmitted, r.received, r.errors, r.lost_percent) == (5, 5, 0, 0.0)
    assert (r.rtt_min_ms, r.rtt_avg_ms, r.rtt_max_ms, r.rtt_mdev_ms) == (0.033, 0.132, 0.378, 0.13)


def test_one_reply_and_a_large_payload() -> None:
    assert parse("ok_one").rtt_mdev_ms == 0.0
    assert parse("ok_large").received == 3


def test_partial_loss_keeps_the_rtt_of_the_replies() -> None:
    r = parse("loss")
    assert (r.transmitted, r.received) == (9, 6)
    assert r.lost_percent == pytest.approx(33.3333)
    assert r.rtt_avg_ms == 0.068


def test_root_flood_interval_adds_ipg_ewma_to_the_rtt_line() -> None:
    assert parse("root_zero_interval").rtt_max_ms == 0.020


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("loss_all", "no reply: 3 sent, 100% packet loss"),
        ("unreachable", "no reply: 3 sent, 100% packet loss; destination unreachable"),
        ("no_route", "ping failed: connect: Network is unreachable"),
        ("bad_host", "ping failed: no-such-host.invalid: Temporary failure in name resolution"),
        ("nonroot_flood", "ping failed: cannot flood; minimal interval allowed for user is 2ms"),
        ("count_zero", "ping failed: invalid argument: '0': out of range"),
        ("missing", "ping not found; install it (apt-get install iputils-ping)"),
    ],
)
def test_failures_are_one_tool_error_with_the_output(name: str, text: str) -> None:
    with pytest.raises(ToolError) as err:
        parse(name)
    assert str(err.value).startswith(text)
    assert err.value.output.strip()


def test_garbage_and_huge_numbers_are_errors_not_crashes() -> None:
    with pytest.raises(ToolError):
        ping.parse("x" * 10_000, 0)
    huge = "9" * 400
    text = (
        f"1 packets transmitted, 1 received, 0% packet loss\nrtt min/avg/max/mdev = {huge}/1/1/1 ms"
    )
    with pytest.raises(ToolError):
        ping.parse(text, 0)


def test_command_is_numeric_and_never_uses_a_deadline() -> None:
    argv = ping.command("10.0.0.2", 5, 0.2, 56)
    assert argv == ["ping", "-n", "-c", "5", "-i", "0.2", "-s", "56", "-W", "2", "10.0.0.2"]
    assert "-w" not in argv  # with -w, -c counts replies: a lossy path would send more


def test_declares_the_five_metrics() -> None:
    tool = get_tool("ping")
    assert [m.name for m in tool.metrics] == [
        "rtt_avg_ms", "rtt_min_ms", "rtt_max_ms", "rtt_mdev_ms", "lost_percent",
    ]  # fmt: skip
    assert all(m.better == "lower" for m in tool.metrics)
    assert tool.headline().name == "rtt_avg_ms" and tool.modes == ("baremetal",)


# -- scenario checks ----------------------------------------------------------------------------
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
    assert "tool 'ping' runs in mode baremetal only, not 'docker'" in text
    assert "unknown tool 'pong'; did you mean 'ping'?" in text
    assert "tolerances: ping has no metric 'rtt'" in text
    assert "throughput_bps must be a percentage such as 20% or a number" in text


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
    from netrun.scenario.loader import load_scenario

    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\ntests:\n"
        " - {name: p, mode: baremetal, tool: ping, server: alpha, client: bravo}\n"
        " - {name: i, mode: baremetal, server: charlie, client: bravo}\n"
    )
    tools = plan_needs(load_scenario(path, hosts=("alpha", "bravo", "charlie")).tests).tools
    assert tools == {"bravo": ["ping", "iperf3"], "charlie": ["iperf3"]}  # alpha: nothing
