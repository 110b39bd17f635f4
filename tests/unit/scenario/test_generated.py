"""A generated test among the layers (issue 15c): hosts and pairs from defaults < test < -e,
-e server=/client= narrowing a generated test's pairs, and the one-line refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from netrun.core.spec import Flow
from netrun.errors import ScenarioError
from netrun.scenario import generated
from netrun.scenario.loader import load_scenario
from netrun.scenario.pairs import Pair

NATO = ["alpha", "bravo", "charlie", "delta"]


def test_is_generated_and_entry_follow_the_layers() -> None:
    mesh = {"hosts": "all", "pairs": "mesh"}
    assert generated.is_generated(mesh, {}, {})
    assert not generated.is_generated({"name": "p"}, {"server": "alpha"}, mesh)  # it is placed
    assert generated.is_generated({"name": "p"}, {}, {"pairs": "ring"})  # -e gives pairs
    assert generated.entry(mesh, {"hosts": "a,b"}, {"pairs": "ring"}) == {
        "hosts": "all",
        "pairs": "ring",
    }
    assert generated.is_fan({"pairs": {"fanin": "delta"}}) and not generated.is_fan(mesh)
    assert generated.kind_of({"pairs": {"fanout": "alpha"}}) == "fanout"


def test_narrow_keeps_a_fans_flows_of_that_host() -> None:
    flows = (Flow("alpha", "delta"), Flow("bravo", "delta"), Flow("charlie", "delta"))
    fan = Pair("alpha", "delta", 0, flows=flows, kind="fanin")
    (kept,) = generated.narrow([fan], {"client": "bravo"}, "f")
    assert kept.flows == flows[1:2] and (kept.client, kept.server) == ("bravo", "delta")
    line = generated.narrow([fan], {"server": "alpha"}, "f")
    assert isinstance(line, str) and "(its servers: delta)" in line, line


def layered(tmp_path: Path, defaults: str, body: str, **overrides: object):
    path = tmp_path / "layers.yaml"
    path.write_text(f"name: l\ndefaults: {{duration: 1, {defaults}}}\ntests:\n{body}")
    return load_scenario(path, hosts=NATO[:4], overrides=overrides)


MESH = "  - {name: m, mode: baremetal, hosts: 'alpha,bravo,charlie,delta', pairs: mesh-once}\n"
PLAIN = "  - {name: p, mode: baremetal}\n"


def test_e_server_and_client_narrow_generated_pairs_and_still_place_plain_tests(
    tmp_path: Path,
) -> None:
    both = MESH + PLAIN
    scen = layered(tmp_path, "server: alpha, client: bravo", both, server="delta")
    assert [t.name for t in scen.tests] == [
        "m[alpha->delta]", "m[bravo->delta]", "m[charlie->delta]", "p"
    ]  # fmt: skip
    assert (scen.tests[-1].server, scen.tests[-1].client) == ("delta", "bravo")
    assert {t.matrix for t in scen.tests[:-1]} == {"m"}  # a partial matrix, same id
    one = layered(tmp_path, "server: alpha, client: bravo", MESH, client="bravo", server="charlie")
    assert [t.name for t in one.tests] == ["m[bravo->charlie]"]


def test_e_server_no_generated_pair_has_is_one_line_naming_the_test_and_the_fix(
    tmp_path: Path,
) -> None:
    with pytest.raises(ScenarioError) as err:
        layered(tmp_path, "protocol: tcp", MESH, server="alpha")  # mesh-once: alpha is a client
    (line,) = str(err.value).splitlines()
    assert "tests[0] 'm': -e server=alpha: none of the pairs 'm' generates has server alpha" in line
    assert "(its servers: bravo, charlie, delta)" in line and "use -l" in line


def test_defaults_give_hosts_and_pairs_and_e_overrides_them(tmp_path: Path) -> None:
    body = (
        "  - {name: tcp, mode: baremetal}\n"  # both from defaults
        "  - {name: udp, mode: baremetal, protocol: udp, pairs: mesh-once}\n"  # hosts from them
        "  - {name: fixed, mode: baremetal, server: alpha, client: bravo}\n"  # stays placed
    )
    scen = layered(tmp_path, "hosts: 'alpha,bravo,charlie', pairs: ring", body)
    names = [t.name for t in scen.tests]
    assert names == ["tcp[alpha->bravo]", "tcp[bravo->charlie]", "tcp[charlie->alpha]",
                     "udp[alpha->bravo]", "udp[alpha->charlie]", "udp[bravo->charlie]",
                     "fixed"]  # fmt: skip
    assert scen.tests[0].pairs == "ring" and scen.tests[3].pairs == "mesh-once"
    again = layered(tmp_path, "hosts: 'alpha,bravo,charlie', pairs: ring", body,
                    hosts="alpha,delta", pairs="mesh")  # fmt: skip
    assert [t.name for t in again.tests if t.matrix] == [
        "tcp[alpha->delta]", "tcp[delta->alpha]", "udp[alpha->delta]", "udp[delta->alpha]"
    ]  # fmt: skip
    assert {t.pairs for t in again.tests if t.matrix} == {"mesh"}


def test_defaults_server_and_client_keep_an_unplaced_test_plain(tmp_path: Path) -> None:
    scen = layered(tmp_path, "server: alpha, client: bravo, pairs: mesh", PLAIN)
    assert [(t.name, t.server, t.client) for t in scen.tests] == [("p", "alpha", "bravo")]


@pytest.mark.parametrize(
    "defaults,overrides,expected",
    [
        ("server: alpha, client: bravo", {"hosts": "all"}, "-e hosts=all: no test of this"),
        ("server: alpha, client: bravo", {"pairs": "ring"}, "-e pairs=ring: no test of this"),
        ("pairs: triangle", {}, "defaults: pairs: 'triangle' is not a kind of pairs"),
        ("hosts: 3", {}, "defaults: hosts must be a host pattern"),
        ("protocol: tcp", {"pairs": "star"}, "-e pairs=star: pairs: star needs its hosts"),
    ],
)
def test_bad_hosts_or_pairs_in_a_layer_are_one_line(
    tmp_path: Path, defaults: str, overrides: dict[str, object], expected: str
) -> None:
    body = PLAIN if "server" in defaults else MESH
    with pytest.raises(ScenarioError) as err:
        layered(tmp_path, defaults, body, **overrides)
    lines = str(err.value).splitlines()
    assert len(lines) == 1 and expected in lines[0], lines
