"""Scenario loading: merge order, sweeps, option_for, and every validation message."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netrun.core.options import Option, parse_overrides
from netrun.core.spec import Scenario, TestSpec
from netrun.errors import ScenarioError
from netrun.hosts.host import Host
from netrun.modes import EXTRA_ENV
from netrun.scenario.loader import MAX_BYTES, load_scenario, option_for
from netrun.scenario.validator import COMMON_OPTIONS
from tests.conftest import SCENARIOS_FIXTURES

HOSTS = ("alpha", "bravo", "charlie")
IMAGE = Option("image", str, "networkstatic/iperf3", "container image", from_inventory=True)
MODES: dict[str, tuple[Option, ...]] = {"baremetal": (), "docker": (IMAGE,)}
HEAD = "tests:\n  - {name: bm, mode: baremetal, server: alpha, client: bravo"


def write(tmp_path: Path, text: str, name: str = "x.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def load(path: Path, **kwargs: Any) -> Scenario:
    kwargs.setdefault("hosts", HOSTS)
    kwargs.setdefault("modes", MODES)
    return load_scenario(path, **kwargs)


def problems(path: Path, **kwargs: Any) -> list[str]:
    with pytest.raises(ScenarioError) as info:
        load(path, **kwargs)
    return info.value.problems


def one_test(tmp_path: Path, extra: str = "", defaults: str = "", **kwargs: Any) -> list[str]:
    """Problems of a file with one baremetal test plus ``extra`` flow-mapping entries."""
    text = (f"defaults: {{{defaults}}}\n" if defaults else "") + HEAD + extra + "}\n"
    return problems(write(tmp_path, text), **kwargs)


# -- good files --------------------------------------------------------------------------
def test_loads_the_contract_example() -> None:
    scenario = load(SCENARIOS_FIXTURES / "baremetal-1g.yaml")
    assert scenario.name == "baremetal-1g"
    assert scenario.description == "Bare metal between two hosts on a 1 GbE link"
    assert scenario.path == SCENARIOS_FIXTURES / "baremetal-1g.yaml"
    assert [t.name for t in scenario.tests] == ["bare-metal", "bare-metal-udp", "docker-tcp"]
    bm, udp, dock = scenario.tests
    assert (bm.mode, bm.server, bm.client, bm.index) == ("baremetal", "alpha", "bravo", 0)
    assert set(bm.options) == {o.name for o in COMMON_OPTIONS}
    assert set(dock.options) == {o.name for o in COMMON_OPTIONS} | {"image"}
    assert (bm.duration, bm.protocol, bm.streams, bm.reverse, bm.omit) == (10, "tcp", 1, False, 0)
    assert (bm.bitrate, bm.length, bm.repeat, bm.port, bm.window, bm.timeout) == (None,) * 2 + (
        1,
        None,
        None,
        None,
    )
    assert bm.connect_timeout == 5
    assert (udp.protocol, udp.bitrate, udp.length) == ("udp", "800M", 1400)
    assert (dock.streams, dock.value("image")) == (4, "networkstatic/iperf3")
    assert scenario.defaults["duration"] == 10


def test_specs_are_read_only() -> None:
    spec = load(SCENARIOS_FIXTURES / "baremetal-1g.yaml").tests[0]
    with pytest.raises(TypeError):
        spec.options["streams"] = 2  # type: ignore[index]
    with pytest.raises(AttributeError):
        spec.name = "other"  # type: ignore[misc]
    with pytest.raises(KeyError, match="did you mean 'streams'"):
        spec.value("stream")


def test_merge_order_default_defaults_test_override(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "defaults: {duration: 20, streams: 2, omit: 1}\n"
        "tests:\n"
        "  - {name: a, mode: baremetal, server: alpha, client: bravo, streams: 3, reverse: true}\n"
        "  - {name: b, mode: baremetal, server: alpha, client: bravo}\n",
    )
    a, b = load(path, overrides={"omit": 2}).tests
    assert (a.duration, a.streams, a.reverse, a.omit, a.protocol) == (20, 3, True, 2, "tcp")
    assert (b.duration, b.streams, b.reverse, b.omit) == (20, 2, False, 2)
    assert a.explicit == {"duration", "streams", "omit", "reverse"}
    assert b.explicit == {"duration", "streams", "omit"}
    a2 = load(path, overrides={"streams": 8}).tests[0]
    assert a2.streams == 8  # -e beats the test


def test_mode_option_in_defaults_applies_only_to_that_mode(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "defaults: {image: 'local/iperf3:3.12'}\n"
        "tests:\n"
        "  - {name: bm, mode: baremetal, server: alpha, client: bravo}\n"
        "  - {name: dk, mode: docker, server: alpha, client: bravo}\n",
    )
    bm, dk = load(path).tests
    assert "image" not in bm.options and "image" not in bm.explicit
    assert dk.value("image") == "local/iperf3:3.12" and "image" in dk.explicit


def test_placement_may_come_from_defaults_and_overrides(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "defaults: {mode: baremetal, server: alpha, client: bravo}\ntests:\n  - name: t\n",
    )
    spec = load(path).tests[0]
    assert (spec.mode, spec.server, spec.client) == ("baremetal", "alpha", "bravo")
    spec = load(path, overrides={"server": "charlie", "mode": "docker"}).tests[0]
    assert (spec.mode, spec.server, spec.value("image")) == ("docker", "charlie", IMAGE.default)


def test_name_defaults_to_file_stem_and_hosts_are_optional(tmp_path: Path) -> None:
    path = write(tmp_path, HEAD.replace("alpha", "anything") + "}\n", "lab-run.yaml")
    scenario = load(path, hosts=None)
    assert scenario.name == "lab-run" and scenario.tests[0].server == "anything"


def test_valid_values_accepted(tmp_path: Path) -> None:
    extra = (
        ", duration: 3, omit: 0, bitrate: 0, length: 63K, window: 4M, port: 5201,"
        " connect_timeout: 0.5, timeout: 60, repeat: 3, streams: 128, protocol: udp"
    )
    path = write(tmp_path, HEAD + extra + "}\n")
    spec = load(path).tests[0]
    assert (spec.duration, spec.length, spec.window, spec.port) == (3, "63K", "4M", 5201)
    assert spec.deadline == 60


def test_deadline_is_derived_without_timeout(tmp_path: Path) -> None:
    spec = load(write(tmp_path, HEAD + ", duration: 10, omit: 2}\n")).tests[0]
    assert spec.deadline == 2 + 10 + 2 * 5 + 30


def test_modes_default_to_netrun_modes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without ``modes``, the loader asks the registry (netrun.modes) for every mode's keys,
    roles and tools: a mode it gains through NETRUN_EXTRA_MODES is known, roles and all."""
    (tmp_path / "threeway_mode.py").write_text(
        "from netrun.modes.baremetal.mode import BareMetal\n\n\n"
        "class Threeway(BareMetal):\n"
        '    name = "threeway"\n'
        '    roles = ("server", "client", "relay")\n\n\n'
        "MODE = Threeway\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(EXTRA_ENV, "threeway=threeway_mode")
    try:
        assert load_scenario(write(tmp_path, HEAD + "}\n"), hosts=HOSTS).tests[0].mode == (
            "baremetal"
        )
        three = HEAD.replace("baremetal", "threeway") + ", relay: charlie}\n"
        spec = load_scenario(write(tmp_path, three), hosts=HOSTS).tests[0]
        assert (spec.mode, dict(spec.hosts_by_role)["relay"]) == ("threeway", "charlie")
        with pytest.raises(ScenarioError, match="relay"):  # the registry's roles, not the default
            load_scenario(
                write(tmp_path, HEAD.replace("baremetal", "threeway") + "}\n"), hosts=HOSTS
            )
    finally:
        sys.modules.pop("threeway_mode", None)


# -- every problem at once ------------------------------------------------------------------
def test_reports_every_problem_in_one_error() -> None:
    w = str(SCENARIOS_FIXTURES / "many-problems.yaml")
    assert problems(SCENARIOS_FIXTURES / "many-problems.yaml") == [
        f"{w}: unknown key 'colour' (valid keys: name, description, defaults, tests, baseline,"
        " parallel, forks)",
        f"{w}: defaults: duration must be a whole number of seconds from 1 to 86400, got 'ten'",
        f"{w}: defaults: image must be a string, got 42",
        f"{w}: defaults: unknown key 'protcol'; did you mean 'protocol'?",
        f"{w}: tests[0] 'bm': server 'alhpa' is not in the inventory; did you mean 'alpha'?",
        f"{w}: tests[0] 'bm': unknown key 'stream'; did you mean 'streams'?",
        f"{w}: tests[1] 'bare-metal': unknown mode 'dokcer'; did you mean 'docker'?",
        f"{w}: tests[2] 'bm': streams must be an integer from 1 to 128, got true"
        " (YAML reads yes/no/on/off as true/false)",
        f"{w}: tests[2] 'bm': {BITRATE}, got '1G;touch /tmp/x'",
        f"{w}: tests[2] 'bm': protocol must be one of tcp, udp, got 'tpc'; did you mean 'tcp'?",
        f"{w}: tests[2] 'bm': duplicate test name 'bm' (first at tests[0])",
        f"{w}: tests[3]: must be a mapping, got a list",
        f"{w}: tests[4] 'bad/name': name 'bad/name' is not safe for file names: use 1-64 of"
        " A-Z a-z 0-9 . _ -, starting with a letter or digit",
        f"{w}: tests[4] 'bad/name': unknown key 'image' for mode 'baremetal'"
        " (an option of mode 'docker')",
        f"{w}: tests[5]: missing key 'name'",
        f"{w}: tests[5]: missing key 'server'",
        f"{w}: tests[5]: port must be an integer from 1 to 65535, got 70000",
    ]


def test_error_message_is_one_line_per_problem() -> None:
    with pytest.raises(ScenarioError) as info:
        load(SCENARIOS_FIXTURES / "many-problems.yaml")
    assert str(info.value).splitlines() == info.value.problems


# -- one message each -------------------------------------------------------------------------
SECONDS = "duration must be a whole number of seconds from 1 to 86400"
BITRATE = "bitrate must be an iperf3 size such as 100, 128K or 1G, at most 1000T"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (", duration: 0", f"{SECONDS}, got 0"),
        (", duration: -1.5", f"{SECONDS}, got -1.5"),
        (", duration: .inf", f"{SECONDS}, got inf"),
        (", duration: 86401", f"{SECONDS}, got 86401"),
        (", duration: yes", f"{SECONDS}, got true (YAML reads yes/no/on/off"),
        (", duration: null", f"{SECONDS}, got null"),
        (", omit: -1", "omit must be a whole number of seconds from 0 to 600, got -1"),
        (", omit: 601", "omit must be a whole number of seconds from 0 to 600, got 601"),
        (", connect_timeout: 1.0e+400", "connect_timeout must be a number > 0 and <= 3600"),
        (", timeout: " + "9" * 400, "timeout must be a number > 0 and <= 604800, got 999"),
        (", bitrate: " + "9" * 400, f"{BITRATE}, got 999"),
        (", length: 2M", "length must be an iperf3 size such as 100, 128K or 1G > 0, at most 1M"),
        (", window: 1G", "window must be an iperf3 size such as 100, 128K or 1G > 0, at most 512M"),
        (", streams: 0", "streams must be an integer from 1 to 128, got 0"),
        (", streams: 129", "streams must be an integer from 1 to 128, got 129"),
        (", streams: 2.0", "streams must be an integer from 1 to 128, got 2.0"),
        (", streams: '2'", "streams must be an integer from 1 to 128, got '2'"),
        (", reverse: 1", "reverse must be true or false, got 1"),
        (", reverse: 'true'", "reverse must be true or false, got 'true'"),
        (", protocol: TCP", "protocol must be one of tcp, udp, got 'TCP'; did you mean 'tcp'?"),
        (", protocol: sctp", "protocol must be one of tcp, udp, got 'sctp'"),
        (", bitrate: 1.5", f"{BITRATE}, got 1.5"),
        (", bitrate: 1X", f"{BITRATE}, got '1X'"),
        (", bitrate: '$(reboot)'", "bitrate must be an iperf3 size such as"),
        (", length: 0", "length must be an iperf3 size such as 100, 128K or 1G > 0, at most 1M"),
        (", length: '100 -Z'", "length must be an iperf3 size such as 100, 128K or 1G > 0"),
        (", window: '`id`'", "window must be an iperf3 size"),
        (", repeat: 0", "repeat must be an integer from 1 to 10000, got 0"),
        (", port: 0", "port must be an integer from 1 to 65535, got 0"),
        (", port: '5201'", "port must be an integer from 1 to 65535, got '5201'"),
        (", connect_timeout: 0", "connect_timeout must be a number > 0 and <= 3600, got 0"),
        (", timeout: -5", "timeout must be a number > 0 and <= 604800, got -5"),
        (", busy_backoff: 61", "busy_backoff must be a number >= 0 and <= 60, got 61"),
        (", busy_backoff: 1.0e+300", "busy_backoff must be a number >= 0 and <= 60"),
        (", stream: 2", "unknown key 'stream'; did you mean 'streams'?"),
        (", 1: 2", "key 1 is not a string"),
        (", image: x", "unknown key 'image' for mode 'baremetal' (an option of mode 'docker')"),
        (", sweep: []", "sweep must be a non-empty mapping of key: [values], got a list"),
    ],
)
def test_value_messages(tmp_path: Path, extra: str, message: str) -> None:
    found = one_test(tmp_path, extra)
    assert len(found) == 1, found
    assert found[0].startswith(f"{tmp_path / 'x.yaml'}: tests[0] 'bm': {message}")


def test_control_characters_in_strings_are_refused(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        'tests:\n  - {name: d, mode: docker, server: alpha, client: bravo, image: "a\\nb"}\n',
    )
    assert problems(path) == [
        f"{path}: tests[0] 'd': image must not contain control characters, got 'a\\nb'"
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "must be a mapping with a 'tests' list; the file is empty"),
        ("- a\n- b\n", "must be a mapping with a 'tests' list; got a list"),
        ("name: x\n", "missing key 'tests' (a list of tests)"),
        ("tests: []\n", "tests must be a non-empty list of tests, got a list"),
        ("tests: 3\n", "tests must be a non-empty list of tests, got 3"),
        ("tests:\n  - 7\n", "tests[0]: must be a mapping, got 7"),
        ("name: 'a b'\n" + HEAD + "}\n", "name 'a b' is not safe for file names"),
        ("description: 5\n" + HEAD + "}\n", "description must be a string, got 5"),
        ("defaults: [1]\n" + HEAD + "}\n", "defaults must be a mapping, got a list"),
        ("defaults: 0\n" + HEAD + "}\n", "defaults must be a mapping, got 0"),
        ("teststs: 1\n" + HEAD + "}\n", "unknown key 'teststs'; did you mean 'tests'?"),
        ("? [a]\n: 1\n", "YAML syntax error: found unhashable key"),
        ("3: x\n" + HEAD + "}\n", "key 3 is not a string"),
    ],
)
def test_file_level_messages(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    found = problems(path)
    assert len(found) == 1, found
    assert found[0].startswith(f"{path}") and message in found[0], found


@pytest.mark.parametrize(
    "name", ["a/b", "../up", ".hidden", "-rf", "a b", "x;rm", "", "é", "n" * 65, "a[1]"]
)
def test_unsafe_test_names(tmp_path: Path, name: str) -> None:
    path = write(tmp_path, f"tests:\n  - {{name: {name!r}, mode: baremetal, server: a, client: b}}")
    [found] = problems(path, hosts=None)
    assert "is not safe for file names: use 1-64 of A-Z a-z 0-9 . _ -" in found


@pytest.mark.parametrize("name", ["bm", "Bare_Metal-1.5", "9", "n" * 64])
def test_safe_test_names(tmp_path: Path, name: str) -> None:
    text = f"tests:\n  - {{name: '{name}', mode: baremetal, server: a, client: b}}"
    assert load(write(tmp_path, text), hosts=None).tests[0].name == name


def test_name_must_be_a_string(tmp_path: Path) -> None:
    path = write(tmp_path, "tests:\n  - {name: 5, mode: baremetal, server: a, client: b}")
    assert problems(path, hosts=None) == [
        f"{path}: tests[0]: name 5 is not safe for file names: use 1-64 of A-Z a-z 0-9 . _ -,"
        " starting with a letter or digit"
    ]


def test_missing_and_unknown_placement(tmp_path: Path) -> None:
    path = write(
        tmp_path, "tests:\n  - {name: t}\n  - {name: u, mode: bare, server: '', client: 3}"
    )
    assert problems(path) == [
        f"{path}: tests[0] 't': missing key 'mode'; known modes: baremetal, docker",
        f"{path}: tests[0] 't': missing key 'server'",
        f"{path}: tests[0] 't': missing key 'client'",
        f"{path}: tests[1] 'u': unknown mode 'bare'; did you mean 'baremetal'?",
        f"{path}: tests[1] 'u': server must be a non-empty string, got ''",
        f"{path}: tests[1] 'u': client must be a non-empty string, got 3",
    ]


def test_client_not_in_inventory_without_close_match(tmp_path: Path) -> None:
    path = write(tmp_path, HEAD.replace("bravo", "zzz") + "}\n")
    assert problems(path) == [f"{path}: tests[0] 'bm': client 'zzz' is not in the inventory"]


def test_bad_placement_in_defaults_is_reported_once(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "defaults: {mode: dockr, server: alpah}\n"
        "tests:\n  - {name: a, client: bravo}\n  - {name: b, client: bravo}\n",
    )
    assert problems(path) == [
        f"{path}: defaults: unknown mode 'dockr'; did you mean 'docker'?",
        f"{path}: defaults: server 'alpah' is not in the inventory; did you mean 'alpha'?",
    ]


def test_bad_mode_in_test_does_not_fall_back_to_defaults(tmp_path: Path) -> None:
    text = "tests:\n  - {name: bm, mode: dokker, server: alpha, client: bravo, image: x}\n"
    path = write(tmp_path, "defaults: {mode: baremetal}\n" + text)
    assert problems(path) == [
        f"{path}: tests[0] 'bm': unknown mode 'dokker'; did you mean 'docker'?"
    ]


def test_unknown_key_in_defaults_lists_placement_and_all_modes(tmp_path: Path) -> None:
    found = one_test(tmp_path, defaults="imgae: x, clinet: y")
    w = tmp_path / "x.yaml"
    assert found == [
        f"{w}: defaults: unknown key 'imgae'; did you mean 'image'?",
        f"{w}: defaults: unknown key 'clinet'; did you mean 'client'?",
    ]


# -- files that are not scenario text ----------------------------------------------------
def test_no_such_file(tmp_path: Path) -> None:
    path = tmp_path / "missing.yaml"
    assert problems(path) == [f"{path}: no such file"]


def test_directory_is_not_a_file(tmp_path: Path) -> None:
    assert problems(tmp_path) == [f"{tmp_path}: is a directory; pass a YAML file"]


def test_syntax_error_has_line_and_column() -> None:
    path = SCENARIOS_FIXTURES / "syntax-error.yaml"
    assert problems(path) == [
        f"{path}:5:1: YAML syntax error: a '[' list is not closed; add ']' (or a ',' between items)"
    ]


def test_duplicate_yaml_key_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, HEAD + "}\ndefaults:\n  streams: 1\n  streams: 2\n")
    assert problems(path) == [f"{path}:5:3: YAML syntax error: duplicate key 'streams'"]


def test_multiple_documents_are_an_error(tmp_path: Path) -> None:
    [found] = problems(write(tmp_path, HEAD + "}\n---\n" + HEAD + "}\n"))
    assert "YAML syntax error: a second document ('---'); keep one document per file" in found


@pytest.mark.parametrize(
    ("text", "where", "words"),
    [
        (
            "name: x\ntests:\n  - name: a\n    mode: m\n   server: s\n",
            "5:4",
            "this line is indented differently",
        ),
        ("name: x\ntests:\n  - name: a\n\tmode: m\n", "4:1", "a tab character"),
        ('name: "x\n', "2:1", "a quoted string is never closed"),
        ("name: x\nkey: a: b\n", "2:7", "a second ':' on one line"),
        (
            "name: x\ntests:\n  - name: a\n    mode: m\n      server: s\n",
            "5:13",
            "this line is indented more than the key 'mode' above it, which already has a value",
        ),
        ("name: x\n- a\n", "2:1", "a list item '-' where a key was expected"),
        ("a: {b: 1\n", "2:1", "a '{' mapping is not closed"),
        ("a: *nope\n", "1:4", "the alias *nope names no anchor"),
    ],
)
def test_yaml_errors_are_file_line_col_and_plain_words(
    tmp_path: Path, text: str, where: str, words: str
) -> None:
    """PyYAML's token names (<block end>, <stream end>) never reach the user."""
    path = write(tmp_path, text)
    [found] = problems(path)
    assert found.startswith(f"{path}:{where}: YAML syntax error: {words}"), found
    assert "<" not in found, found


def test_alias_bomb_is_refused() -> None:
    path = SCENARIOS_FIXTURES / "alias-bomb.yaml"
    assert problems(path) == [
        f"{path}: more than 100000 YAML nodes once aliases (*name) are expanded; refusing to"
        " load it: remove repeated aliases, or split the file"
    ]


def test_recursive_alias_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "tests: &a [*a]\n")
    [found] = problems(path)
    assert found.startswith(f"{path}: a YAML alias contains itself; refusing to load it")


def test_shared_anchors_and_merge_keys_still_work(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "tests:\n"
        "  - &t {name: a, mode: baremetal, server: alpha, client: bravo}\n"
        "  - {<<: *t, name: b, streams: 2}\n",
    )
    assert [(t.name, t.streams) for t in load(path).tests] == [("a", 1), ("b", 2)]


def test_oversized_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    with path.open("wb") as handle:
        handle.truncate(MAX_BYTES + 1)
    assert problems(path) == [
        f"{path}: is larger than 1 MB; refusing to load it (is it the right file?)"
    ]


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"\x7fELF\x02\x01\x01\x00\x00\x00", "is not a YAML text file (binary data: a NUL byte at"),
        (b"\xff\xfe\xfa garbage", "is not UTF-8 text (byte 0xff at offset 0); save it as UTF-8"),
        (bytes(range(256)), "is not a YAML text file (binary data: a NUL byte at offset 0)"),
    ],
)
def test_binary_garbage_is_a_plain_error(tmp_path: Path, data: bytes, why: str) -> None:
    path = tmp_path / "bin.yaml"
    path.write_bytes(data)
    [found] = problems(path)
    assert found.startswith(f"{path}: {why}")


def test_control_bytes_in_text_are_a_plain_error(tmp_path: Path) -> None:
    [found] = problems(write(tmp_path, "tests: \x01\n"))
    assert found.startswith(f"{tmp_path / 'x.yaml'}: YAML error: unacceptable character")


def test_deep_nesting_is_a_plain_error(tmp_path: Path) -> None:
    [found] = problems(write(tmp_path, "tests: " + "[" * 5000 + "]" * 5000 + "\n"))
    assert found == f"{tmp_path / 'x.yaml'}: YAML is nested too deeply; flatten it"


def test_bad_date_is_a_plain_error(tmp_path: Path) -> None:
    [found] = problems(write(tmp_path, "description: 2024-13-45\n" + HEAD + "}\n"))
    assert found.startswith(f"{tmp_path / 'x.yaml'}: bad YAML value:")


@settings(
    max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(st.binary(max_size=300) | st.text(max_size=300))
def test_any_input_gives_a_scenario_or_a_scenario_error(data: bytes | str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "f.yaml"
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
        try:
            load(path)
        except ScenarioError as exc:
            assert exc.problems


# -- -e overrides -------------------------------------------------------------------------
def test_parse_overrides_reads_yaml_scalars() -> None:
    assert parse_overrides(
        ["streams=4", "protocol=udp", "bitrate=1G", "reverse=true", "duration=2.5", "length="]
    ) == {
        "streams": 4,
        "protocol": "udp",
        "bitrate": "1G",
        "reverse": True,
        "duration": 2.5,
        "length": None,
    }
    assert parse_overrides(["a=1", "a=2"]) == {"a": 2}
    assert parse_overrides([" image = x=y "]) == {"image": "x=y"}


def test_parse_overrides_reports_every_bad_pair() -> None:
    with pytest.raises(ScenarioError) as info:
        parse_overrides(["streams", "=4", "1x=2", "a=[1, 2]", "b={c: 1}", "c=[", "d=2024-01-01"])
    assert info.value.problems == [
        "-e 'streams': expected key=value or TEST.key=value, e.g. -e streams=4",
        "-e '=4': expected key=value or TEST.key=value, e.g. -e streams=4",
        "-e '1x=2': expected key=value or TEST.key=value, e.g. -e streams=4",
        "-e a=[1, 2]: the value must be one plain value, got a list",
        "-e b={c: 1}: the value must be one plain value, got a mapping",
        "-e c=[: the value is not a valid YAML scalar; quote it",
        "-e d=2024-01-01: the value must be one plain value, got datetime.date(2024, 1, 1)",
    ]


def test_override_problems_are_named_as_dash_e(tmp_path: Path) -> None:
    found = one_test(
        tmp_path,
        overrides={"stream": 4, "duration": "ten", "reverse": None, "server": "alfa", 3: 1},
    )
    assert found == [
        "-e stream=4: unknown key 'stream'; did you mean 'streams'?",
        "-e duration=ten: duration must be a whole number of seconds from 1 to 86400, got 'ten'",
        "-e reverse=null: reverse must be true or false, got null",
        "-e server=alfa: server 'alfa' is not in the inventory; did you mean 'alpha'?",
        "-e 3=1: key 3 is not a string",
    ]


def test_problems_from_file_and_overrides_come_together(tmp_path: Path) -> None:
    found = one_test(tmp_path, ", streams: 0", overrides={"omit": -1})
    assert found == [
        "-e omit=-1: omit must be a whole number of seconds from 0 to 600, got -1",
        f"{tmp_path / 'x.yaml'}: tests[0] 'bm': streams must be an integer from 1 to 128, got 0",
    ]


# -- sweep ----------------------------------------------------------------------------------
def test_sweep_expands_in_order() -> None:
    tests = load(SCENARIOS_FIXTURES / "sweep.yaml").tests
    assert [t.name for t in tests] == [
        "udp-sizes[streams=1,length=100]",
        "udp-sizes[streams=1,length=1400]",
        "udp-sizes[streams=2,length=100]",
        "udp-sizes[streams=2,length=1400]",
        "udp-sizes[streams=4,length=100]",
        "udp-sizes[streams=4,length=1400]",
        "plain",
    ]
    assert [(t.streams, t.length) for t in tests[:3]] == [(1, 100), (1, 1400), (2, 100)]
    first = tests[0]
    assert first.base_name == "udp-sizes" and dict(first.swept) == {"streams": 1, "length": 100}
    assert {"streams", "length", "protocol", "bitrate", "duration"} <= first.explicit
    assert all(t.index == 0 for t in tests[:6]) and tests[6].index == 1
    assert tests[6].base_name == "plain" and dict(tests[6].swept) == {}
    assert all(t.protocol == "udp" and t.bitrate == "1G" for t in tests[:6])


def test_sweep_of_booleans_and_unsafe_strings_gives_safe_names(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "tests:\n  - {name: d, mode: docker, server: alpha, client: bravo,\n"
        "     sweep: {reverse: [false, true], image: ['a/b:1']}}\n",
    )
    assert [t.name for t in load(path).tests] == [
        "d[reverse=false,image=a_b_1]",
        "d[reverse=true,image=a_b_1]",
    ]


def test_override_removes_the_swept_key(tmp_path: Path) -> None:
    path = write(tmp_path, HEAD + ", sweep: {streams: [1, 2], omit: [0, 1]}}\n")
    tests = load(path, overrides={"streams": 8}).tests
    assert [(t.name, t.streams, t.omit) for t in tests] == [
        ("bm[omit=0]", 8, 0),
        ("bm[omit=1]", 8, 1),
    ]


def test_sweep_values_are_validated_like_the_key(tmp_path: Path) -> None:
    w = f"{tmp_path / 'x.yaml'}: tests[0] 'bm'"
    found = one_test(
        tmp_path,
        ", protocol: udp, sweep: {streams: [1, 0, yes], length: ['1K;id', 100, 100],"
        " stream: [1], bitrate: 1G, omit: [], protocol: [tcp]}",
    )
    assert found == [
        f"{w}: sweep: streams[1] must be an integer from 1 to 128, got 0",
        f"{w}: sweep: streams[2] must be an integer from 1 to 128, got true"
        " (YAML reads yes/no/on/off as true/false)",
        f"{w}: sweep: length[0] must be an iperf3 size such as 100, 128K or 1G > 0, at most 1M,"
        " got '1K;id'",
        f"{w}: sweep: length lists 100 twice",
        f"{w}: sweep: unknown key 'stream'; did you mean 'streams'?",
        f"{w}: sweep: bitrate must be a non-empty list, got '1G'",
        f"{w}: sweep: omit must be a non-empty list, got a list",
        f"{w}: 'protocol' is set both in the test and in its sweep",
    ]


def test_sweep_with_too_many_combinations(tmp_path: Path) -> None:
    values = ", ".join(str(n) for n in range(1, 41))
    found = one_test(tmp_path, f", sweep: {{streams: [{values}], repeat: [{values}]}}")
    assert found == [
        f"{tmp_path / 'x.yaml'}: tests[0] 'bm': sweep expands into more than 1000 tests"
    ]


# -- option_for -----------------------------------------------------------------------------
def _docker_spec(
    tmp_path: Path, extra: str = "", overrides: dict[str, Any] | None = None
) -> TestSpec:
    text = f"tests:\n  - {{name: d, mode: docker, server: alpha, client: bravo{extra}}}\n"
    return load(write(tmp_path, text), overrides=overrides).tests[0]


def test_option_for_prefers_explicit_then_inventory_then_default(tmp_path: Path) -> None:
    host = Host("alpha", {"netrun_image": "lab/iperf3:1", "netrun_port": 6000})
    bare = Host("bravo", {})
    spec = _docker_spec(tmp_path)
    assert option_for(spec, host, "image", (IMAGE,)) == "lab/iperf3:1"
    assert option_for(spec, host, "port", (IMAGE,)) == 6000
    assert option_for(spec, bare, "image", (IMAGE,)) == "networkstatic/iperf3"
    assert option_for(spec, bare, "port", (IMAGE,)) is None
    explicit = _docker_spec(tmp_path, ", image: mine/iperf3, port: 7000")
    assert option_for(explicit, host, "image", (IMAGE,)) == "mine/iperf3"
    assert option_for(explicit, host, "port", (IMAGE,)) == 7000
    assert option_for(_docker_spec(tmp_path, overrides={"port": 7001}), host, "port", ()) == 7001


def test_option_for_takes_a_mode_s_own_inventory_variable_first(tmp_path: Path) -> None:
    """netrun_docker_network is docker mode's own: it wins over netrun_network there, and
    a flannel test on the same host keeps netrun_network (docker0 on the lease)."""
    host = Host("alpha", {"netrun_network": "bridge", "netrun_docker_network": "routed",
                          "netrun_flannel_port": 6001})  # fmt: skip
    network = Option("network", str, "bridge", "docker network", from_inventory=True)
    assert option_for(_docker_spec(tmp_path), host, "network", (network,)) == "routed"
    assert option_for(_docker_spec(tmp_path), host, "port", (IMAGE,)) is None
    flannel = dataclasses.replace(_docker_spec(tmp_path), mode="flannel")
    assert option_for(flannel, host, "network", (network,)) == "bridge"
    assert option_for(flannel, host, "port", (IMAGE,)) == 6001
    explicit = _docker_spec(tmp_path, ", image: mine/iperf3")
    scoped = Host("alpha", {"netrun_docker_image": "lab/iperf3:2", "netrun_image": "x/y"})
    assert option_for(explicit, scoped, "image", (IMAGE,)) == "mine/iperf3"  # the test wins
    assert option_for(_docker_spec(tmp_path), scoped, "image", (IMAGE,)) == "lab/iperf3:2"
    turn_port = Option("turn_port", int, 3478, "the relay's port", from_inventory=True)
    turn = dataclasses.replace(flannel, mode="turn")
    relay = Host("delta", {"netrun_turn_port": 3479, "netrun_port": 5002})
    assert option_for(turn, relay, "port", (IMAGE, turn_port)) == 5002  # not turn_port's
    with pytest.raises(ScenarioError, match="netrun_docker_network must be"):
        option_for(_docker_spec(tmp_path), Host("alpha", {"netrun_docker_network": 5}),
                   "network", (network,))  # fmt: skip


def test_option_for_ignores_inventory_for_other_options(tmp_path: Path) -> None:
    host = Host("alpha", {"netrun_streams": 9})
    assert option_for(_docker_spec(tmp_path), host, "streams", (IMAGE,)) == 1


def test_option_for_rejects_bad_inventory_values(tmp_path: Path) -> None:
    spec = _docker_spec(tmp_path)
    with pytest.raises(ScenarioError) as info:
        option_for(spec, Host("alpha", {"netrun_port": "80; id"}), "port", (IMAGE,))
    assert str(info.value) == (
        "inventory host 'alpha': netrun_port must be an integer from 1 to 65535, got '80; id'"
    )
    with pytest.raises(ScenarioError, match="inventory host 'alpha': netrun_image must be a str"):
        option_for(spec, Host("alpha", {"netrun_image": 5}), "image", (IMAGE,))


def test_option_for_unknown_name(tmp_path: Path) -> None:
    with pytest.raises(KeyError, match="did you mean 'image'"):
        option_for(_docker_spec(tmp_path), Host("alpha"), "imag", (IMAGE,))


def test_fractional_duration_is_refused(tmp_path: Path) -> None:
    """iperf3 reads -t as whole seconds: 2.5 would silently run for 2."""
    with pytest.raises(ScenarioError) as err:
        load(write(tmp_path, HEAD + ", duration: 2.5}\n"))
    assert "duration must be a whole number of seconds from 1 to 86400, got 2.5" in str(err.value)


@pytest.mark.parametrize("key", ["bitrate", "length", "window", "timeout", "connect_timeout"])
@pytest.mark.parametrize("sign", ["", "-"])
def test_huge_integers_are_bad_values_not_overflows(tmp_path: Path, key: str, sign: str) -> None:
    """Found by the scenario fuzzer: a 400-digit negative bitrate overflowed float()."""
    path = write(tmp_path, f"{HEAD}, {key}: {sign}{'1' * 400}}}\n")
    with pytest.raises(ScenarioError, match=f"{key} must be"):
        load(path)


def test_unknown_mode_still_reports_the_tests_other_errors(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "name: um\ntests:\n  - name: a\n    mode: baremetl\n    server: alpha\n"
        "    client: bravo\n    duration: -3\n    protocl: tcp\n    streams: lots\n",
    )
    found = problems(path)
    assert any("unknown mode 'baremetl'; did you mean 'baremetal'?" in p for p in found), found
    assert any("duration must be" in p and "got -3" in p for p in found), found
    assert any("unknown key 'protocl'" in p for p in found), found
    assert any("streams must be" in p and "'lots'" in p for p in found), found


def test_forks_is_a_number_of_hosts(tmp_path: Path) -> None:
    """forks: how many hosts are connected and probed at once (Ansible's -f); unset, the
    CLI's -f or Ansible's default applies."""
    assert load(write(tmp_path, HEAD + "}\n")).forks is None
    assert load(write(tmp_path, "forks: 32\n" + HEAD + "}\n")).forks == 32
    for bad in ("0", "true", "'8'", "1000"):
        found = problems(write(tmp_path, f"forks: {bad}\n" + HEAD + "}\n"))
        assert len(found) == 1 and "forks must be a number of hosts, 1..256" in found[0], found


def test_omit_takes_iperf3_s_own_limit_of_600(tmp_path: Path) -> None:
    spec = load(write(tmp_path, HEAD + ", duration: 10, omit: 600}\n")).tests[0]
    assert spec.omit == 600
