"""A turn fan test's flows (issue 28), without a host: each flow its own port, tag and tunnel
tag, the one relay allowed to reach every flow's server and nothing else (no open proxy),
shared through the run by the flow that started it. The lab test (tests/integration/
test_fanin.py) runs it for real."""

from __future__ import annotations

from pathlib import Path

from netrun.hosts.host import Host
from netrun.modes.base import RunContext
from netrun.modes.turn import relay as coturn
from netrun.modes.turn.mode import SharedRelays, Turn
from netrun.modes.turn.remote import Relay
from netrun.run.plan import plan_test
from netrun.scenario.loader import load_scenario

HOSTS = {
    name: Host(name, {"ansible_host": f"10.0.0.{i}", "netrun_data_ip": f"10.1.0.{i}"})
    for i, name in enumerate(("alpha", "bravo", "charlie", "delta"), start=1)
}


def fan(tmp_path: Path, kind: str) -> object:
    path = tmp_path / "t.yaml"
    path.write_text(
        "name: t\ntests:\n  - {name: f, mode: turn, tool: iperf2, relay: delta,"
        f" hosts: 'alpha,bravo,charlie', pairs: {{{kind}: charlie}}, duration: 1}}\n"
    )
    (test,) = load_scenario(path, hosts=list(HOSTS)).tests
    return test


def modes(tmp_path: Path, kind: str) -> list[Turn]:
    test = fan(tmp_path, kind)
    ctx = RunContext(run_id="r1")
    out = []
    for spec in (f.spec for f in plan_test(test).flows):  # type: ignore[arg-type]
        by_role = {role: HOSTS[h] for role, h in spec.hosts_by_role.items()}
        mode = Turn(spec, by_role["server"], by_role["client"], ctx, by_role)
        mode.fan_hosts = {n: HOSTS[n] for n in test.hosts}  # type: ignore[attr-defined]
        out.append(mode)
    return out


def test_each_flow_keeps_the_relay_and_gets_its_own_port_and_tag(tmp_path: Path) -> None:
    first, second = modes(tmp_path, "fanin")
    for mode in (first, second):
        assert mode.hosts["relay"].name == "delta" and mode.server.name == "charlie"
    assert (first.value("port"), second.value("port")) == (5001, 5002)
    assert first.test.tag != second.test.tag  # its iperf2 files and tunnel files apart
    assert first.fan_key() == second.fan_key()


def test_the_relay_reaches_every_flows_server_and_nothing_else(tmp_path: Path) -> None:
    (fanin, _), (fanout, _) = modes(tmp_path, "fanin"), modes(tmp_path, "fanout")
    assert fanin.peers() == ["10.1.0.3"]  # one server: charlie
    assert fanout.peers() == ["10.1.0.1", "10.1.0.2"]  # charlie sends to alpha and bravo
    text = coturn.config_text(
        listen_ip="10.1.0.4", port=3478, user="u", password="p", peers=fanout.peers(),
        pidfile="/x/pid", logfile="/x/log",
    )  # fmt: skip
    lines = text.splitlines()
    assert "denied-peer-ip=0.0.0.0-255.255.255.255" in lines
    assert [ln for ln in lines if ln.startswith("allowed-peer-ip=")] == [
        "allowed-peer-ip=10.1.0.1",
        "allowed-peer-ip=10.1.0.2",
    ]


def test_the_shared_relay_is_forgotten_with_the_flow_that_started_it(tmp_path: Path) -> None:
    first, second = modes(tmp_path, "fanin")
    shared = first.ctx.family(SharedRelays)
    shared[first.fan_key()] = (Relay("10.1.0.4", 3478, "managed", HOSTS["delta"]), "u", "p")
    first.owns_relay = True
    second.teardown()  # not its own: the entry stays for the flows still running
    assert first.fan_key() in shared
    first.teardown()
    assert first.fan_key() not in shared
