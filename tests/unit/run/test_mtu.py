"""The MTU plan (grouping, when to restore), the MTU cell and frame size, the path check's
one line, and the mtu: keys' validation. The changes themselves run on the lab
(tests/integration/test_mtu_lab.py)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from netrun.core import mtuplan
from netrun.core.linerate import goodput_ceiling_mbps
from netrun.core.mtuplan import MtuWant, cell, frame_mtu, next_wants, order
from netrun.core.spec import TestSpec
from netrun.errors import ScenarioError
from netrun.run import mtu
from netrun.run.plan import TestPlan, plan_test
from netrun.scenario.loader import load_scenario
from tests.conftest import RESULTS_FIXTURES

HOSTS = ["alpha", "bravo", "charlie"]


def scenario(tmp_path: Path, body: str) -> list:
    path = tmp_path / "s.yaml"
    path.write_text("name: s\ndefaults: {server: alpha, client: bravo, duration: 1}\n" + body)
    return list(load_scenario(path, hosts=HOSTS).tests)


SWEEPS = """tests:
  - {name: fl, mode: flannel, sweep: {mtu: [1500, 6000, 9000]}}
  - {name: bm, mode: baremetal, sweep: {mtu: [1500, 6000, 9000]}}
  - {name: plain, mode: baremetal}
  - {name: other, mode: baremetal, server: charlie, mtu: 9000}
"""


def ordered(tests: Sequence[TestSpec]) -> list[TestPlan]:
    """The tests' plans in the order a sequential run runs them (netrun.run.runner)."""
    plans = [plan_test(t) for t in tests]
    return order(plans, [p.mtu for p in plans])


def test_a_sweep_is_grouped_by_host_mtu_then_overlay(tmp_path: Path) -> None:
    tests = [p.spec for p in ordered(scenario(tmp_path, SWEEPS))]
    assert [t.name for t in tests] == [
        "fl[mtu=1500]",
        "bm[mtu=1500]",
        "fl[mtu=6000]",
        "bm[mtu=6000]",
        "fl[mtu=9000]",
        "bm[mtu=9000]",
        "other",
        "plain",
    ]


def test_a_host_is_restored_only_when_its_next_test_wants_other_mtus(tmp_path: Path) -> None:
    plans = ordered(scenario(tmp_path, SWEEPS))
    tests = [p.spec for p in plans]
    after = next_wants(tests, [p.mtu for p in plans])
    by = {t.name: a for t, a in zip(tests, after, strict=True)}
    # flannel at 1500/1450, then bare metal at 1500: the NIC stays, the overlay goes back
    assert by["fl[mtu=1500]"] == {"alpha": (1500, None), "bravo": (1500, None)}
    assert by["bm[mtu=1500]"] == {"alpha": (6000, 5950), "bravo": (6000, 5950)}
    # bm at 9000, then "other" (bravo at 9000 too; alpha's next is "plain": its own MTU)
    assert by["bm[mtu=9000]"] == {"alpha": None, "bravo": (9000, None)}
    assert by["plain"] == {"alpha": None, "bravo": None}


def test_what_each_mode_sets(tmp_path: Path) -> None:
    tests = scenario(
        tmp_path,
        """tests:
  - {name: fl, mode: flannel, mtu: 9000}
  - {name: ref, mode: flannel, mtu: 6000, overlay_mtu: 5950}
  - {name: dk, mode: docker, mtu: 9000}
  - {name: bm, mode: baremetal, mtu: 9000, overlay_mtu: 8000}
  - {name: none, mode: baremetal}
""",
    )
    wants = [plan_test(t).mtu for t in tests]
    assert wants == [
        MtuWant(9000, 8950, 8950),
        MtuWant(6000, 5950, 5950),
        MtuWant(9000, None, 9000),  # no overlay device: the containers take the NIC's MTU
        MtuWant(9000, None, None),
        None,
    ]
    assert [w.text() for w in wants if w] == ["9000/8950", "6000/5950", "9000", "9000"]


def test_bad_mtu_keys_are_scenario_errors(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as err:
        scenario(
            tmp_path,
            """tests:
  - {name: a, mode: baremetal, mtu: 70000}
  - {name: b, mode: baremetal, mtu: '9000'}
  - {name: c, mode: baremetal, allow_management_mtu: 1}
""",
        )
    text = str(err.value)
    assert "mtu must be an integer from 576 to 65535, got 70000" in text
    assert "got '9000'" in text
    assert "allow_management_mtu must be true or false" in text


def test_the_cell_and_the_frame_the_ceiling_uses() -> None:
    assert cell(None) == ""
    assert cell({"underlay": 9000, "overlay": None}) == "9000"
    details = {"underlay": 9000, "overlay": 8950, "container": {"server": 8950, "client": 8950}}
    assert cell(details) == "9000/8950"
    assert frame_mtu(details) == 9000
    # an overlay far below the NIC: each inner packet is a 1500-byte frame, not a 9000 one
    small = {"underlay": 9000, "overlay": 1450}
    assert frame_mtu(small) == 1500
    at_1500 = goodput_ceiling_mbps(1000, 1500, "tcp", 1450)
    assert goodput_ceiling_mbps(1000, frame_mtu(small), "tcp", 1450) == at_1500
    jumbo = goodput_ceiling_mbps(1000, 9000, "tcp")
    assert jumbo is not None and at_1500 is not None and jumbo > at_1500


def test_the_path_failure_is_one_line_naming_both_ends() -> None:
    # ping -M do's own words when the local NIC is smaller, and silence when a switch drops
    local = "ping: local error: message too long, mtu=1500\n"
    assert mtu.path_failure("bravo", "alpha", 9000, local) == (
        "bravo -> alpha does not carry 9000-byte packets (a switch port or the peer is at a "
        "lower MTU; the path reports MTU 1500)"
    )
    silent = "3 packets transmitted, 0 received, 100% packet loss, time 405ms\n"
    assert mtu.path_failure("bravo", "alpha", 9000, silent).endswith("at a lower MTU)")


def test_commands_quote_every_token() -> None:
    assert mtu.ping_script("10.0.0.2", "10.0.0.1", 8972) == (
        "ping -n -M do -s 8972 -c 3 -i 0.2 -W 2 -I 10.0.0.2 10.0.0.1"
    )
    assert mtu.ping_script(None, "10.244.1.2", 8922, 4242).startswith("nsenter -t 4242 -n ping")
    assert mtu.set_script("eth0; reboot", 9000).startswith("ip link set dev 'eth0; reboot' mtu")
    state = mtu.parse_state("uid=0\nmgmt=mgmt0\nmgmt=\nmtu=1500\noverlay=1450\n")
    assert state == {"uid": ["0"], "mgmt": ["mgmt0"], "mtu": ["1500"], "overlay": ["1450"]}
    assert "ip -o route get" in mtu.state_script("data0", "flannel.1", "10.201.0.10")


def test_the_vxlan_overhead_is_flannels() -> None:
    assert mtuplan.VXLAN_OVERHEAD == 50


def test_an_unshaped_lab_claims_no_line_rate(tmp_path: Path) -> None:
    import yaml

    from netrun.lab.inventory import render
    from netrun.lab.plan import LabConfig, plan

    cfg = LabConfig(rate="none", prefix="nrx", state_dir=tmp_path, inventory=tmp_path / "i.yaml")
    assert cfg.problems() == []
    data = yaml.safe_load(render(plan(cfg)))
    assert "netrun_link_speed_mbps" not in data["all"]["vars"]
    shaped = LabConfig(prefix="nrx", state_dir=tmp_path, inventory=tmp_path / "i.yaml")
    assert yaml.safe_load(render(plan(shaped)))["all"]["vars"]["netrun_link_speed_mbps"] == 1000
    assert "bad lab rate 'fast'" in LabConfig(rate="fast").problems()[0]


MTU_RUN = RESULTS_FIXTURES / "mtu-lab"


def test_the_lab_run_renders_the_mtu_column_and_plot(tmp_path: Path) -> None:
    """scenarios/mtu.yaml as it ran on the unshaped lab (2026-11-30)."""
    import json

    from netrun.report.plots.mtu import plot_mtu, series
    from netrun.report.render import render

    doc = json.loads((MTU_RUN / "results.json").read_text())
    lines = render(doc, "table").splitlines()
    assert "MTU" in lines[1].split()
    row = next(line for line in lines if line.startswith("flannel[mtu=9000]"))
    assert "9000/8950" in row.split()
    got = series(doc)
    assert sorted(got) == ["bare-metal (baremetal)", "flannel (flannel)"]
    assert [(m, cell) for m, _, cell in got["flannel (flannel)"]] == [
        (1500, "1500/1450"),
        (6000, "6000/5950"),
        (9000, "9000/8950"),
    ]
    (png,) = plot_mtu(doc, tmp_path)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    one = {**doc, "tests": [t for t in doc["tests"] if "mtu=1500" in t["name"]]}
    assert plot_mtu(one, tmp_path / "none") == []  # one MTU: nothing to plot against


class _Session:
    """A host's shell as the state probe sees it: which user, which NICs (the output of
    netrun.run.mtu.state_script on a lab host), and every command that was sent."""

    def __init__(self, output: str) -> None:
        self.output = output
        self.sent: list[str] = []

    def run(self, argv: object, *, timeout: float, sudo: bool = False, check: bool = True):
        from netrun.hosts.command import CommandResult

        self.sent.append(str(argv))
        return CommandResult("h", str(argv), 0, self.output, "", 0.0)


@pytest.mark.parametrize(
    ("output", "become", "expected"),
    [
        ("uid=1000\nmgmt=eth0\nmtu=1500\n", False, "needs root; connect as root or set"),
        ("uid=0\nmgmt=data0\nmtu=1500\n", False, "data0 carries netrun's SSH session"),
    ],
)
def test_no_change_without_root_or_on_the_management_nic(
    tmp_path: Path, output: str, become: bool, expected: str
) -> None:
    from netrun.hosts.host import Host
    from netrun.modes.baremetal.mode import BareMetal
    from netrun.modes.base import Known, RunContext
    from netrun.tools.facts import HostFacts, NicInfo

    (test,) = scenario(tmp_path, "tests:\n  - {name: t, mode: baremetal, mtu: 9000}\n")
    session = _Session(output)
    host = Host("alpha", {"ansible_become": become}, transport=session)  # type: ignore[arg-type]
    ctx = RunContext(
        "0123abcd", known=Known(facts={"alpha": HostFacts(None, None, False, NicInfo("data0"))})
    )
    settings = mtu.MtuSettings(ctx, [plan_test(test)], grouped=True)
    with pytest.raises(mtu.MtuError, match=expected):
        settings.enter(plan_test(test), {"server": host}, BareMetal(test, host, host, ctx))
    assert not any("ip link set" in cmd for cmd in session.sent)  # nothing was changed
