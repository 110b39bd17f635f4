"""netrun.results.context on two real lab runs (tests/fixtures/results/context-a and -b):
between them alpha's congestion control went bbr -> reno and bravo's tcp_rmem shrank,
each set inside that host's namespace; baremetal-3 is a run from before the context."""

from __future__ import annotations

import copy
import json
from typing import Any

from netrun.results import context
from netrun.results.context import Change
from tests.conftest import RESULTS_FIXTURES

CC = "net.ipv4.tcp_congestion_control"


def load(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((RESULTS_FIXTURES / name / "results.json").read_text())
    return doc


def test_flat_labels_every_field_and_says_what_is_unavailable() -> None:
    alpha = context.of_doc(load("context-a"))["alpha"]
    flat = context.flat(alpha)
    assert flat["kernel"] == alpha["kernel"]
    assert flat["NIC driver"] == "veth"
    assert flat[CC] == "bbr"
    assert flat["iperf3 version"] == "3.12"
    assert flat["offload tcp-segmentation-offload"] == "on"
    assert flat["rings"].startswith("unavailable (ethtool -g data0: netlink error")
    assert flat["CPU governor"].startswith("unavailable (no cpufreq")
    assert flat["net.core.default_qdisc"].startswith("unavailable (/proc/sys has no")


def test_changes_between_two_real_runs() -> None:
    a, b = load("context-a"), load("context-b")
    assert context.changes(a, b) == [
        Change("alpha", CC, "bbr", "reno"),
        Change("bravo", "net.ipv4.tcp_rmem", "4096 131072 33554432", "4096 65536 4194304"),
    ]
    assert context.changes(a, a) == []
    assert [c.host for c in context.changes(a, b, ["bravo"])] == ["bravo"]


def test_a_run_from_before_the_context_compares_as_nothing_known() -> None:
    old, new = load("baremetal-3"), load("context-b")
    assert context.of_doc(old) == {}
    assert context.changes(old, new) == [] and context.changes(new, old) == []
    assert context.diff_lines(old, new) == [
        "host context: not recorded in A (a run from before netrun read it)"
    ]


def test_a_field_only_one_side_read_is_not_a_change() -> None:
    a, b = load("context-a"), load("context-b")
    b = copy.deepcopy(b)
    b["hosts"]["alpha"]["context"]["sysctl"]["net.ipv4.tcp_new_knob"] = "1"
    del b["hosts"]["bravo"]["context"]["kernel"]
    assert [c.label for c in context.changes(a, b)] == [CC, "net.ipv4.tcp_rmem"]


def test_the_verdict_note_names_the_test_hosts_changes() -> None:
    a, b = load("context-a"), load("context-b")
    note = context.verdict_note(b, a, "tcp")
    assert note == (
        "; context changed: alpha: net.ipv4.tcp_congestion_control bbr -> reno; "
        "bravo: net.ipv4.tcp_rmem 4096 131072 33554432 -> 4096 65536 4194304"
    )
    assert context.verdict_note(b, a, "no-such-test") == ""
    many = [Change("alpha", f"k{i}", "0", "1") for i in range(6)]
    assert context.summary(many).endswith("alpha: k3 0 -> 1 (and 2 more)")


def test_a_change_another_note_names_is_left_out_and_no_other() -> None:
    a, b = load("context-a"), load("context-b")
    rmem = "4096 131072 33554432", "4096 65536 4194304"
    told = {("net.ipv4.tcp_rmem", *rmem)}
    assert context.verdict_note(b, a, "tcp", told) == (
        "; context changed: alpha: net.ipv4.tcp_congestion_control bbr -> reno"
    )
    other = {("net.ipv4.tcp_rmem", rmem[0], "4096 1 1")}  # not the same change
    assert context.verdict_note(b, a, "tcp", other) == context.verdict_note(b, a, "tcp")
    assert context.version_label("iperf3") == "iperf3 version"
    assert "iperf3 version" in context.flat(context.of_doc(a)["alpha"])


def test_baseline_lines_from_a_real_comparison() -> None:
    """context-b ran with --baseline last against context-a."""
    b = load("context-b")
    assert b["baseline"]["context_changes"][0] == {
        "host": "alpha", "field": CC, "before": "bbr", "after": "reno"
    }  # fmt: skip
    lines = context.baseline_lines(b)
    assert lines == [
        "tcp: ok; alpha: net.ipv4.tcp_congestion_control bbr -> reno; "
        "bravo: net.ipv4.tcp_rmem 4096 131072 33554432 -> 4096 65536 4194304"
    ]
    regressed = copy.deepcopy(b)
    regressed["baseline"]["verdicts"][0]["verdict"] = "regressed"
    assert context.baseline_lines(regressed)[0].startswith("tcp: regressed; alpha: ")
    assert context.baseline_lines(load("context-a")) == []
    broken = copy.deepcopy(b)
    broken["baseline"]["context_changes"] = "garbage"
    assert context.baseline_lines(broken) == []


def test_diff_lines() -> None:
    a, b = load("context-a"), load("context-b")
    assert context.diff_lines(a, b) == [
        "host context changed (A -> B):",
        "  alpha: net.ipv4.tcp_congestion_control bbr -> reno",
        "  bravo: net.ipv4.tcp_rmem 4096 131072 33554432 -> 4096 65536 4194304",
    ]
    assert context.diff_lines(a, a) == ["host context: unchanged on alpha, bravo"]


def test_environment_rows() -> None:
    rows = context.rows(load("context-b"))
    assert [r[0] for r in rows] == ["alpha", "bravo"]
    host, kernel, _cpu, driver, firmware, qdisc, cc, tools = rows[0]
    assert host == "alpha" and kernel.startswith("6.")
    assert driver == "data0: veth 1.0" and firmware == "unavailable"
    assert qdisc.startswith("tbf root rate") and cc == "reno" and tools == "iperf3 3.12"
    assert len(context.ROW_HEADERS) == len(rows[0])


def test_a_group_read_in_one_run_only_is_a_change() -> None:
    """Run A's host had no ethtool -g answer (a veth); say so when B's could read rings."""
    a, b = load("context-a"), copy.deepcopy(load("context-a"))
    ctx = b["hosts"]["alpha"]["context"]
    ctx["rings"] = {"rx": "512", "tx": "512"}
    del ctx["unavailable"]["rings"]
    (change,) = context.changes(a, b)
    assert change.host == "alpha" and change.label == "rings" and change.after == "read"
    assert change.before.startswith("unavailable (ethtool -g data0: netlink error")
