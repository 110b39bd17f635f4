"""``pairs: {fanin: HOST}`` and ``{fanout: HOST}`` (issue 28): one test of many flows, not a
test per pair; its hosts, its name, the layers and the one-line refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from netrun.core.spec import Flow
from netrun.errors import ScenarioError
from netrun.run import rounds
from netrun.scenario import pairs
from netrun.scenario.loader import load_scenario

NATO = ["alpha", "bravo", "charlie", "delta", "echo"]


def load(tmp_path: Path, body: str, names: list[str] = NATO, **overrides: object):
    path = tmp_path / "fan.yaml"
    path.write_text(f"name: fan\nparallel: true\ndefaults: {{duration: 1}}\ntests:\n{body}")
    return load_scenario(path, hosts=names, overrides=overrides)


FANIN = (
    "  - {name: f, mode: baremetal, hosts: 'alpha,bravo,charlie,delta', pairs: {fanin: delta}}\n"
)


def test_fan_makes_one_pair_of_every_flow() -> None:
    (inn,) = pairs.fan(NATO[:4], "delta", "fanin")
    assert inn.flows == (Flow("alpha", "delta"), Flow("bravo", "delta"), Flow("charlie", "delta"))
    assert inn.label == "3->delta" and (inn.client, inn.server) == ("alpha", "delta")
    (out,) = pairs.fan(NATO[:3], "alpha", "fanout")
    assert [f.label for f in out.flows] == ["alpha->bravo", "alpha->charlie"]
    assert out.label == "alpha->2"
    assert pairs.fan(["alpha"], "alpha", "fanin") == []


def test_a_fanin_is_one_test_holding_every_host(tmp_path: Path) -> None:
    (test,) = load(tmp_path, FANIN).tests
    assert test.name == "f[3->delta]" and test.pairs == "fanin" and not test.matrix
    assert (test.server, test.client) == ("delta", "alpha")
    assert [f.label for f in test.flows] == ["alpha->delta", "bravo->delta", "charlie->delta"]
    assert set(test.hosts) == {"alpha", "bravo", "charlie", "delta"}


def test_the_scheduler_puts_nothing_beside_a_fanin_on_its_hosts(tmp_path: Path) -> None:
    body = FANIN + "  - {name: p, mode: baremetal, server: echo, client: bravo}\n"
    tests = load(tmp_path, body).tests
    assert [[t.name for t in r] for r in rounds.plan(list(tests), 4)] == [["f[3->delta]"], ["p"]]


def test_e_hosts_and_pairs_retarget_it_and_e_client_narrows_its_flows(tmp_path: Path) -> None:
    (test,) = load(tmp_path, FANIN, hosts="alpha,bravo,delta").tests
    assert test.name == "f[2->delta]"
    (test,) = load(tmp_path, FANIN, pairs={"fanout": "alpha"}).tests
    assert test.name == "f[alpha->3]" and test.pairs == "fanout"
    assert [f.server for f in test.flows] == ["bravo", "charlie", "delta"]
    (test,) = load(tmp_path, FANIN, client="bravo").tests
    assert [f.label for f in test.flows] == ["bravo->delta"]


def test_a_sweep_keeps_one_fanin_per_combination(tmp_path: Path) -> None:
    body = FANIN.replace("}}\n", "}, sweep: {streams: [1, 2]}}\n")
    names = [t.name for t in load(tmp_path, body).tests]
    assert names == ["f[3->delta][streams=1]", "f[3->delta][streams=2]"]


@pytest.mark.parametrize(
    "body,expected",
    [
        ("hosts: all, pairs: fanin", "pairs: fanin needs its hosts"),
        ("hosts: all, pairs: {fanin: [delta]}", "pairs: fanin must name one host"),
        ("hosts: 'alpha,bravo', pairs: {fanin: echo}", "fanin host 'echo' is not within hosts"),
        ("hosts: delta, pairs: {fanin: delta}", "pairs: fanin needs at least two"),
        (
            "hosts: all, pairs: {fanin: delta}, tool: ping",
            "tool 'ping' has none: use tool: iperf3 or iperf2",
        ),
    ],
)
def test_bad_fans_are_one_line_each(tmp_path: Path, body: str, expected: str) -> None:
    with pytest.raises(ScenarioError) as err:
        load(tmp_path, f"  - {{name: f, mode: baremetal, {body}}}\n")
    lines = str(err.value).splitlines()
    assert len(lines) == 1 and expected in lines[0], lines


def test_a_turn_fan_shares_its_relay_between_the_flows(tmp_path: Path) -> None:
    body = (
        "  - {name: f, mode: turn, tool: iperf2, relay: echo, hosts: 'alpha,bravo,delta',"
        " pairs: {fanin: delta}}\n"
    )
    (test,) = load(tmp_path, body).tests
    assert test.flows == (Flow("alpha", "delta"), Flow("bravo", "delta"))
    assert test.roles["relay"] == "echo" and "echo" in test.hosts  # held with the flows'


def test_a_relay_that_is_also_a_flows_host_is_refused(tmp_path: Path) -> None:
    body = (
        "  - {name: f, mode: turn, tool: iperf2, relay: echo, hosts: all, pairs: {fanin: delta}}\n"
    )
    with pytest.raises(ScenarioError) as err:
        load(tmp_path, body)
    (line,) = str(err.value).splitlines()
    assert "relay host 'echo' is also a flow's host; leave it out of hosts:" in line
