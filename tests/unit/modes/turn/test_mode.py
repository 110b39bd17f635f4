"""mode: turn and tool: iperf2 as the core sees them: the scenario, needs, the report's notes,
the lab's relay group and per-host rate, all without a host (the lab tests run them for real).

tests/fixtures/results/turn-lab is scenarios/turn.yaml as netrun ran it on the lab.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from netrun.cli.commands import host_rates
from netrun.errors import InputError, ModeError, ScenarioError
from netrun.hosts import clock_reading
from netrun.lab.inventory import render
from netrun.lab.plan import LabConfig, plan
from netrun.modes import get_mode
from netrun.modes.turn.mode import Turn, counters, external
from netrun.report import relay_latency
from netrun.report.render import render_table
from netrun.run.needs import plan_needs
from netrun.run.plan import plan_tests
from netrun.scenario.loader import load_scenario
from netrun.tools.base import PeersSeen
from netrun.tools.ends import refusal
from netrun.tools.iperf2 import parse as iperf2
from tests.conftest import IPERF2_FIXTURES, RESULTS_FIXTURES, ROOT

FIXTURE = RESULTS_FIXTURES / "turn-lab" / "results.json"
GROUPS = {"servers": "alpha", "clients": "bravo", "relays": "charlie"}


def turn_yaml() -> Any:
    return load_scenario(ROOT / "scenarios" / "turn.yaml", resolve=lambda v: GROUPS.get(v, v))


def test_scenarios_turn_yaml_is_the_reference_three_rows() -> None:
    tests = turn_yaml().tests
    assert [t.name for t in tests] == ["direct", "turn-udp-1000pps", "turn-tcp-10000pps"]
    assert {t.tool for t in tests} == {"iperf2"}
    assert all(t.value("length") == 100 for t in tests)
    direct, udp, tcp = tests
    assert direct.mode == "baremetal" and udp.mode == tcp.mode == "turn"
    assert dict(udp.hosts_by_role) == {"server": "alpha", "client": "bravo", "relay": "charlie"}
    assert (udp.value("turn_transport"), udp.value("bitrate")) == ("udp", "1000pps")
    assert (tcp.value("turn_transport"), tcp.value("bitrate")) == ("tcp", "10000pps")


def test_needs_iperf_on_the_ends_turnserver_on_a_managed_relay_only(tmp_path: Path) -> None:
    needs = plan_needs(list(plan_tests(turn_yaml().tests).values()))
    assert needs.tools["alpha"] == ["iperf"]  # no iperf3: the tool declares its own
    assert needs.tools["bravo"] == ["iperf", "python3"]
    assert needs.tools["charlie"] == ["turnserver"]
    assert Turn.needs_for({"turn_server": "turn://10.0.0.1:3478"})["relay"] == ()


def scenario(tmp_path: Path, text: str) -> Any:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return load_scenario(path, hosts=("alpha", "bravo", "charlie"))


def test_iperf2_options_are_checked_at_load_time(tmp_path: Path) -> None:
    base = "tests:\n  - {name: a, mode: turn, server: alpha, client: bravo, relay: charlie, "
    with pytest.raises(ScenarioError) as err:
        scenario(tmp_path, base + "tool: iperf2, bitrate: fast, turn_transport: sctp}\n")
    text = str(err.value)
    assert "bitrate" in text and "1000pps" in text and "turn_transport" in text
    with pytest.raises(ScenarioError, match="turn_server"):
        scenario(tmp_path, base + "tool: iperf2, turn_server: 'http://x:1'}\n")
    # a default serves every tool: iperf2's 1000pps is no iperf3 size, and that is fine
    ok = scenario(
        tmp_path,
        "defaults: {bitrate: 1000pps, tool: iperf2}\n"
        "tests:\n  - {name: a, mode: baremetal, server: alpha, client: bravo}\n",
    )
    assert ok.tests[0].value("bitrate") == "1000pps"
    for mode in ("turn", "docker", "flannel"):
        assert "iperf2" in (get_mode(mode).tools or ())


def test_an_external_turn_uri() -> None:
    assert external("turn://10.0.0.5:3478?transport=tcp") == ("10.0.0.5", 3478, "tcp")
    assert external("turn://[fd00::1]:3478") == ("fd00::1", 3478, None)
    with pytest.raises(ModeError):
        external("turns://x:1")


def fixture() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(FIXTURE.read_text())
    return doc


def test_the_report_shows_latency_and_what_the_relay_added() -> None:
    doc = fixture()
    notes = relay_latency.notes(doc)
    assert notes[0].startswith("turn-udp-1000pps: the relay added ")
    assert "direct" in notes[0]
    assert any("share the controller's clock" in n for n in notes)
    table = render_table(doc)
    for metric in ("latency_avg_ms", "latency_stdev_ms", "jitter_ms", "lost_percent", "pps"):
        assert f"turn-tcp-10000pps  {metric}" in table
    assert "the relay added" in table


def test_the_fixture_carries_the_proofs() -> None:
    for sample in fixture()["tests"]:
        assert set(sample["metrics"]) == set(iperf2.METRIC_NAMES)
        details = sample["details"]
        if sample["mode"] == "turn":
            assert details["peer_seen"] == details["relayed_address"].rsplit(":", 1)[0]
            assert details["relay_counters"]["tx_packets"] >= sample["metrics"]["total"]


def test_unreliable_latency_needs_a_reason() -> None:
    same = {"uncertainty_ms": 0.0}
    assert clock_reading.latency_verdict(0.5, same, same) is None
    assert "negative" in str(clock_reading.latency_verdict(-0.2, same, same))
    far = {"uncertainty_ms": 2.0}
    assert "not small" in str(clock_reading.latency_verdict(5.0, far, same))
    assert "unknown" in str(clock_reading.latency_verdict(5.0, {"uncertainty_ms": None}, same))


def test_lab_names_a_relay_and_a_host_rate(tmp_path: Path) -> None:
    assert host_rates(["charlie=20mbit"]) == (("charlie", "20mbit"),)
    with pytest.raises(InputError, match="HOST=RATE"):
        host_rates(["charlie"])
    cfg = LabConfig(prefix="nru", state_dir=tmp_path, inventory=tmp_path / "i.yaml",
                    host_rates=(("charlie", "20mbit"),))  # fmt: skip
    assert cfg.problems() == [] and cfg.rate_for("charlie") == "20mbit"
    assert cfg.rate_for("alpha") == "1gbit"
    assert LabConfig.from_json(cfg.to_json()) == cfg
    bad = LabConfig(host_rates=(("zulu", "20mbit"), ("alpha", "fast")))
    assert len(bad.problems()) == 2
    data = yaml.safe_load(render(plan(cfg)))
    assert data["all"]["children"]["relays"]["hosts"] == {"charlie": {}}
    assert data["all"]["hosts"]["charlie"]["netrun_link_speed_mbps"] == 20
    assert "netrun_link_speed_mbps" not in data["all"]["hosts"]["alpha"]


def test_a_constrained_host_link_has_a_short_queue() -> None:
    from netrun.lab.network import host_tbf_args, tbf_args

    # 8 Mbit/s x 1514/1538: full frames meet the ceiling netrun computes for the link
    assert host_tbf_args("8mbit") == ["tbf", "rate", "7875kbit", "burst", "10kb", "latency", "20ms"]
    assert host_tbf_args("100kbit")[4] == "4kb"
    assert tbf_args("8mbit")[4] == "256kb"  # the 1 GbE emulation's, a 250 ms queue at 8 Mbit/s


def test_two_clocks_give_a_corrected_latency_one_clock_none() -> None:
    shared = {"shared_clock": True, "offset_ms": 0.0}
    assert clock_reading.corrected_ms(5.0, shared, shared) is None
    sender = {"shared_clock": False, "offset_ms": -1.0}
    receiver = {"shared_clock": False, "offset_ms": 2.0}  # 3 ms ahead of the sender
    assert clock_reading.corrected_ms(5.0, sender, receiver) == 2.0
    assert clock_reading.corrected_ms(5.0, sender, {"offset_ms": None}) is None


def test_the_relay_is_proven_by_a_result_that_reports_its_servers_peers() -> None:
    """The mode asks for the capability (netrun.tools.base.PeersSeen), which iperf2's server
    report has: the peers it saw, and what it received for the relay's NIC to match."""
    result = iperf2.parse((IPERF2_FIXTURES / "2.1.8-turn-fanin-alpha.server.txt").read_text())
    assert isinstance(result, PeersSeen) and result.peers
    received = int(result.metrics["total"] or 0) - int(result.metrics["lost"] or 0)
    before = {"rx_packets": 10, "tx_packets": 10}
    after = {"rx_packets": 10 + received, "tx_packets": 10 + received}
    found = counters(SimpleNamespace(name="charlie"), "data0", before, after, result)
    assert found["server_received"] == received > 0 and found["crossed"] is True
    assert counters(None, None, None, None, result) == {
        "unavailable": "the TURN server is not an inventory host: its NIC is not read"
    }


def test_turn_declares_that_it_cannot_carry_a_load() -> None:
    """The refusal lives in the mode (Mode.cannot), not in the load's tool: said before
    the test's hosts are touched (``--check-only``, the mode's setup)."""
    options = {"load": True}
    why = refusal("turn", Turn.cannot, "lat", "iperf2", options.get)
    assert why is not None and why.startswith("test lat: mode turn cannot carry a load")
    assert "TCP control connection" in why and "pairs: {fanin: HOST}" in why
    assert refusal("turn", Turn.cannot, "lat", "iperf2", {"load": False}.get) is None
