"""--resume refuses a run whose tests would now run with other options, naming them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from netrun.core.options import parse_overrides
from netrun.run.resume import differences
from netrun.scenario.loader import load_scenario

SCENARIO = """name: r
defaults: {duration: 1}
tests:
  - {name: one, mode: baremetal, server: alpha, client: bravo}
  - {name: two, mode: baremetal, server: alpha, client: bravo, streams: 2}
  - {name: three, mode: baremetal, server: bravo, client: alpha}
"""


def scenario(tmp_path: Path, *extra: str, text: str = SCENARIO) -> Any:
    path = tmp_path / "r.yaml"
    path.write_text(text)
    return load_scenario(path, overrides=parse_overrides(list(extra)), hosts=("alpha", "bravo"))


def recorded(tests: Any) -> dict[str, Any]:
    """What the runner writes per sample (name, mode, hosts, options), through JSON."""
    samples = [
        {"name": t.name, "mode": t.mode, "hosts": dict(t.hosts_by_role), "options": dict(t.options)}
        for t in tests
        if t.name != "three"  # never ran before the interruption
    ]
    return json.loads(json.dumps({"tests": samples}))


def test_same_options_resume(tmp_path: Path) -> None:
    before = scenario(tmp_path)
    assert differences(recorded(before.tests), scenario(tmp_path).tests) == []


def test_an_extra_option_is_named_with_both_values_and_tests(tmp_path: Path) -> None:
    before = recorded(scenario(tmp_path).tests)
    found = differences(before, scenario(tmp_path, "duration=2").tests)
    assert found == ["duration is 2 now, was 1 (in one, two)"]


def test_an_edited_file_and_other_hosts_are_named(tmp_path: Path) -> None:
    before = recorded(scenario(tmp_path).tests)
    edited = SCENARIO.replace("streams: 2", "streams: 3").replace(
        "{name: one, mode: baremetal, server: alpha, client: bravo}",
        "{name: one, mode: baremetal, server: bravo, client: alpha}",
    )
    found = differences(before, scenario(tmp_path, text=edited).tests)
    assert 'server is "bravo" now, was "alpha" (in one)' in found
    assert 'client is "alpha" now, was "bravo" (in one)' in found
    assert "streams is 3 now, was 2 (in two)" in found
