"""``clients: N`` and ``sweep: {clients: [...]}`` on a fan test (issue 28): the first N
other hosts, one test per count named by it, the layers (defaults < test < -e) and the
one-line refusals that name the file, the test and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from netrun.errors import ScenarioError
from netrun.scenario import fanwidth, pairs
from netrun.scenario.loader import load_scenario

NATO = ["alpha", "bravo", "charlie", "delta", "echo"]
FAN = "name: f, mode: baremetal, hosts: 'alpha,bravo,charlie,delta'"


def load(tmp_path: Path, body: str, defaults: str = "duration: 1", **overrides: object):
    path = tmp_path / "fan.yaml"
    path.write_text(f"name: fan\ndefaults: {{{defaults}}}\ntests:\n{body}")
    return load_scenario(path, hosts=NATO, overrides=overrides)


def refusal(tmp_path: Path, body: str, **overrides: object) -> str:
    with pytest.raises(ScenarioError) as err:
        load(tmp_path, body, **overrides)
    lines = str(err.value).splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_first_takes_the_first_n_other_hosts_in_order() -> None:
    inn = fanwidth.first(pairs.fan(NATO, "bravo", "fanin")[0], 2, "all")
    assert isinstance(inn, pairs.Pair)
    assert [f.client for f in inn.flows] == ["alpha", "charlie"] and inn.label == "2->bravo"
    out = fanwidth.first(pairs.fan(NATO, "alpha", "fanout")[0], 1, "all")
    assert isinstance(out, pairs.Pair)
    assert [f.label for f in out.flows] == ["alpha->bravo"] and out.label == "alpha->1"
    assert (out.client, out.server) == ("alpha", "bravo")  # the first flow's, as fan's
    star = pairs.Pair("alpha", "bravo", 3)
    assert fanwidth.first(star, 1, "all") is star  # a pair of no flows has no width
    assert fanwidth.first(inn, None, "all") is inn


def test_first_refuses_more_than_the_fan_has() -> None:
    (inn,) = pairs.fan(NATO[:3], "charlie", "fanin")
    assert fanwidth.first(inn, 3, "all") == (
        "clients: 3 is more than the 2 host(s) of hosts 'all' other than charlie"
        " (alpha, bravo): use clients: 1..2, or widen hosts"
    )
    assert fanwidth.first(inn, 3, "all", "-e clients") == (
        "clients: 3 (set by -e clients=3) is more than the 2 host(s) of hosts 'all' other"
        " than charlie (alpha, bravo): use -e clients=1..2, or widen hosts"
    )


def test_clients_narrows_one_fanin(tmp_path: Path) -> None:
    (test,) = load(tmp_path, f"  - {{{FAN}, pairs: {{fanin: delta}}, clients: 2}}\n").tests
    assert test.name == "f[2->delta]"
    assert [f.label for f in test.flows] == ["alpha->delta", "bravo->delta"]
    assert "clients" not in test.options and "clients" not in test.explicit


def test_a_sweep_of_clients_is_one_test_per_count(tmp_path: Path) -> None:
    body = f"  - {{{FAN}, pairs: {{fanin: delta}}, sweep: {{clients: [1, 2, 3]}}}}\n"
    tests = load(tmp_path, body).tests
    assert [t.name for t in tests] == ["f[1->delta]", "f[2->delta]", "f[3->delta]"]
    assert [len(t.flows) for t in tests] == [1, 2, 3]
    assert [dict(t.swept) for t in tests] == [{"clients": n} for n in (1, 2, 3)]
    assert all(t.base_name == "f" and "clients" not in t.options for t in tests)


def test_clients_with_another_swept_key_and_a_fanout(tmp_path: Path) -> None:
    body = f"  - {{{FAN}, pairs: {{fanout: alpha}}, sweep: {{clients: [1, 3], streams: [1, 2]}}}}\n"
    tests = load(tmp_path, body).tests
    assert [t.name for t in tests] == [
        "f[alpha->1][streams=1]",
        "f[alpha->3][streams=1]",
        "f[alpha->1][streams=2]",
        "f[alpha->3][streams=2]",
    ]
    assert [f.server for f in tests[1].flows] == ["bravo", "charlie", "delta"]
    assert tests[3].options["streams"] == 2 and dict(tests[3].swept) == {
        "streams": 2,
        "clients": 3,
    }


def test_clients_layers_defaults_test_then_e(tmp_path: Path) -> None:
    fan = f"  - {{{FAN}, pairs: {{fanin: delta}}}}\n"
    plain = "  - {name: p, mode: baremetal, server: alpha, client: echo}\n"
    tests = load(tmp_path, fan + plain, defaults="duration: 1, clients: 1").tests
    assert [t.name for t in tests] == ["f[1->delta]", "p"]  # defaults serve the fans only
    (test,) = load(
        tmp_path, f"  - {{{FAN}, pairs: {{fanin: delta}}, clients: 3}}\n", clients=2
    ).tests
    assert test.name == "f[2->delta]"  # -e wins over the test
    body = f"  - {{{FAN}, pairs: {{fanin: delta}}, sweep: {{clients: [1, 2]}}}}\n"
    (test,) = load(tmp_path, body, clients=3).tests  # -e wins over the sweep too
    assert test.name == "f[3->delta]"
    (test,) = load(tmp_path, body, **{"f.clients": 1}).tests
    assert test.name == "f[1->delta]"


def test_e_client_narrows_each_count_and_keeps_one_of_alike(tmp_path: Path) -> None:
    body = f"  - {{{FAN}, pairs: {{fanin: delta}}, sweep: {{clients: [1, 2, 3]}}}}\n"
    tests = load(tmp_path, body, client="bravo").tests  # count 1 (alpha) has no bravo
    assert [(t.name, [f.label for f in t.flows]) for t in tests] == [
        ("f[1->delta]", ["bravo->delta"])
    ]


@pytest.mark.parametrize(
    "body,expected",
    [
        (
            "name: f, mode: baremetal, server: alpha, client: bravo, clients: 2",
            "tests[0] 'f': clients takes the first N hosts of a fan test",
        ),
        (
            "name: f, mode: baremetal, hosts: all, pairs: mesh, clients: 2",
            "only a test with hosts: and pairs: {fanin: HOST} or {fanout: HOST} has it",
        ),
        (f"{FAN}, pairs: {{fanin: delta}}, clients: 0", "'f': clients must be at least 1"),
        (f"{FAN}, pairs: {{fanin: delta}}, clients: two", "clients must be a whole number"),
        (f"{FAN}, pairs: {{fanin: delta}}, clients: 2.5", "clients must be a whole number"),
        (f"{FAN}, pairs: {{fanin: delta}}, clients: true", "clients must be a whole number"),
        (
            f"{FAN}, pairs: {{fanin: delta}}, clients: 4",
            "clients: 4 is more than the 3 host(s) of hosts 'alpha,bravo,charlie,delta' other"
            " than delta (alpha, bravo, charlie): use clients: 1..3, or widen hosts",
        ),
        (f"{FAN}, pairs: {{fanin: delta}}, sweep: {{clients: [1, 4]}}", "clients: 4 is more"),
        (f"{FAN}, pairs: {{fanin: delta}}, sweep: {{clients: [2, 2]}}", "clients lists 2 twice"),
        (f"{FAN}, pairs: {{fanin: delta}}, sweep: {{clients: [1, 0]}}", "clients[1] must be at"),
        (f"{FAN}, pairs: {{fanin: delta}}, sweep: {{clients: 2}}", "must be a non-empty list"),
        (
            f"{FAN}, pairs: {{fanin: delta}}, clients: 1, sweep: {{clients: [1, 2]}}",
            "'clients' is set both in the test and in its sweep",
        ),
        (
            "name: f, mode: baremetal, hosts: all, pairs: {star: delta}, sweep: {clients: [1]}",
            "'f': sweep: clients takes the first N hosts of a fan test",
        ),
    ],
)
def test_bad_clients_are_one_line_each(tmp_path: Path, body: str, expected: str) -> None:
    line = refusal(tmp_path, f"  - {{{body}}}\n")
    assert "fan.yaml: tests[0]" in line and expected in line, line


def test_bad_e_clients(tmp_path: Path) -> None:
    fan = f"  - {{{FAN}, pairs: {{fanin: delta}}}}\n"
    assert "-e clients=0: clients must be at least 1" in refusal(tmp_path, fan, clients=0)
    line = refusal(tmp_path, fan, clients=9)  # the line says -e set the count, and its fix
    assert "fan.yaml: tests[0] 'f': clients: 9 (set by -e clients=9) is more than the 3" in line
    assert "use -e clients=1..3, or widen hosts" in line, line
    line = refusal(tmp_path, fan, **{"f.clients": 4})  # the test's own -e, named so
    assert "'f': clients: 4 (set by -e f.clients=4) is more than the 3 host(s)" in line
    assert "use -e f.clients=1..3, or widen hosts" in line, line
    sweep = f"  - {{{FAN}, pairs: {{fanin: delta}}, sweep: {{clients: [1, 2]}}}}\n"
    line = refusal(tmp_path, sweep, clients=5)  # -e wins over the sweep: its count is -e's
    assert "clients: 5 (set by -e clients=5) is more than" in line, line
    plain = "  - {name: p, mode: baremetal, server: alpha, client: echo}\n"
    line = refusal(tmp_path, plain, clients=2)
    assert line.startswith("-e clients=2: no test of this scenario takes 'clients'"), line
    assert "'clients' is a key of fan tests" in line
    line = refusal(tmp_path, fan, **{"f[3->delta].clients": 2})
    assert "'clients' places the test: set it on the entry, -e f.clients=..." in line


def test_too_many_clients_from_defaults_say_so(tmp_path: Path) -> None:
    """A count the test does not set came from the scenario's defaults: the line says so,
    rather than pointing at a key the test does not hold."""
    fan = f"  - {{{FAN}, pairs: {{fanin: delta}}}}\n"
    with pytest.raises(ScenarioError) as err:
        load(tmp_path, fan, defaults="duration: 1, clients: 9")
    line = str(err.value)
    assert "'f': clients: 9 (from defaults) is more than the 3 host(s)" in line, line
    assert "use clients: 1..3, or widen hosts" in line, line
    own = f"  - {{{FAN}, pairs: {{fanin: delta}}, clients: 8}}\n"  # the test's own wins
    with pytest.raises(ScenarioError) as err:
        load(tmp_path, own, defaults="duration: 1, clients: 9")
    assert "clients: 8 is more than the 3" in str(err.value), str(err.value)
