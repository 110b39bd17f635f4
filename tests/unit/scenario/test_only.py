"""--test NAME: only the named tests run, by exact name or glob; an unknown name is one
line naming the closest tests (issue 36)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from netrun.errors import InputError
from netrun.scenario.loader import load_scenario
from netrun.scenario.only import only

TEXT = """tests:
  - {name: tcp-forward, mode: baremetal, server: alpha, client: bravo}
  - {name: tcp-reverse, mode: baremetal, server: alpha, client: bravo, reverse: true}
  - {name: udp-500m, mode: baremetal, server: alpha, client: bravo, protocol: udp}
  - {name: mesh, mode: baremetal, server: bravo, client: alpha}
"""


@pytest.fixture
def scenario(tmp_path: Path):  # type: ignore[no-untyped-def]
    path = tmp_path / "s.yaml"
    path.write_text(TEXT)
    found = load_scenario(path, hosts=("alpha", "bravo"), modes={"baremetal": ()})
    generated = replace(found.tests[-1], name="mesh[alpha->bravo]")  # as pairs: names it
    return replace(found, tests=(*found.tests[:-1], generated))


def names(found) -> list[str]:  # type: ignore[no-untyped-def]
    return [t.name for t in found.tests]


def test_no_name_keeps_every_test_and_names_and_globs_keep_the_scenarios_order(scenario) -> None:  # type: ignore[no-untyped-def]
    assert only(scenario, []) is scenario
    assert names(only(scenario, ["udp-500m", "tcp-*"])) == [
        "tcp-forward",
        "tcp-reverse",
        "udp-500m",
    ]
    assert names(only(scenario, ["mesh[alpha->bravo]"])) == ["mesh[alpha->bravo]"]  # not a class


def test_an_unknown_name_is_one_line_with_the_closest_names(scenario) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError) as err:
        only(scenario, ["tcp-forwad", "zzz"])
    first, second = err.value.problems
    assert "--test 'tcp-forwad' names no test; did you mean tcp-forward" in first
    assert "--test 'zzz' names no test; its tests: tcp-forward, tcp-reverse" in second
