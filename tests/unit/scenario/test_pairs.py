"""Generated pairs, their rounds and --list-tests (issue 14, points 1 and 2).

Pair generation and round planning are pure functions of the host list; the CLI listing is
run for real against an inventory whose every address is a closed port on loopback, so a
connection attempt would fail (and take time) instead of listing.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from netrun.errors import ScenarioError
from netrun.run import rounds
from netrun.scenario import pairs
from netrun.scenario.loader import load_scenario
from tests.conftest import ROOT

NATO = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india"]


def hosts(n: int) -> list[str]:
    return [f"n{i:02}" for i in range(n)]


def scenario(tmp_path: Path, body: str, parallel: str = "true") -> Path:
    path = tmp_path / "mesh.yaml"
    path.write_text(f"name: mesh\nparallel: {parallel}\ndefaults: {{duration: 1}}\ntests:\n{body}")
    return path


def load(tmp_path: Path, body: str, names: list[str] = NATO, parallel: str = "true"):
    return load_scenario(scenario(tmp_path, body, parallel), hosts=names)


# -- generation ----------------------------------------------------------------------------
@pytest.mark.parametrize("n", range(2, 13))
def test_circle_method_is_a_round_robin_tournament(n: int) -> None:
    got = pairs.mesh_once(hosts(n))
    assert len(got) == n * (n - 1) // 2
    by_round: dict[int, list[pairs.Pair]] = {}
    for p in got:
        by_round.setdefault(p.slot, []).append(p)
    assert len(by_round) == (n - 1 if n % 2 == 0 else n)
    for games in by_round.values():
        seen = [h for p in games for h in (p.client, p.server)]
        assert len(seen) == len(set(seen)), "a host plays twice in one round"


@pytest.mark.parametrize("n", [2, 3, 4, 7, 8])
def test_ordered_mesh_takes_twice_the_rounds(n: int) -> None:
    got = pairs.mesh(hosts(n))
    assert len(got) == n * (n - 1)
    assert len({(p.client, p.server) for p in got}) == len(got)
    per_round: dict[int, list[str]] = {}
    for p in got:
        per_round.setdefault(p.slot, []).extend([p.client, p.server])
    assert len(per_round) == 2 * (n - 1 if n % 2 == 0 else n)
    assert all(len(v) == len(set(v)) for v in per_round.values())


def test_ring_star_between() -> None:
    assert [p.label for p in pairs.ring(hosts(3))] == ["n00->n01", "n01->n02", "n02->n00"]
    assert [p.label for p in pairs.star(hosts(3), "n01")] == ["n00->n01", "n02->n01"]
    got = pairs.between(["a1", "a2"], ["b1", "b2", "b3"])
    assert len(got) == 6 and len({p.slot for p in got}) == 3


def test_generated_tests_are_named_client_to_server_and_combine_with_sweep(
    tmp_path: Path,
) -> None:
    scen = load(
        tmp_path,
        "  - {name: m, mode: baremetal, hosts: 'alpha,bravo,charlie', pairs: mesh-once,\n"
        "     sweep: {streams: [1, 2]}, repeat: 2}\n",
    )
    names = [t.name for t in scen.tests]
    assert names[:3] == ["m[alpha->bravo][streams=1]", "m[alpha->charlie][streams=1]",
                         "m[bravo->charlie][streams=1]"]  # fmt: skip
    assert len(names) == 6 and len(set(names)) == 6
    first = scen.tests[0]
    assert (first.client, first.server, first.repeat, first.matrix) == (
        "alpha", "bravo", 2, "m[streams=1]"
    )  # fmt: skip
    assert len({t.tag for t in scen.tests}) == 6  # own pid files and containers per pair


@pytest.mark.parametrize(
    "body,expected",
    [
        ("hosts: 'zulu*', pairs: mesh", "tests[0] 'm': hosts: host pattern 'zulu*' matches"),
        ("hosts: alpha, pairs: mesh", "selects 1 host(s) (alpha): pairs: mesh needs at least two"),
        ("hosts: 'a*', pairs: {star: bravo}", "star host 'bravo' is not within hosts 'a*'"),
        ("hosts: all, pairs: triangle", "pairs: 'triangle' is not a kind of pairs; use mesh"),
        ("hosts: all, pairs: star", "pairs: star needs its hosts"),
        ("hosts: all, pairs: {between: [alpha]}", "between must be a list of two host patterns"),
        ("hosts: all", "missing key 'pairs'"),
        ("pairs: mesh", "missing key 'hosts'"),
        ("hosts: all, pairs: mesh, server: alpha", "'server' and 'hosts'/'pairs' exclude"),
        ("hosts: 3, pairs: mesh", "hosts must be a host pattern"),
    ],
)
def test_bad_generated_pairs_are_one_line_each(tmp_path: Path, body: str, expected: str) -> None:
    with pytest.raises(ScenarioError) as err:
        load(tmp_path, f"  - {{name: m, mode: baremetal, {body}}}\n")
    lines = str(err.value).splitlines()
    assert len(lines) == 1 and expected in lines[0], lines


# -- rounds --------------------------------------------------------------------------------
@pytest.mark.parametrize("kind,n,expected", [("mesh-once", 8, 7), ("mesh-once", 7, 7),
                                             ("mesh", 8, 14), ("ring", 8, 2), ("ring", 7, 3),
                                             ("star", 5, 4)])  # fmt: skip
def test_rounds_meet_the_tournament_bound(tmp_path: Path, kind: str, n: int, expected: int) -> None:
    spec = "{star: alpha}" if kind == "star" else kind
    scen = load(tmp_path, f"  - {{name: m, mode: baremetal, hosts: all, pairs: {spec}}}\n",
                NATO[:n])  # fmt: skip
    plan = rounds.plan(scen.tests, scen.parallel)
    assert len(plan) == expected
    for games in plan:
        seen = [h for t in games for h in t.hosts]
        assert len(seen) == len(set(seen))
    assert sorted(t.name for r in plan for t in r) == sorted(t.name for t in scen.tests)


def test_width_caps_a_round_and_width_one_is_sequential(tmp_path: Path) -> None:
    scen = load(tmp_path, "  - {name: m, mode: baremetal, hosts: all, pairs: mesh-once}\n",
                NATO[:8])  # fmt: skip
    assert all(len(r) <= 2 for r in rounds.plan(scen.tests, 2))
    assert [r[0].name for r in rounds.plan(scen.tests, 1)] == [t.name for t in scen.tests]


def test_list_tests_plans_without_connecting(tmp_path: Path) -> None:
    """Every host is a closed port on loopback: listing must neither try nor wait."""
    inv = tmp_path / "inv.yaml"
    inv.write_text(
        "all:\n  hosts:\n"
        + "".join(f"    {h}: {{ansible_host: 127.0.0.1, ansible_port: 1}}\n" for h in NATO[:8])
    )
    path = scenario(tmp_path, "  - {name: m, mode: baremetal, hosts: all, pairs: mesh-once}\n")
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "netrun", str(path), "-i", str(inv), "--list-tests", "-l",
         "all:!hotel"],
        capture_output=True, text=True, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 10
    out = done.stdout
    assert "28 tests; nothing was contacted" in out
    assert "m[golf->hotel]: baremetal, golf -> hotel  [outside -l]" in out
    assert "21 tests in 7 rounds" in out and "round 7:" in out and "round 8" not in out
    assert not (tmp_path / "results").exists()


def test_a_later_test_never_overtakes_an_earlier_one_on_a_host() -> None:
    """t2 waits for alpha; t3 must not take charlie first, or t2's round slips by one."""
    import threading
    from types import SimpleNamespace

    from netrun.run.scheduler import run_parallel

    order: list[str] = []
    lock = threading.Lock()
    seconds = {"t0": 0.3, "t1": 0.05, "t2": 0.05, "t3": 0.05}

    def run_test(test, number, total) -> None:  # type: ignore[no-untyped-def]
        with lock:
            order.append(test.name)
        time.sleep(seconds[test.name])

    tests = [
        SimpleNamespace(name=n, hosts=h)
        for n, h in [("t0", ("alpha", "bravo")), ("t1", ("charlie", "delta")),
                     ("t2", ("charlie", "alpha")), ("t3", ("charlie", "delta"))]
    ]  # fmt: skip
    run_parallel(tests, 4, run_test, lambda: None)  # type: ignore[arg-type]
    assert order == ["t0", "t1", "t2", "t3"]


def test_every_mode_takes_generated_pairs(tmp_path: Path) -> None:
    """Extra roles (a relay) still name their host; server and client come from the pair."""
    from netrun.modes import mode_roles, mode_tools

    for mode, roles in mode_roles().items():
        extra = "".join(f", {r}: india" for r in roles if r not in ("server", "client"))
        tools = mode_tools()[mode]
        extra += f", tool: {tools[0]}" if tools else ""  # turn measures with iperf2 only
        entry = f"  - {{name: m, mode: {mode}, hosts: 'a*,b*', pairs: mesh{extra}}}\n"
        scen = load(tmp_path, entry)
        assert [t.name for t in scen.tests] == ["m[alpha->bravo]", "m[bravo->alpha]"], mode
        assert all(t.roles.get(r, "india") == "india" for t in scen.tests for r in roles
                   if r not in ("server", "client"))  # fmt: skip
