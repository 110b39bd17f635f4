"""The netperf tool: its declarations and its scenario checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from netrun.errors import ScenarioError
from netrun.modes import get_mode
from netrun.scenario.loader import load_scenario
from netrun.tools import get_tool


def scenario(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return path


def problems(path: Path) -> str:
    with pytest.raises(ScenarioError) as err:
        load_scenario(path, hosts=["a", "b"])
    return str(err.value)


def test_declares_its_metrics_with_tolerances() -> None:
    tool = get_tool("netperf")
    names = [m.name for m in tool.metrics]
    assert names == [
        "transactions_per_s", "latency_p50_us", "latency_p90_us", "latency_p99_us",
        "latency_p999_us", "latency_mean_us", "latency_stddev_us", "latency_max_us",
        "connections_per_s", "throughput_bps",
    ]  # fmt: skip
    assert tool.headline().name == "transactions_per_s"
    by = {m.name: m for m in tool.metrics}
    assert by["transactions_per_s"].better == "higher" and by["latency_p99_us"].better == "lower"
    assert all(by[n].tolerance for n in ("transactions_per_s", "latency_p50_us",
                                          "latency_p99_us", "connections_per_s"))  # fmt: skip
    assert tool.needs == {"server": ("netserver",), "client": ("netperf",)}


def test_options_load_with_defaults(tmp_path: Path) -> None:
    path = scenario(tmp_path, """
tests:
  - {name: rr, mode: baremetal, tool: netperf, server: a, client: b}
  - {name: crr, mode: baremetal, tool: netperf, server: a, client: b, test: TCP_CRR,
     request_size: 64, response_size: 1024, instances: 4, duration: 3}
""")  # fmt: skip
    rr, crr = load_scenario(path, hosts=["a", "b"]).tests
    assert (rr.options["test"], rr.options["instances"], rr.options["duration"]) == (
        "TCP_RR",
        1,
        10,
    )
    assert rr.options["request_size"] is None
    assert (crr.options["test"], crr.options["instances"], crr.options["request_size"]) == (
        "TCP_CRR", 4, 64)  # fmt: skip


def test_an_unknown_test_is_one_line_at_validation(tmp_path: Path) -> None:
    text = problems(scenario(tmp_path, """
tests:
  - {name: rr, mode: baremetal, tool: netperf, server: a, client: b, test: TCP_FOO}
"""))  # fmt: skip
    line = next(x for x in text.splitlines() if "TCP_FOO" in x)
    assert "TCP_RR" in line and "UDP_RR" in line and "TCP_CRR" in line


@pytest.mark.parametrize(
    ("extra", "expect"),
    [
        ("instances: 0", "instances must be an integer from 1 to 64"),
        ("duration: 0.5", "duration must be"),
        ("omit: 2", "unknown key 'omit' for tool 'netperf'"),
        ("test: TCP_STREAM, response_size: 10", "response_size must be unset for test: TCP_STREAM"),
    ],
)
def test_bad_values_are_scenario_errors(tmp_path: Path, extra: str, expect: str) -> None:
    path = scenario(tmp_path, f"""
tests:
  - {{name: rr, mode: baremetal, tool: netperf, server: a, client: b, {extra}}}
""")  # fmt: skip
    assert expect in problems(path)


def test_runs_on_hosts_and_in_containers_not_through_a_relay(tmp_path: Path) -> None:
    for mode in ("docker", "flannel", "freeflow"):  # bare metal's None takes any tool
        assert "netperf" in (get_mode(mode).tools or ())
    text = problems(scenario(tmp_path, """
tests:
  - {name: rr, mode: turn, tool: netperf, server: a, client: b}
"""))  # fmt: skip
    assert "mode 'turn' measures with tool" in text
