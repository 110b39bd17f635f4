"""Sanity flags, directions and per-test ceilings, from real saved runs and iperf3 output.

The samples are the project's captured lab runs (tests/fixtures/results) and iperf3's own
JSON (tests/fixtures/iperf3); where a case never happened in a captured run (a CPU-bound
side, a shared host), one field of a real sample is changed and the test says which.
"""

from __future__ import annotations

import copy
import csv
import dataclasses
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from netrun.core.linerate import ceiling_of, per_test_ceiling
from netrun.core.spec import TestSpec
from netrun.report.exporters import junit_xml
from netrun.report.render import render, render_csv, render_table
from netrun.report.summary import table_rows
from netrun.results import flags
from netrun.run.sample import exit_code
from netrun.tools.iperf3.parse import parse
from tests.conftest import IPERF3_FIXTURES, RESULTS_FIXTURES


def doc(name: str) -> dict[str, Any]:
    return json.loads((RESULTS_FIXTURES / name / "results.json").read_text())


def sample(run: str, test: str) -> dict[str, Any]:
    return copy.deepcopy(next(t for t in doc(run)["tests"] if t["name"] == test))


# -- ceilings ----------------------------------------------------------------------------------
def test_udp_ceiling_follows_the_datagram_size() -> None:
    small = per_test_ceiling(1000, 1500, "udp", length=200)
    big = per_test_ceiling(1000, 1500, "udp", length=1400)
    assert small is not None and big is not None
    assert small.mbps == pytest.approx(1000 * 200 / (200 + 28 + 38))  # about 752, not 957
    assert big.mbps == pytest.approx(1000 * 1400 / (1400 + 28 + 38))
    assert "200 B" in small.basis and "MTU 1500" in small.basis


def test_tcp_ceiling_follows_the_mss_iperf3_reported() -> None:
    result = parse((IPERF3_FIXTURES / "tcp_1stream.stdout").read_text())
    assert result.tcp_mss == 1448
    found = ceiling_of({}, result, 1000, 1500, None, "tcp")
    assert found is not None and found.mbps == pytest.approx(941.48, abs=0.01)
    overlay = per_test_ceiling(1000, 1500, "tcp", 1450, mss=1398)  # Flannel's VXLAN MTU
    assert overlay is not None and overlay.mbps == pytest.approx(908.97, abs=0.01)
    assert "MSS 1398" in overlay.basis and "overlay MTU 1450" in overlay.basis


def test_udp_length_comes_from_iperf3s_blksize() -> None:
    result = parse((IPERF3_FIXTURES / "udp_100m.stdout").read_text())
    assert result.blksize == 1400
    found = ceiling_of({}, result, 1000, 1500, None, "udp")
    assert found is not None and "UDP datagram 1400 B" in found.basis


# -- flags ------------------------------------------------------------------------------------
def test_above_ceiling_and_target_not_reached_from_a_saved_run() -> None:
    assert flags.of_sample(sample("baremetal-4s", "tcp-4-streams")) == ["above-ceiling"]
    udp = sample("baremetal-4s", "udp-500m")  # offered 500M, 395 arrived, 19.4% lost
    assert flags.of_sample(udp) == ["target-not-reached", "loss-above-max"]
    assert flags.offered_bps(udp) == 500e6  # iperf3's -b counts in powers of 1000
    assert flags.of_sample(sample("baremetal-4s", "tcp-reverse")) == []


def test_stand_in_and_not_accelerated_are_flagged() -> None:
    found = flags.of_sample(sample("freeflow-standin", "freeflow"))
    assert "stand-in" in found and "not-accelerated" in found


def test_cpu_bound_same_host_and_unreliable_clock() -> None:
    s = sample("baremetal-4s", "tcp-reverse")
    s["cpu_server_pct"] = 93.0  # the 200-byte UDP sender of issue 15 reached 93%
    s["details"] = {**s.get("details", {}), "latency_unreliable": "clock offset 40 ms"}
    s["client"] = s["server"]
    s["hosts"] = {"server": s["server"], "client": s["server"]}
    assert flags.of_sample(s) == ["same-host", "cpu-bound", "unreliable-clock"]
    assert flags.direction(s) == f"{s['server']} (loopback)"


def test_failed_sample_has_no_figure_flags() -> None:
    s = sample("baremetal-4s", "tcp-4-streams")
    s["status"] = "failed"
    assert flags.of_sample(s) == []


def test_direction_is_sender_to_receiver() -> None:
    forward, reverse = sample("baremetal-4s", "tcp-forward"), sample("baremetal-4s", "tcp-reverse")
    assert flags.direction(forward) == f"{forward['client']}→{forward['server']}"
    assert reverse["options"]["reverse"] is True
    assert flags.direction(reverse) == f"{reverse['server']}→{reverse['client']}"
    reverse["options"]["bidir"] = True
    assert flags.direction(reverse) == f"{reverse['client']}⇄{reverse['server']}"


# -- the table --------------------------------------------------------------------------------
def test_table_has_direction_pct_of_ceiling_and_flags_with_footnotes() -> None:
    run = doc("baremetal-4s")
    headers, rows = table_rows(run)
    by_name = {r[0]: dict(zip(headers, r, strict=True)) for r in rows}
    assert by_name["tcp-reverse"]["sender→receiver"] == "alpha→bravo"
    assert by_name["tcp-forward"]["sender→receiver"] == "bravo→alpha"
    assert by_name["tcp-4-streams"]["flags"] == "1"  # above-ceiling
    assert float(by_name["tcp-4-streams"]["% ceil"]) > 100
    assert by_name["tcp-reverse"]["flags"] == "-"
    text = render_table(run)
    assert "flag 1 above-ceiling: measured above the goodput ceiling" in text
    assert "flag 3 target-not-reached: below 95% of the offered rate" in text
    assert "stand-in" not in text  # only the flags used get a footnote
    csv_text = render_csv(run)
    assert "target-not-reached" in csv_text and "['" not in csv_text


# -- one host in two roles ------------------------------------------------------------------
def test_same_host_is_refused_unless_allowed(tmp_path: Path) -> None:
    from netrun.errors import ScenarioError
    from netrun.scenario.loader import load_scenario

    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\ntests:\n  - {name: loop, mode: baremetal, server: alpha, client: alpha}\n"
    )
    with pytest.raises(ScenarioError) as err:
        load_scenario(path, hosts=["alpha", "bravo"])
    assert "tests[0] 'loop': server and client are both host 'alpha'" in str(err.value)
    assert "allow_same_host: true" in str(err.value)
    allowed = load_scenario(path, hosts=["alpha"], overrides={"allow_same_host": True})
    assert allowed.tests[0].options["allow_same_host"] is True


# -- both ways at once ------------------------------------------------------------------------
def test_bidir_sums_both_halves_against_twice_the_ceiling() -> None:
    tcp = parse((IPERF3_FIXTURES / "tcp_bidir.stdout").read_text())
    assert tcp.bidir_bps is not None
    forward, back = tcp.bidir_bps
    assert tcp.receiver_bps == pytest.approx(forward + back)
    assert 900e6 < forward < 942e6 and 900e6 < back < 942e6  # each under 941.5 on 1 GbE
    assert tcp.intervals[0].bits_per_second > 1.5e9  # both directions in every second
    ceiling = ceiling_of({"bidir": True}, tcp, 1000, 1500, None, "tcp")
    assert ceiling is not None and ceiling.mbps == pytest.approx(2 * 941.48, abs=0.02)
    assert "both directions" in ceiling.basis
    udp = parse((IPERF3_FIXTURES / "udp_bidir.stdout").read_text())
    assert udp.bidir_bps is not None and udp.packets is not None and udp.lost_packets is not None
    assert udp.lost_percent == pytest.approx(100 * udp.lost_packets / udp.packets)
    sample = {"protocol": "udp", "options": {"bitrate": "100M", "bidir": True}}
    assert flags.offered_bps(sample) == 200e6
    assert flags.direction({"client": "a", "server": "b", "options": {"bidir": True}}) == "a⇄b"


def test_bidir_and_reverse_together_are_refused(tmp_path: Path) -> None:
    from netrun.errors import ScenarioError
    from netrun.scenario.loader import load_scenario

    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\ntests:\n  - {name: both, mode: baremetal, server: a, client: b, "
        "bidir: true, reverse: true}\n"
    )
    with pytest.raises(ScenarioError, match="bidir and reverse cannot both be true"):
        load_scenario(path, hosts=["a", "b"])


# -- flags that make a figure not what the test asked for (issue 25) ----------------------------
def test_a_figure_above_its_ceiling_is_flagged_in_the_status_column() -> None:
    """baremetal-4s's tcp-4-streams measured above its goodput ceiling: status "flagged",
    its footnote says so; target-not-reached (a lossy UDP test) stays a footnote."""
    run = doc("baremetal-4s")
    headers, rows = table_rows(run)
    status = {r[0]: r[headers.index("status")] for r in rows}
    assert status["tcp-4-streams"] == "flagged"
    assert status["udp-500m"] == "flagged"  # 19.4% lost: above max_loss (issue 35)
    assert "(status flagged; --fail-on-flags makes it a failure)" in render_table(run)
    assert flags.flagged_lines({"t": [sample("baremetal-4s", "tcp-4-streams")]}) == [
        f"test t: flagged above-ceiling: {flags.FLAGS['above-ceiling']}"
    ]


def test_one_host_is_flagged_and_a_failed_test_keeps_its_status() -> None:
    same = sample("baremetal-4s", "tcp-forward")
    same["client"] = same["server"]  # allow_same_host: true, loopback on purpose
    assert flags.not_as_asked(flags.of_sample(same)) == ["same-host"]
    assert flags.status_cell("ok", ["same-host"]) == "flagged"
    assert flags.status_cell("1/3 failed", ["same-host"]) == "1/3 failed"
    assert flags.status_cell("ok", ["cpu-bound", "target-not-reached"]) == "ok"
    failed = dict(same, status="failed")
    assert flags.flagged_lines({"t": [same, failed]}) == []  # its error says more


# -- UDP: the sender's rate and where datagrams were lost (issue 25) ----------------------------
def udp_sample(sender_bps: float, bitrate: str, **details: Any) -> dict[str, Any]:
    udp = sample("baremetal-4s", "udp-500m")
    udp["sender_bps"] = sender_bps
    udp["options"]["bitrate"] = bitrate
    udp["details"].update(details)
    return udp


def test_a_sender_well_below_its_target_is_flagged() -> None:
    """Issue 25's 50M test whose sender reached 7.8 Mbit/s: the figure is not what the
    test asked for. The captured 400M test on a 200 Mbit/s link sent 192 (48%)."""
    shaped = parse((IPERF3_FIXTURES / "udp_shaped_server_json.stdout").read_text())
    held = udp_sample(shaped.sender_bps, "400M")
    held["throughput_bps"] = shaped.receiver_bps
    assert "sender-below-target" in flags.of_sample(held)
    assert "sender-below-target" in flags.of_sample(udp_sample(7.8e6, "50M"))
    assert "sender-below-target" not in flags.of_sample(udp_sample(46e6, "50M"))  # 92%
    assert flags.SENDER_SHARE == 0.9


def test_the_place_of_loss_is_a_flag_and_a_note() -> None:
    why = "1563 datagrams lost: 1563 counted by the receiver (receive-buffer 1563), 0 on the way"
    found = {"places": ["receiver could not keep up"], "why": why}
    udp = udp_sample(495e6, "500M", loss=found)
    assert "receiver-overrun" in flags.of_sample(udp)
    assert flags.loss_notes([udp]) == [f"loss udp-500m: receiver could not keep up ({why})"]
    dropped = udp_sample(495e6, "500M", loss={"places": ["network or a queue dropped"]})
    assert "dropped-on-path" in flags.of_sample(dropped)
    assert flags.loss_notes([sample("baremetal-4s", "tcp-reverse")]) == []


def test_new_flags_keep_the_old_ones_numbers() -> None:
    assert flags.marker(["cpu-bound", "unreliable-clock"]) == "4,7"
    assert flags.marker(["sender-below-target", "dropped-on-path"]) == "8,10"


def test_pmtu_mismatch_when_the_senders_path_mtu_is_not_the_checked_one() -> None:
    doc = json.loads((RESULTS_FIXTURES / "tcpinfo-lab" / "results.json").read_text())
    tests = {t["name"]: t for t in doc["tests"]}
    # as captured: every sender used the MTU netrun set and checked (flannel's containers
    # 50 below the hosts'), or its NIC's
    expected = {n: flags.expected_mtu(t) for n, t in tests.items() if t["mode"] != "freeflow"}
    assert expected["bare-9000"] == 9000 and expected["flannel-9000"] == 8950
    assert expected["bare-rev"] == 1500 and expected["flannel"] is None  # not set: unknown
    assert not any("pmtu-mismatch" in flags.of_sample(t) for t in tests.values())
    shrunk = copy.deepcopy(tests["bare-9000"])
    shrunk["metrics"]["pmtu_bytes"] = 1500  # an ICMP-learned smaller hop
    assert "pmtu-mismatch" in flags.of_sample(shrunk)
    assert "pmtu-mismatch" not in flags.NOT_AS_ASKED  # a footnote: the figure stands


# -- loss above the test's max_loss (issue 35) --------------------------------------------------
def test_loss_above_max_loss_makes_every_report_say_flagged() -> None:
    """baremetal-4s's udp-500m lost 19.4%, over iperf3's default max_loss (1%; the run was
    saved before the option existed, so the tool's default applies): status flagged with the
    flag's name in the text, markdown, CSV, JSON, HTML and JUnit; max_loss: 25 lets it pass."""
    run = doc("baremetal-4s")
    text = render_table(run)
    assert "udp-500m: status flagged: loss-above-max (lost up to 19.43%, max_loss 1%)" in text
    assert "udp-500m: status flagged: loss-above-max" in render(run, "markdown")
    rows = {r["name"]: r for r in csv.DictReader(io.StringIO(render_csv(run)))}
    assert rows["udp-500m"]["status"] == "flagged"
    assert rows["udp-500m"]["flagged"] == "loss-above-max"
    assert rows["tcp-forward"]["status"] == "ok" and rows["tcp-forward"]["flagged"] == ""
    tests = {t["name"]: t for t in json.loads(render(run, "json"))["tests"]}
    assert tests["udp-500m"]["status"] == "flagged"
    assert tests["udp-500m"]["flagged"] == ["loss-above-max"]
    page = render(run, "html")
    assert '<td class="status-flagged">flagged</td>' in page
    assert "udp-500m: status flagged: loss-above-max" in page
    junit = ET.fromstring(junit_xml(run))
    case = junit.find("testsuite/testcase[@name='udp-500m']")
    assert case is not None and case.find("failure") is None  # flagged is not a failure
    assert "loss-above-max" in case.find("properties/property[@name='flags']").get("value")
    assert exit_code(run) == 0  # only --fail-on-flags makes it one
    for s in run["tests"]:
        s["options"]["max_loss"] = 25
    assert {r[0]: r[-1] for r in table_rows(run)[1]}["udp-500m"] == "ok"
    for s in run["tests"]:
        s["options"]["max_loss"] = None  # no limit
    assert "loss-above-max" not in flags.of_test(run["tests"])


def test_max_loss_is_an_option_of_the_udp_tools_with_a_documented_default() -> None:
    """iperf3 and iperf2 declare max_loss with MAX_LOSS_DEFAULTS; a tool that counts no
    datagrams (netperf, ping's echoes) has no default, so a saved run of it is never flagged."""
    from netrun.core.options import MAX_LOSS_DEFAULTS
    from netrun.tools import get_tool

    for tool in ("iperf3", "iperf2"):
        found = {o.name: o for o in get_tool(tool).options}["max_loss"]
        assert found.default == MAX_LOSS_DEFAULTS[tool] == 1.0
    ping = {"tool": "ping", "status": "ok", "lost_percent": 50.0, "options": {}}
    assert flags.max_loss(ping) is None and "loss-above-max" not in flags.of_sample(ping)


# -- the ceiling from the effective link rate (issue 35) -----------------------------------------
def test_a_tbf_below_the_nic_sets_the_ceiling_and_names_itself() -> None:
    """The veth fixture's context (tests/fixtures/context/veth: a real tbf at 1gbit on a
    10000 Mbit/s veth) and a tbf at 400 Mbit/s as the lab's shaping prints it (393760Kbit:
    400 x 1514/1538, netrun.lab.network): the ceiling is the qdisc's, counted on the
    packet the qdisc sees (1514 bytes a full frame), and its basis names the qdisc and
    the sender; a line slower than the qdisc stays the ceiling."""
    from netrun.core.linerate import shaper_of
    from netrun.tools.context import parse_context
    from tests.conftest import CONTEXT_FIXTURES

    base = CONTEXT_FIXTURES / "veth"
    ctx = parse_context(base.with_suffix(".stdout").read_text())
    veth = shaper_of(ctx["qdisc"], None, "bravo's data0 egress (the client, sending)")
    assert veth is not None and (veth.kind, veth.mbps) == ("tbf", 1000.0)
    lab = shaper_of("tbf root rate 393760Kbit burst 262096b lat 20ms", None, "bravo's data0")
    assert lab is not None and lab.mbps == pytest.approx(393.76)
    shaped = per_test_ceiling(10000, 1500, "tcp", mss=1448, shaper=lab)
    assert shaped is not None
    assert shaped.mbps == pytest.approx(393.76 * 1448 / 1514)  # 376.6, a 400 Mbit/s link's
    found = ceiling_of({}, None, 10000, 1500, None, "tcp", [lab])
    assert found is not None and found.mbps == pytest.approx(393.76 * 1448 / 1514)
    assert "tbf root rate 393.76 Mbit/s on bravo's data0" in found.basis
    assert found.basis.endswith("below the 10000 Mbit/s line")
    slow = ceiling_of({}, None, 100, 1500, None, "tcp", [lab])  # a 100 Mbit/s NIC is lower
    assert slow is not None and slow.mbps == pytest.approx(100 * 1448 / 1538)
    assert slow.basis.endswith("below the tbf root rate 393.76 Mbit/s on bravo's data0")
    assert shaper_of("noqueue root", None, "x") is None  # nothing limits the rate
    assert shaper_of("cake root bandwidth unlimited diffserv3", None, "x") is None
    cake = shaper_of("cake root bandwidth 400Mbit diffserv3 triple-isolate", None, "x")
    assert cake is not None and cake.mbps == 400.0


def test_bidir_adds_each_senders_own_ceiling() -> None:
    slow = shaper_of_rate(200)
    found = ceiling_of({"bidir": True}, None, 1000, 1500, None, "tcp", [slow, None])
    assert found is not None
    assert found.mbps == pytest.approx(200 * 1448 / 1514 + 1000 * 1448 / 1538)
    assert found.basis.startswith("bidir: client to server 191.3 (")


def shaper_of_rate(mbps: float) -> Any:
    from netrun.core.linerate import Shaper

    return Shaper("tbf", mbps, "alpha's data0 egress (the client, sending)")


def test_a_400_mbit_lab_reads_its_ceiling_from_the_senders_qdisc() -> None:
    """The sending end's qdisc from the hosts' contexts (results.json's hosts): a 10 Gbit/s
    NIC shaped by tbf at 400 Mbit/s gives the 400 Mbit/s link's ceiling, not 9414.8."""
    from netrun.run.sample import shapers

    contexts = {
        "bravo": {"context": {"nic": "data0", "qdisc": "tbf root rate 393760Kbit burst 1b"}},
        "alpha": {"context": {"nic": "data0", "qdisc": "noqueue root"}},
    }
    test = TestSpec("t", "baremetal", "alpha", "bravo", 0, {}, frozenset())
    found = shapers(test, contexts)
    assert [s.where if s else None for s in found] == ["bravo's data0 egress (the client, sending)"]
    assert found[0] is not None and found[0].mbps == pytest.approx(393.76)
    reverse = dataclasses.replace(test, options={"reverse": True})
    assert shapers(reverse, contexts) == [None]  # alpha sends: nothing shapes it
