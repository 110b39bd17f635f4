"""A test of several flows as its flows' own tests (issue 28): names, tags, ports, what the
run turns off for it, and the sample's line rate (the fan-in host's)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from netrun.run.bound import bind
from netrun.run.flows import bound_flows, centre, flow_specs, unsupported
from netrun.run.runner import starts_ahead, sweeps_early
from netrun.run.sample import build_sample
from netrun.scenario.loader import load_scenario

HOSTS = ["alpha", "bravo", "charlie", "delta"]


def fan(tmp_path: Path, extra: str = "", mode: str = "baremetal", kind: str = "fanin"):
    path = tmp_path / "f.yaml"
    path.write_text(
        "name: f\ntests:\n"
        f"  - {{name: f, mode: {mode}, hosts: all, pairs: {{{kind}: delta}}, duration: 1{extra}}}\n"
    )
    (test,) = load_scenario(path, hosts=HOSTS).tests
    return test


def test_each_flow_is_a_test_of_its_own_name_tag_and_hosts(tmp_path: Path) -> None:
    test = fan(tmp_path)
    specs = flow_specs(test)
    assert [s.name for s in specs] == [
        "f[3->delta]:alpha->delta", "f[3->delta]:bravo->delta", "f[3->delta]:charlie->delta"
    ]  # fmt: skip
    assert [(s.client, s.server) for s in specs] == [(h, "delta") for h in HOSTS[:3]]
    assert len({s.tag for s in specs} | {test.tag}) == 4  # files and containers apart
    assert all(not s.flows and s.options["port"] is None for s in specs)
    assert [b.spec.name for b in bound_flows(test)] == [s.name for s in specs]


def test_a_fixed_port_gives_each_flow_the_next(tmp_path: Path) -> None:
    specs = flow_specs(fan(tmp_path, ", port: 6000"))
    assert [s.options["port"] for s in specs] == [6000, 6001, 6002]


def test_the_run_turns_its_shortcuts_off_for_a_flow_test(tmp_path: Path) -> None:
    test = fan(tmp_path)
    assert not sweeps_early([bind(test)], sequential=True)
    assert not starts_ahead([bind(test)])
    assert sweeps_early([bind(flow_specs(test)[0])], sequential=True)  # a plain test would


def test_what_a_flow_test_refuses_is_one_line(tmp_path: Path) -> None:
    test = fan(tmp_path)
    assert unsupported(test, bound_flows(test)) is None
    hosted = fan(tmp_path, ", network: host", mode="docker")
    assert "network: host" in (unsupported(hosted, bound_flows(hosted)) or "")
    assert "mtu:" in (unsupported(fan(tmp_path, ", mtu: 1400"), []) or "")


@pytest.mark.parametrize("kind,host", [("fanin", "delta"), ("fanout", "delta")])
def test_the_sample_holds_the_fan_hosts_line_rate(tmp_path: Path, kind: str, host: str) -> None:
    test = fan(tmp_path, kind=kind)
    assert centre(test) == host
    speeds = {"alpha": 1000.0, "bravo": 1000.0, "charlie": 1000.0, "delta": 100.0}
    inventory = SimpleNamespace(get=lambda n: SimpleNamespace(link_speed_mbps=speeds[n]))
    rec = build_sample(test, 1, None, {}, inventory, error="x")  # type: ignore[arg-type]
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
