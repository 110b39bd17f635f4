"""``-e KEY=VALUE`` no test takes, ``-e TEST.KEY=VALUE`` and iperf3's UDP limits (issue 25)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from netrun.core.options import parse_overrides
from netrun.core.spec import Scenario
from netrun.errors import ScenarioError
from netrun.scenario.loader import load_scenario

HOSTS = ("alpha", "bravo")
PING = "  - {name: p1, tool: ping, mode: baremetal, server: alpha, client: bravo}\n"
UDP = (
    "  - {name: u1, mode: baremetal, server: alpha, client: bravo, protocol: udp,"
    " sweep: {length: [1400, 9000]}}\n"
)
LIMIT = (
    "length must be 16..65507 bytes with protocol: udp (iperf3's UDP datagram limits; 65507"
    " is 65535 less the IP and UDP headers), got "
)


def scenario(tmp_path: Path, tests: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text("name: s\ntests:\n" + tests)
    return path


def load(path: Path, *extra: str) -> Scenario:
    return load_scenario(path, hosts=HOSTS, overrides=parse_overrides(list(extra)))


def problems(path: Path, *extra: str) -> list[str]:
    with pytest.raises(ScenarioError) as info:
        load(path, *extra)
    return info.value.problems


def own(s: Scenario) -> dict[str, dict[str, Any]]:
    return {t.name: {k: t.options[k] for k in sorted(t.explicit)} for t in s.tests}


def test_a_key_no_test_takes_is_an_error_naming_the_tests(tmp_path: Path) -> None:
    path = scenario(tmp_path, PING)
    assert problems(path, "streams=2") == [
        "-e streams=2: no test of this scenario takes 'streams' (its tests: p1 (tool ping, mode"
        " baremetal)); 'streams' is an option of tool iperf3: drop -e streams, or give a test a"
        " tool or mode that has it"
    ]
    [found] = problems(path, "image=x")
    assert "'image' is an option of mode docker, flannel, freeflow" in found


def test_a_key_some_test_takes_applies_to_those_only(tmp_path: Path) -> None:
    got = own(load(scenario(tmp_path, PING + UDP), "streams=2", "count=3"))
    assert got["p1"] == {"count": 3}
    assert got["u1[length=1400]"] == {"length": 1400, "protocol": "udp", "streams": 2}


def test_test_key_overrides_one_entry_or_one_expanded_test(tmp_path: Path) -> None:
    path = scenario(tmp_path, PING + UDP)
    got = own(load(path, "streams=2", "u1.streams=3", "u1[length=9000].streams=4", "p1.count=5"))
    assert got["u1[length=1400]"]["streams"] == 3  # -e TEST.KEY wins over -e KEY
    assert got["u1[length=9000]"]["streams"] == 4  # the expanded test's own wins over both
    assert got["p1"] == {"count": 5}


def test_test_key_problems_name_the_test(tmp_path: Path) -> None:
    path = scenario(tmp_path, PING + UDP)
    assert problems(path, "p1.streams=2") == [
        "-e p1.streams=2: test 'p1' (tool ping, mode baremetal) takes no key 'streams';"
        " 'streams' is an option of tool iperf3"
    ]
    assert problems(path, "u2.streams=2") == [
        "-e u2.streams=2: no test named 'u2'; the tests (as --list-tests"
        " shows them): p1, u1, u1[length=1400], u1[length=9000]"
    ]
    assert problems(path, "u1[length=1400].length=100") == [
        "-e u1[length=1400].length=100: 'length' is swept in this test (its name says"
        " length=1400): override the entry, -e u1.length=..."
    ]
    assert problems(path, "u1[length=1400].server=bravo") == [
        "-e u1[length=1400].server=bravo: 'server' places the test: set it on the entry,"
        " -e u1.server=..."
    ]
    assert problems(path, "u1.streams=0") == [
        "-e u1.streams=0: streams must be an integer from 1 to 128, got 0"
    ]


def test_udp_length_follows_iperf3s_limits(tmp_path: Path) -> None:
    udp = "  - {name: u, mode: baremetal, server: alpha, client: bravo, protocol: udp"
    assert problems(scenario(tmp_path, udp + ", length: 70000}\n")) == [
        f"{tmp_path / 's.yaml'}: tests[0] 'u': {LIMIT}70000"
    ]
    assert problems(scenario(tmp_path, udp + ", length: 8}\n")) == [
        f"{tmp_path / 's.yaml'}: tests[0] 'u': {LIMIT}8"
    ]
    assert problems(scenario(tmp_path, udp + ", length: 64K}\n")) == [
        f"{tmp_path / 's.yaml'}: tests[0] 'u': {LIMIT}'64K'"
    ]
    assert load(scenario(tmp_path, udp + ", length: 65507}\n")).tests[0].length == 65507
    tcp = "  - {name: t, mode: baremetal, server: alpha, client: bravo, length: 70000}\n"
    assert load(scenario(tmp_path, tcp)).tests[0].length == 70000  # TCP's -l goes to 1M


def test_udp_length_is_checked_per_sweep_combination(tmp_path: Path) -> None:
    path = scenario(
        tmp_path,
        "  - {name: s, mode: baremetal, server: alpha, client: bravo, length: 9000,"
        " sweep: {protocol: [tcp, udp], streams: [1, 2]}}\n",
    )
    assert problems(path, "length=70000") == [
        f"{path}: tests[0] 's[protocol=udp,streams=1]': {LIMIT}70000",
        f"{path}: tests[0] 's[protocol=udp,streams=2]': {LIMIT}70000",
    ]
    assert problems(path, "s[protocol=udp,streams=2].length=65508") == [
        f"-e s[protocol=udp,streams=2]: length: {LIMIT}65508"
    ]


@pytest.mark.parametrize(
    ("pair", "key", "value"),
    [
        ("tcp.streams=4", "tcp.streams", 4),
        ("v1.tcp.streams=4", "v1.tcp.streams", 4),  # a test name may hold dots
        ("u1[length=1400].streams=4", "u1[length=1400].streams", 4),
        ("m[a.lab->b.lab].bitrate=1G", "m[a.lab->b.lab].bitrate", "1G"),
        ("image=reg.io/x.y=z", "image", "reg.io/x.y=z"),  # a dot after '=' is the value's
    ],
)
def test_parse_overrides_reads_test_keys(pair: str, key: str, value: Any) -> None:
    assert parse_overrides([pair]) == {key: value}


def test_a_layer_value_only_another_tool_takes_is_refused_for_this_one(tmp_path: Path) -> None:
    """-e bitrate=1000pps is iperf2's; an iperf3 test would fail with iperf3's usage text."""
    path = scenario(
        tmp_path,
        "  - {name: i2, tool: iperf2, mode: baremetal, server: alpha, client: bravo}\n"
        "  - {name: i3, mode: baremetal, server: alpha, client: bravo}\n",
    )
    assert problems(path, "bitrate=1000pps") == [
        f"{path}: tests[1] 'i3': bitrate must be an iperf3 size such as 100, 128K or 1G, at most"
        " 1000T, got '1000pps' (set by -e bitrate, for tool iperf3 here)"
    ]
    assert own(load(path, "i2.bitrate=1000pps"))["i2"] == {"bitrate": "1000pps"}
