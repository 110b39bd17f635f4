"""What --check-only and --list-tests show of a test before it runs (issue 25)."""

from __future__ import annotations

from pathlib import Path

import pytest

from netrun.core.options import parse_overrides
from netrun.inventory.loader import load_inventory
from netrun.inventory.model import Inventory
from netrun.run import preview
from netrun.scenario.loader import load_scenario

INVENTORY = """\
all:
  hosts:
    alpha: {ansible_host: 192.0.2.1, netrun_data_ip: 10.9.0.1}
    bravo: {ansible_host: 192.0.2.2, netrun_data_ip: 10.9.0.2, netrun_iperf3: /opt/iperf3}
    charlie: {ansible_host: 192.0.2.3, netrun_data_ip: 10.9.0.3}
    delta: {ansible_host: 192.0.2.4}
"""


def setup(tmp_path: Path, tests: str, *extra: str) -> tuple[list[preview.Preview], Inventory]:
    inv = tmp_path / "inv.yaml"
    inv.write_text(INVENTORY)
    inventory = load_inventory(inv)
    path = tmp_path / "s.yaml"
    path.write_text("name: s\ntests:\n" + tests)
    s = load_scenario(path, hosts=list(inventory.hosts), overrides=parse_overrides(list(extra)))
    return preview.previews(s.tests, inventory), inventory


def test_bare_metal_iperf3_shows_data_addresses_options_commands_and_time(
    tmp_path: Path,
) -> None:
    [p], _ = setup(
        tmp_path,
        "  - {name: u, mode: baremetal, server: alpha, client: bravo, protocol: udp,"
        " bitrate: 100M, length: 1400, duration: 5, omit: 1, repeat: 3}\n",
        "streams=2",
    )
    assert p.addresses == {"server": ("alpha", "10.9.0.1"), "client": ("bravo", "10.9.0.2")}
    explicit = {k: v for k, v, mine in p.options if mine}
    assert explicit == {
        "repeat": 3, "duration": 5, "protocol": "udp", "streams": 2, "omit": 1,
        "bitrate": "100M", "length": 1400,
    }  # fmt: skip
    assert ("reverse", False, False) in p.options  # defaults too, marked as such
    assert p.commands == [
        ("server", "iperf3 -s -B 10.9.0.1 -p 5201 -1  (port: the first free of 5201-5220)"),
        (
            "client",
            "/opt/iperf3 -c 10.9.0.1 -p 5201 -J -t 5 --connect-timeout 5000 -u -P 2 -O 1"
            " -b 100M -l 1400",
        ),
    ]
    assert p.seconds == 3 * (5 + 1 + preview.SAMPLE_OVERHEAD_S)
    lines = p.lines()
    assert lines[0] == "    data addresses: server alpha 10.9.0.1, client bravo 10.9.0.2"
    assert lines[-1] == "    expected: 0:20 (3 x 0:07 a sample)"


def test_ping_and_iperf2_commands(tmp_path: Path) -> None:
    (ping, iperf2), _ = setup(
        tmp_path,
        "  - {name: p, tool: ping, mode: baremetal, server: alpha, client: bravo, count: 4}\n"
        "  - {name: i, tool: iperf2, mode: baremetal, server: alpha, client: bravo}\n",
    )
    assert ping.commands == [
        ("server", "(none: its kernel answers)"),
        ("client", "ping -n -c 4 -i 1 -s 56 -W 2 10.9.0.1"),
    ]
    assert ping.seconds == 4 * 1 + preview.SAMPLE_OVERHEAD_S
    assert iperf2.commands == [
        ("server", "iperf -s -u -e -i 1 -p 5001 -B 10.9.0.1"),
        ("client", "iperf -c 10.9.0.1 -u -l 100 -b 1000pps -t 10 -e --trip-times -p 5001"),
    ]


def test_container_modes_show_docker_run_and_exec(tmp_path: Path) -> None:
    [p], _ = setup(
        tmp_path,
        "  - {name: d, mode: docker, server: alpha, client: bravo, duration: 3}\n",
        "d.image=reg.example/iperf3:1",
    )
    roles = [role for role, _ in p.commands]
    assert roles == ["server", "client", "client, each repeat"]
    assert p.commands[0][1].startswith("docker run -d --name netrun-RUNID-t0-server ")
    assert " reg.example/iperf3:1 -s -p 5201 --forceflush" in p.commands[0][1]
    assert p.commands[2][1] == (
        "docker exec netrun-RUNID-t0-client iperf3 -c '<server container IP>' -p 5201 -J -t 3"
        " --connect-timeout 5000"
    )
    assert p.seconds == 3 + preview.SAMPLE_OVERHEAD_S + preview.CONTAINER_START_S


@pytest.mark.parametrize(("width", "rounds"), [(1, 3), (2, 2)])
def test_the_total_follows_the_schedule(tmp_path: Path, width: int, rounds: int) -> None:
    """t0 and t1 share no host, t2 shares one with each: in parallel, two rounds."""
    tests = "".join(
        f"  - {{name: t{i}, mode: baremetal, server: {s}, client: {c}, duration: 10}}\n"
        for i, (s, c) in enumerate([("alpha", "bravo"), ("charlie", "delta"), ("charlie", "alpha")])
    )
    previews, _ = setup(tmp_path, tests)
    plans = [p.plan for p in previews]
    each = 10 + preview.SAMPLE_OVERHEAD_S
    assert preview.run_seconds(plans, width) == preview.RUN_START_S + rounds * each
    line = preview.total_line(plans, width)
    how = "one after another" if width == 1 else f"in {rounds} rounds"
    assert line.startswith(
        f"expected total: {preview.clock(preview.RUN_START_S + rounds * each)} for 3 tests {how}"
    )


def test_netperf_shows_netserver_and_each_netperf(tmp_path: Path) -> None:
    """A tool the preview never named: the mode asks its tool for the commands."""
    [p], _ = setup(
        tmp_path,
        "  - {name: rr, tool: netperf, mode: baremetal, server: alpha, client: bravo, test: TCP_RR,"
        " instances: 2, duration: 3}\n",
    )
    [(srole, server), (crole, client)] = p.commands
    assert (srole, crole) == ("server", "client")
    assert server == "netserver -D -L 10.9.0.1 -p 12865"
    assert client.startswith("netperf -H 10.9.0.1 -p 12865 -t TCP_RR -l 3")
    assert client.endswith("(x 2 at once)")
    assert p.seconds == 3 + preview.SAMPLE_OVERHEAD_S


def test_a_load_test_shows_the_loads_own_iperf3_on_the_hosts(tmp_path: Path) -> None:
    [p], _ = setup(
        tmp_path,
        "  - {name: rrul, tool: ping, mode: baremetal, server: alpha, client: bravo, count: 8,"
        " interval: 0.2, load: {streams: 2, direction: both}}\n",
    )
    assert p.commands[-2:] == [
        ("load server", "iperf3 -s -B 10.9.0.1 -p 5201 -1  (port: the first free of 5201-5220)"),
        (
            "load client",
            "/opt/iperf3 -c 10.9.0.1 -p 5201 -J -t 5 --connect-timeout 3000 -P 2 --bidir",
        ),
    ]  # -t: the 2 s ramp, the 1.6 s loaded window and a second, rounded up
    assert "    load client: /opt/iperf3 -c 10.9.0.1" in "\n".join(p.lines())
    # a sample: the idle probes, then the load's run (its -t above): the loaded form's own
    assert p.seconds == 8 * 0.2 + preview.SAMPLE_OVERHEAD_S + 5
    # the load as written, not "a mapping" as one-line errors shorten it
    assert "    options set: count=8 interval=0.2 load={streams: 2, direction: both}" in p.lines()


def test_a_container_load_test_shows_its_docker_execs(tmp_path: Path) -> None:
    [p], _ = setup(
        tmp_path,
        "  - {name: rr, tool: netperf, test: TCP_RR, mode: docker, server: alpha, client: bravo,"
        " duration: 3, load: true}\n",
    )
    assert p.commands[-2:] == [
        ("load server", "docker exec netrun-RUNID-t0-server iperf3 -s -1 -p 5301"),
        (
            "load client",
            "docker exec netrun-RUNID-t0-client iperf3 -c '<server container IP>' -p 5301 -J"
            " -t 6 --connect-timeout 3000 -P 4",
        ),
    ]


def test_refusals_known_only_at_the_start_are_one_line_each(tmp_path: Path) -> None:
    udp, omit, plain = setup(
        tmp_path,
        "  - {name: ffu, mode: freeflow, server: alpha, client: bravo, protocol: udp}\n"
        "  - {name: long, mode: baremetal, server: alpha, client: bravo, omit: 70}\n"
        "  - {name: plain, mode: baremetal, server: alpha, client: bravo}\n",
    )[0]
    [why] = udp.refusals
    assert why.startswith(
        "refused when it starts: test ffu: iperf3 protocol udp cannot run in mode freeflow: "
    )
    assert omit.refusals == [
        "needs iperf3 3.18+ on bravo, alpha for -O over 60 s: a host with an older one refuses"
        " the test when it starts"
    ]
    assert f"    {omit.refusals[0]}" in omit.lines()
    assert plain.refusals == []


def test_a_turn_test_shows_iperf2_from_the_tool_dialling_the_tunnel(tmp_path: Path) -> None:
    """The relay mode's preview is the tool's, the client dialling what the mode gives
    (Placement.dialled: its tunnel on the client host, its port known when it opens)."""
    [p], _ = setup(
        tmp_path,
        "  - {name: t, tool: iperf2, mode: turn, server: alpha, client: bravo, relay: charlie}\n",
    )
    assert p.commands == [
        ("server", "iperf -s -u -e -i 1 -p 5001 -B 10.9.0.1"),
        (
            "client",
            "iperf -c 127.0.0.1 -u -l 100 -b 1000pps -t 10 -e --trip-times  (-p: the port of"
            " netrun's TURN tunnel on bravo, through relay charlie 10.9.0.3:3478 over udp)",
        ),
    ]
