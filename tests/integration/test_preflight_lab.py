"""The pre-flight shows what will run (issue 25), checked against a real run on the lab.

``--check-only`` and ``--list-tests`` print each test's data addresses, resolved options, the
commands each host runs and the expected time; the run that follows must do what they said
(iperf3's own JSON says where it connected and with which options) within the time they said.
Bad ``-e`` and a UDP length iperf3 refuses stop before anything is contacted.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from tests.integration.conftest import LabHandle
from tests.integration.helpers import (
    assert_nothing_left,
    entry,
    error_lines,
    load_results,
    run_netrun,
    write_scenario,
)

pytestmark = pytest.mark.integration


def _clock(text: str) -> float:
    """Seconds of a 0:07 or 1:02:03 the pre-flight printed."""
    seconds = 0.0
    for part in text.split(":"):
        seconds = seconds * 60 + int(part)
    return seconds


def test_check_only_and_list_tests_show_what_the_run_then_does(
    lab: LabHandle, tmp_path: Path
) -> None:
    scen = write_scenario(
        tmp_path,
        [
            entry("udp", protocol="udp", bitrate="50M", length=1200, repeat=2),
            entry("ping", tool="ping", count=3, interval=0.2, server="bravo", client="charlie"),
        ],
    )
    args = [scen, "-i", lab.inventory, "-o", "out", "--no-history", "-e", "udp.streams=2"]
    data = {name: lab.host(name).data_ip for name in ("alpha", "bravo", "charlie")}
    mgmt = {name: lab.host(name).mgmt_ip for name in ("alpha", "bravo", "charlie")}
    assert data["alpha"] != mgmt["alpha"]  # the lab keeps them apart, as a real one does

    checked = run_netrun([*args, "--check-only"], cwd=tmp_path, timeout=60)
    assert checked.returncode == 0, checked.stderr
    out = checked.stdout
    assert f"    data addresses: server alpha {data['alpha']}, client bravo {data['bravo']}" in out
    assert (
        "    options set: repeat=2 duration=1 protocol=udp streams=2 bitrate=50M length=1200" in out
    )
    assert f"    server: iperf3 -s -B {data['alpha']} -p 5201 -1" in out
    client = f"-c {data['alpha']} -p 5201 -J -t 1 --connect-timeout 5000 -u -P 2 -b 50M -l 1200"
    assert client in out
    assert f"    client: ping -n -c 3 -i 0.2 -s 56 -W 2 {data['bravo']}" in out
    assert mgmt["alpha"] not in out.split("data addresses:")[1].split("\n")[0]
    total = re.search(r"^expected total: (\S+) for 2 tests one after another", out, re.M)
    assert total, out

    listed = run_netrun([*args, "--list-tests"], cwd=tmp_path, timeout=60)
    assert listed.returncode == 0, listed.stderr
    assert client in listed.stdout and "2 tests run one after another" in listed.stdout
    assert f"expected total: {total[1]} " in listed.stdout
    assert not (tmp_path / "out").exists()  # neither made a results folder

    started = time.monotonic()
    done = run_netrun(args, cwd=tmp_path, timeout=120)
    wall = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    doc = load_results(tmp_path / "out")
    udp = [t for t in doc["tests"] if t["name"] == "udp"]
    assert len(udp) == 2
    for sample in udp:
        raw = json.loads((tmp_path / "out" / sample["raw"]).read_text())
        start = raw["start"]
        assert start["connecting_to"]["host"] == data["alpha"]  # the data address shown
        test_start = start["test_start"]
        assert (test_start["protocol"], test_start["num_streams"], test_start["blksize"]) == (
            "UDP",
            2,
            1200,
        )
    ping = [t for t in doc["tests"] if t["name"] == "ping"]
    assert ping and ping[0]["details"]["target"] == data["bravo"]
    # The estimate is the run's order of magnitude: neither far under nor far over it.
    expected = _clock(total[1])
    print(f"expected {expected:.0f} s, took {wall:.1f} s")
    assert expected / 3 <= wall <= expected * 3, (expected, wall)
    assert_nothing_left(lab, tmp_path / "out")


def test_bad_extra_and_udp_length_stop_before_any_host(lab: LabHandle, tmp_path: Path) -> None:
    scen = write_scenario(tmp_path, [entry("ping", tool="ping", count=2, interval=0.2)])
    done = run_netrun([scen, "-i", lab.inventory, "-e", "streams=2"], cwd=tmp_path, timeout=60)
    assert done.returncode == 2
    assert error_lines(done.stderr) == [
        "netrun: error: -e streams=2: no test of this scenario takes 'streams' (its tests: ping"
        " (tool ping, mode baremetal)); 'streams' is an option of tool iperf3: drop -e streams,"
        " or give a test a tool or mode that has it"
    ]
    done = run_netrun(
        [scen, "-i", lab.inventory, "-e", "pong.count=3", "--check-only"], cwd=tmp_path, timeout=60
    )
    assert done.returncode == 2
    assert error_lines(done.stderr) == [
        "netrun: error: -e pong.count=3: no test named 'pong'; did you mean 'ping'?; the tests"
        " (as --list-tests shows them): ping"
    ]
    big = write_scenario(tmp_path, [entry("udp", protocol="udp", length=70000)], file="big.yaml")
    done = run_netrun([big, "-i", lab.inventory, "-o", "out"], cwd=tmp_path, timeout=60)
    assert done.returncode == 2
    assert error_lines(done.stderr) == [
        f"netrun: error: {big}: tests[0] 'udp': length must be 16..65507 bytes with protocol:"
        " udp (iperf3's UDP datagram limits; 65507 is 65535 less the IP and UDP headers), got"
        " 70000"
    ]
    assert not (tmp_path / "out").exists()
