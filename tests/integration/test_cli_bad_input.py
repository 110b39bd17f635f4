"""Bad input at the CLI: exit 2, one line per problem naming the file and the key, no traceback.

None of these runs reaches a host, so they use a small inventory of their own (hosts that
do not exist anywhere) rather than the lab: bad input must be refused before connecting.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.helpers import entry, error_lines, run_netrun, write_scenario, write_yaml

pytestmark = pytest.mark.integration

EXIT_INPUT = 2


@pytest.fixture
def inventory(tmp_path: Path) -> Path:
    """alpha/bravo/charlie on a closed loopback port: nothing here may connect anyway."""
    names = ["alpha", "bravo", "charlie"]
    hosts = {n: {"ansible_host": "127.0.0.1", "ansible_port": 9} for n in names}
    return write_yaml(
        tmp_path / "inv.yaml",
        {"all": {"hosts": hosts, "children": {"lab": {"hosts": {h: {} for h in hosts}}}}},
    )


def refused(tmp: Path, *args: str | Path) -> list[str]:
    """Run netrun expecting bad input: exit 2, no traceback, nothing written; its error lines."""
    res = run_netrun([*args, "-q", "-o", "out"], cwd=tmp, timeout=60)
    assert res.returncode == EXIT_INPUT, (res.returncode, res.stderr)
    assert "Traceback" not in res.stderr, res.stderr
    assert "internal error" not in res.stderr, res.stderr
    assert not (tmp / "out").exists(), "bad input must be refused before a results folder"
    lines = error_lines(res.stderr)
    assert lines, f"no 'netrun: error:' line in stderr: {res.stderr!r}"
    return lines


def test_malformed_yaml_names_file_and_line(tmp_path: Path, inventory: Path) -> None:
    scen = tmp_path / "broken.yaml"
    scen.write_text("name: bad\ntests:\n  - name: x\n    mode: [baremetal\n")
    lines = refused(tmp_path, scen, "-i", inventory)
    assert len(lines) == 1, lines
    assert f"{scen}:" in lines[0] and "YAML syntax error" in lines[0], lines


def test_unknown_key_with_did_you_mean(tmp_path: Path, inventory: Path) -> None:
    scen = write_scenario(tmp_path, [entry("bm", stream=2)])
    lines = refused(tmp_path, scen, "-i", inventory)
    assert len(lines) == 1, lines
    line = lines[0]
    assert str(scen) in line and "'bm'" in line, line
    assert "unknown key 'stream'" in line and "did you mean 'streams'?" in line, line


def test_unknown_host_with_did_you_mean(tmp_path: Path, inventory: Path) -> None:
    scen = write_scenario(tmp_path, [entry("bm", server="alhpa")])
    lines = refused(tmp_path, scen, "-i", inventory)
    assert len(lines) == 1, lines
    line = lines[0]
    assert str(scen) in line and "server 'alhpa'" in line, line
    assert "not in the inventory" in line and "did you mean 'alpha'?" in line, line


def test_unknown_override_key_names_the_flag(tmp_path: Path, inventory: Path) -> None:
    scen = write_scenario(tmp_path, [entry("bm")])
    lines = refused(tmp_path, scen, "-i", inventory, "-e", "durration=1")
    assert len(lines) == 1, lines
    assert "-e durration=1" in lines[0] and "did you mean 'duration'?" in lines[0], lines


def test_an_unknown_test_name_is_one_line_with_the_closest_ones(
    tmp_path: Path, inventory: Path
) -> None:
    scen = write_scenario(tmp_path, [entry("tcp-forward"), entry("tcp-reverse", reverse=True)])
    lines = refused(tmp_path, scen, "-i", inventory, "--test", "tcp-forwad")
    assert len(lines) == 1, lines
    assert f"{scen}: --test 'tcp-forwad' names no test; did you mean tcp-forward" in lines[0]


def test_test_names_and_globs_choose_the_tests_listed(tmp_path: Path, inventory: Path) -> None:
    scen = write_scenario(
        tmp_path, [entry("tcp-forward"), entry("tcp-reverse", reverse=True), entry("other")]
    )
    listed = run_netrun(
        [scen, "-i", inventory, "--list-tests", "-t", "tcp-*", "--test", "other"], cwd=tmp_path
    )
    assert listed.returncode == 0, listed.stderr
    assert "3 tests" in listed.stdout, listed.stdout
    only = run_netrun([scen, "-i", inventory, "--list-tests", "-t", "tcp-r*"], cwd=tmp_path)
    assert "1 tests" in only.stdout and "tcp-forward" not in only.stdout, only.stdout


def test_missing_inventory_file(tmp_path: Path) -> None:
    scen = write_scenario(tmp_path, [entry("bm")])
    missing = tmp_path / "no-such-inventory.yaml"
    lines = refused(tmp_path, scen, "-i", missing)
    assert len(lines) == 1, lines
    assert str(missing) in lines[0] and "not found" in lines[0], lines


def test_missing_scenario_file(tmp_path: Path, inventory: Path) -> None:
    missing = tmp_path / "no-such-scenario.yaml"
    lines = refused(tmp_path, missing, "-i", inventory)
    assert len(lines) == 1, lines
    assert str(missing) in lines[0] and "no such file" in lines[0], lines


def test_limit_matching_nothing_is_bad_input(tmp_path: Path, inventory: Path) -> None:
    scen = write_scenario(tmp_path, [entry("bm")])
    lines = refused(tmp_path, scen, "-i", inventory, "-l", "alpah")
    assert len(lines) == 1, lines
    assert str(inventory) in lines[0] and "'alpah'" in lines[0], lines


def test_several_problems_reported_at_once(tmp_path: Path, inventory: Path) -> None:
    scen = write_scenario(
        tmp_path,
        [
            entry("one", server="alhpa"),
            entry("two", stream=2),
            entry("three", protocol="tpc"),
            entry("four", duration="ten"),
        ],
    )
    lines = refused(tmp_path, scen, "-i", inventory)
    assert len(lines) == 4, lines
    assert all(str(scen) in line for line in lines), lines
    text = "\n".join(lines)
    assert "tests[0] 'one'" in text and "server 'alhpa'" in text
    assert "tests[1] 'two'" in text and "unknown key 'stream'" in text
    assert "tests[2] 'three'" in text and "protocol must be one of tcp, udp" in text
    assert "did you mean 'tcp'?" in text
    assert "tests[3] 'four'" in text and "duration must be" in text and "'ten'" in text
