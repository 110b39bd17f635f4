"""--check-only's line for each test: who it runs between, with each host's SSH address; a
fan test's line says what --list-tests does, its flows at once, not its first flow alone."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from netrun.cli import main as cli
from netrun.cli import preflight
from netrun.inventory.loader import load_inventory
from netrun.job import EXIT_INPUT
from netrun.modes.freeflow.sockets import STREAM_ONLY
from netrun.scenario.loader import load_scenario

INVENTORY = """\
all:
  hosts:
    alpha: {ansible_host: 192.0.2.1, netrun_data_ip: 10.9.0.1}
    bravo: {ansible_host: 192.0.2.2, netrun_data_ip: 10.9.0.2}
    charlie: {ansible_host: 192.0.2.3, netrun_data_ip: 10.9.0.3}
    delta: {ansible_host: 192.0.2.4, netrun_data_ip: 10.9.0.4}
"""


def report(tmp_path: Path, tests: str, limit: str | None = None) -> list[str]:
    """check_report's test lines (two-space indent), then its total line."""
    inv = tmp_path / "inv.yaml"
    inv.write_text(INVENTORY)
    inventory = load_inventory(inv)
    path = tmp_path / "s.yaml"
    path.write_text("name: s\ndefaults: {duration: 1}\ntests:\n" + tests)
    scenario = load_scenario(path, hosts=list(inventory.hosts))
    req = SimpleNamespace(scenario=scenario, inventory=inventory, limit=limit, parallel=None)
    lines = preflight.check_report(req)[0].splitlines()
    return [line for line in lines if line.startswith("  ") and not line.startswith("    ")] + [
        lines[-1]
    ]


def test_fan_lines_name_every_flow(tmp_path: Path) -> None:
    lines = report(
        tmp_path,
        "  - {name: in, mode: baremetal, hosts: all, pairs: {fanin: delta}}\n"
        "  - {name: out, mode: baremetal, hosts: all, pairs: {fanout: alpha}, clients: 1}\n"
        "  - {name: p, mode: baremetal, server: alpha, client: bravo}\n",
    )
    assert lines[0] == (
        "  in[3->delta]: baremetal, iperf3, 3 flows at once into server delta (ssh 192.0.2.4)"
        " from clients alpha (ssh 192.0.2.1), bravo (ssh 192.0.2.2), charlie (ssh 192.0.2.3)"
    )
    assert lines[1] == (
        "  out[alpha->1]: baremetal, iperf3, 1 flow from client alpha (ssh 192.0.2.1)"
        " to server bravo (ssh 192.0.2.2)"
    )
    assert lines[2] == (  # a test that names its hosts: its roles, as before
        "  p: baremetal, iperf3, server alpha (ssh 192.0.2.1), client bravo (ssh 192.0.2.2)"
    )


def test_a_fan_with_a_flow_outside_l_is_outside(tmp_path: Path) -> None:
    lines = report(
        tmp_path,
        "  - {name: in, mode: baremetal, hosts: all, pairs: {fanin: delta}}\n"
        "  - {name: two, mode: baremetal, hosts: all, pairs: {fanin: delta}, clients: 2}\n",
        limit="alpha,bravo,delta",
    )
    assert lines[0].endswith("charlie (ssh 192.0.2.3)  [outside -l]")  # not its first flow's
    assert lines[1].startswith("  two[2->delta]: ") and "[outside -l]" not in lines[1]
    assert lines[2].startswith("expected total: ") and " for 1 test " in lines[2], lines[2]


def test_a_fans_other_roles_follow_its_flows(tmp_path: Path) -> None:
    (line, _) = report(
        tmp_path,
        "  - {name: f, mode: turn, tool: iperf2, relay: delta, hosts: 'alpha,bravo,charlie',"
        " pairs: {fanout: charlie}}\n",
    )
    assert line == (
        "  f[charlie->2]: turn, iperf2, 2 flows at once from client charlie (ssh 192.0.2.3)"
        " to servers alpha (ssh 192.0.2.1), bravo (ssh 192.0.2.2); relay delta (ssh 192.0.2.4)"
    )


def test_check_only_refuses_what_the_run_would_refuse(tmp_path: Path) -> None:
    """overlay_mtu 9000 on mtu 9000 in a VXLAN mode, and iperf3 UDP in mode freeflow: the
    run refuses both when they start (netrun.run.mtu, FreeFlow's setup), so --check-only
    names each test and rule, by the same code, and the CLI exits 2 on them (issue 35)."""
    inv = tmp_path / "inv.yaml"
    inv.write_text(INVENTORY)
    inventory = load_inventory(inv)
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\ndefaults: {duration: 1}\ntests:\n"
        "  - {name: jumbo, mode: flannel, server: alpha, client: bravo, mtu: 9000,"
        " overlay_mtu: 9000}\n"
        "  - {name: ff-udp, mode: freeflow, server: alpha, client: bravo, protocol: udp}\n"
        "  - {name: fine, mode: baremetal, server: alpha, client: bravo, mtu: 9000}\n"
    )
    scenario = load_scenario(path, hosts=list(inventory.hosts))
    req = SimpleNamespace(scenario=scenario, inventory=inventory, limit=None, parallel=None)
    text, refused = preflight.check_report(req)
    assert text.splitlines()[0].endswith(
        "1 of 3 tests fit -i " + str(inv) + ", 2 will be refused; nothing was contacted"
    )
    assert refused == [
        "test jumbo: overlay_mtu 9000 does not fit a VXLAN overlay on MTU 9000: VXLAN adds "
        "50 bytes, so at most 8950",
        "test ff-udp: iperf3 protocol udp cannot run in mode freeflow: "
        + STREAM_ONLY.format(what="iperf3 UDP"),
    ]
    assert "refused when it starts: test jumbo: overlay_mtu 9000" in text


def test_the_cli_exits_2_with_one_error_line_per_refused_test(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inv = tmp_path / "inv.yaml"
    inv.write_text(INVENTORY)
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\ndefaults: {duration: 1}\ntests:\n"
        "  - {name: jumbo, mode: flannel, server: alpha, client: bravo, mtu: 9000,"
        " overlay_mtu: 9000}\n"
        "  - {name: fine, mode: baremetal, server: alpha, client: bravo}\n"
    )
    assert cli.main([str(path), "-i", str(inv), "--check-only"]) == EXIT_INPUT
    out, err = capsys.readouterr()
    assert "1 of 2 tests fit" in out.splitlines()[0]
    assert err.splitlines() == [
        "netrun: error: test jumbo: overlay_mtu 9000 does not fit a VXLAN overlay on MTU "
        "9000: VXLAN adds 50 bytes, so at most 8950"
    ]
    path.write_text(path.read_text().replace("overlay_mtu: 9000", "overlay_mtu: 8950"))
    assert cli.main([str(path), "-i", str(inv), "--check-only"]) == 0
