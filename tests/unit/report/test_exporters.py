"""netrun.report.exporters on the real results.json fixtures (see tests/unit/report/test_render.py
for what they are).

The Prometheus text is read back with prometheus_client's own parser, the JUnit XML with
xml.etree, so the checks are on what a node_exporter or a CI dashboard would see.
"""

from __future__ import annotations

import copy
import json
import re
import stat
import statistics
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from netrun.core.metrics import declare
from netrun.history.regress import VERDICTS
from netrun.history.regress import Verdict as RegressVerdict
from netrun.report.exporters import (
    junit_xml,
    nothing_ran_text,
    previous_last_success,
    prometheus_text,
    run_passed,
    write_atomic,
)
from netrun.results.flags import FLAGS
from netrun.tools import get_tool
from tests.conftest import RESULTS_FIXTURES

LABELS = ("scenario", "test", "mode", "server", "client", "protocol")
THROUGHPUT = "netrun_iperf3_throughput_bytes_per_second"


def load(name: str) -> dict[str, Any]:
    return json.loads((RESULTS_FIXTURES / name / "results.json").read_text())


@dataclass(frozen=True)
class Verdict:
    test: str
    verdict: str
    delta_pct: float | None


def epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def metrics(text: str) -> dict[str, dict[tuple[str, ...], float]]:
    """name -> {(label values in LABELS order, or the scenario): value}, via the real parser."""
    out: dict[str, dict[tuple[str, ...], float]] = {}
    for family in text_string_to_metric_families(text):
        assert family.type == "gauge" and family.documentation, family.name
        for s in family.samples:
            key = tuple(s.labels[k] for k in (*LABELS, "verdict", "cause") if k in s.labels)
            assert key not in out.setdefault(s.name, {}), (s.name, key)
            out[s.name][key] = s.value
    return out


def medians(doc: dict[str, Any], field: str) -> dict[str, float]:
    found: dict[str, list[float]] = {}
    for t in doc["tests"]:
        if t["status"] == "ok" and t[field] is not None:
            found.setdefault(t["name"], []).append(t[field])
    return {name: statistics.median(v) for name, v in found.items()}


# -- Prometheus -----------------------------------------------------------------------------
def test_prometheus_values_match_the_run() -> None:
    doc = load("baremetal-3")
    got = metrics(prometheus_text(doc))
    # base units: bytes/s, seconds, ratios (1 is 100%)
    through = {key[1]: v * 8 for key, v in got[THROUGHPUT].items()}
    assert through == pytest.approx(medians(doc, "throughput_bps"), rel=1e-12)
    key = ("baremetal", "tcp-forward", "baremetal", "alpha", "bravo", "tcp")
    assert key in got[THROUGHPUT]
    udp = ("baremetal", "udp-500m", "baremetal", "alpha", "bravo", "udp")
    jitter = got["netrun_iperf3_jitter_seconds"]
    assert list(jitter) == [udp]  # TCP tests have no jitter
    assert jitter[udp] * 1e3 == pytest.approx(medians(doc, "jitter_ms")["udp-500m"])
    assert got["netrun_iperf3_lost_ratio"][udp] * 100 == pytest.approx(
        medians(doc, "lost_percent")["udp-500m"]
    )
    assert not [n for n in got if re.search(r"_(ms|us|pct|percent|bps)(_|$)", n)], list(got)
    assert set(got["netrun_test_ok"].values()) == {1.0} and len(got["netrun_test_ok"]) == 4
    assert "netrun_test_regressed" not in got
    assert got["netrun_run_timestamp_seconds"][("baremetal",)] == epoch(doc["finished"])
    assert got["netrun_last_success_timestamp_seconds"][("baremetal",)] == epoch(doc["finished"])


def test_prometheus_failed_run_keeps_the_previous_success() -> None:
    doc = load("mixed-failed-3")
    assert not run_passed(doc)
    got = metrics(prometheus_text(doc))
    ok = {key[1]: v for key, v in got["netrun_test_ok"].items()}
    assert ok == {"tcp-ok": 1.0, "tcp-down": 0.0, "udp-ok": 1.0}
    assert "tcp-down" not in {key[1] for key in got[THROUGHPUT]}
    assert got["netrun_last_success_timestamp_seconds"][("mixed",)] == 0
    before = prometheus_text(load("baremetal-3"))  # a run that passed, as last night's file
    previous = previous_last_success(before, "baremetal")
    assert previous == epoch(load("baremetal-3")["finished"])
    assert previous_last_success(before, "mixed") is None
    kept = metrics(prometheus_text(doc, last_success=previous))
    assert kept["netrun_last_success_timestamp_seconds"][("mixed",)] == previous


def test_prometheus_regressions() -> None:
    doc = load("freeflow-3")
    verdicts = [Verdict("flannel", "regressed", -7.5), Verdict("freeflow", "ok", 1.0)]
    got = metrics(prometheus_text(doc, verdicts, last_success=1.0))
    regressed = {key[1]: v for key, v in got["netrun_test_regressed"].items()}
    assert regressed == {"flannel": 1.0, "freeflow": 0.0}
    assert not run_passed(doc, verdicts)
    assert got["netrun_last_success_timestamp_seconds"][("freeflow",)] == 1.0
    fine = metrics(prometheus_text(doc, verdicts[1:]))
    assert fine["netrun_last_success_timestamp_seconds"][("freeflow",)] == epoch(doc["finished"])


def test_prometheus_one_meaning_per_name() -> None:
    """iperf3's rtt_max_ms (the sender's smoothed TCP RTT) and ping's (the longest echo) were
    one netrun_rtt_max_ms under one HELP; each tool's is now a name of its own."""
    doc = copy.deepcopy(load("tcpinfo-lab"))
    ping = load("ping-lab")
    doc["tests"] += ping["tests"]
    for metric in get_tool("ping").metrics:
        declare(doc["metrics"], "ping", metric)
    text = prometheus_text(doc)
    got = metrics(text)
    tcp, echo = got["netrun_iperf3_rtt_max_seconds"], got["netrun_ping_rtt_max_seconds"]
    assert {k[1] for k in tcp}.isdisjoint({k[1] for k in echo}) and tcp and echo
    helps = dict(re.findall(r"^# HELP (\S+) (.*)$", text, re.M))
    assert "smoothed RTT" in helps["netrun_iperf3_rtt_max_seconds"]
    assert "longest round-trip" in helps["netrun_ping_rtt_max_seconds"]


def test_prometheus_verdict_state_set_cause_and_exit_code() -> None:
    doc = load("freeflow-3")
    verdicts = [
        RegressVerdict("flannel", "regressed", -49.0, "", cause="network path"),
        RegressVerdict("freeflow", "noisy", 3.0, ""),
    ]
    got = metrics(prometheus_text(doc, verdicts, exit_code=3))
    states = {(k[1], k[-1]): v for k, v in got["netrun_test_verdict"].items()}
    assert {v for (t, v), one in states.items() if one == 1} == {"regressed", "noisy"}
    assert states[("flannel", "regressed")] == 1 and states[("flannel", "ok")] == 0
    assert len(states) == 2 * len(VERDICTS)
    (cause,) = got["netrun_test_verdict_cause"].items()
    assert (cause[0][1], cause[0][-1], cause[1]) == ("flannel", "network path", 1)
    assert got["netrun_run_exit_code"] == {("freeflow",): 3}


def test_nothing_ran_textfile_keeps_only_the_run_gauges() -> None:
    got = metrics(nothing_ran_text("nightly", 75, 1000.0, 900.0))
    assert got == {
        "netrun_run_exit_code": {("nightly",): 75},
        "netrun_run_timestamp_seconds": {("nightly",): 1000.0},
        "netrun_last_success_timestamp_seconds": {("nightly",): 900.0},
    }


def test_prometheus_label_values_are_escaped() -> None:
    doc = copy.deepcopy(load("baremetal-3"))
    odd = 'we"ird\\name\nnext'
    for t in doc["tests"]:
        if t["name"] == "tcp-forward":
            t["name"] = odd
    doc["scenario"] = 'sc "1"'
    text = prometheus_text(doc)
    got = metrics(text)
    assert (doc["scenario"], odd) in {k[:2] for k in got["netrun_test_ok"]}
    assert previous_last_success(text, 'sc "1"') == epoch(doc["finished"])
    assert all(line.count("\n") == 0 for line in text.splitlines())


def test_prometheus_interrupted_run_without_finish() -> None:
    doc = copy.deepcopy(load("baremetal-3"))
    doc.update(status="interrupted", finished=None)
    got = metrics(prometheus_text(doc, last_success=123.0))
    assert got["netrun_run_timestamp_seconds"][("baremetal",)] == epoch(doc["started"])
    assert got["netrun_last_success_timestamp_seconds"][("baremetal",)] == 123.0


# -- JUnit ----------------------------------------------------------------------------------
def test_junit_counts_and_failures() -> None:
    doc = load("mixed-failed-3")
    root = ET.fromstring(junit_xml(doc, [Verdict("udp-ok", "regressed", -12.0)]))
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    assert suite.get("name") == "mixed"
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "2", "0")
    assert root.get("failures") == "2"
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert list(cases) == ["tcp-ok", "tcp-down", "udp-ok"]
    assert cases["tcp-ok"].find("failure") is None
    down = cases["tcp-down"].find("failure")
    assert down is not None and down.get("type") == "failed"
    assert "3/3 repeat(s) failed" in (down.get("message") or "")
    assert "cannot reach 127.0.0.1:9" in (down.text or "")
    reg = cases["udp-ok"].find("failure")
    assert reg is not None and reg.get("type") == "regression"
    assert reg.get("message") == "regressed against the baseline: headline -12.0%"
    seconds = sum(
        epoch(t["finished"]) - epoch(t["started"]) for t in doc["tests"] if t["name"] == "tcp-ok"
    )
    assert float(cases["tcp-ok"].get("time") or -1) == pytest.approx(seconds)
    assert float(suite.get("time") or -1) > 0
    assert suite.get("timestamp") == doc["started"].removesuffix("Z")
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["run_id"] == doc["run_id"]


def test_junit_passing_run_and_escaping() -> None:
    doc = copy.deepcopy(load("repeats-8"))
    doc["errors"] = ['<tag> & "quotes"']
    doc["skipped"] = ["not-here"]
    text = junit_xml(doc)
    root = ET.fromstring(text)
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "0", "1")
    assert suite.findtext("system-err") == '<tag> & "quotes"'
    skipped = [c for c in suite.findall("testcase") if c.find("skipped") is not None]
    assert [c.get("name") for c in skipped] == ["not-here"]
    out = suite.find("testcase/system-out")
    assert out is not None and (out.text or "").startswith("median ")


def test_junit_run_with_errors_only() -> None:
    doc = copy.deepcopy(load("mixed-failed-3"))
    doc["tests"] = []
    suite = ET.fromstring(junit_xml(doc)).find("testsuite")
    assert suite is not None and suite.get("errors") == "1" and suite.get("tests") == "1"
    error = suite.find("testcase/error")
    assert error is not None and "cannot reach" in (error.get("message") or "")


# -- files ----------------------------------------------------------------------------------
def test_junit_lists_tests_the_run_never_reached_as_skipped() -> None:
    doc = copy.deepcopy(load("mixed-failed-3"))
    doc.update(status="interrupted", not_run=["later-1", "later-2"], skipped=["limited"])
    suite = ET.fromstring(junit_xml(doc)).find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("skipped")) == ("6", "3")
    skipped = {c.get("name"): c.find("skipped") for c in suite.findall("testcase")}
    assert skipped["later-1"].get("message") == "not run: the run was interrupted"  # type: ignore[union-attr]
    assert skipped["limited"].get("message") == "not selected (--limit)"  # type: ignore[union-attr]
    assert skipped["tcp-ok"] is None


def test_nothing_ran_replaces_yesterdays_exports(tmp_path: Path) -> None:
    """Exit 2 or 75: yesterday's passing JUnit and figures are replaced, not published again."""
    from netrun.publish import export_nothing_ran

    prom, xml = tmp_path / "netrun.prom", tmp_path / "junit.xml"
    yesterday = load("baremetal-3")
    write_atomic(prom, prometheus_text(yesterday, exit_code=0))
    write_atomic(xml, junit_xml(yesterday))
    assert export_nothing_ran(prom, xml, "baremetal", 75, "another run holds the lock") == []
    got = metrics(prom.read_text())
    assert set(got) == {"netrun_run_exit_code", "netrun_run_timestamp_seconds",
                        "netrun_last_success_timestamp_seconds"}  # fmt: skip
    assert got["netrun_run_exit_code"] == {("baremetal",): 75}
    assert got["netrun_last_success_timestamp_seconds"] == {
        ("baremetal",): epoch(yesterday["finished"])
    }
    suite = ET.parse(xml).getroot().find("testsuite")
    assert suite is not None and (suite.get("tests"), suite.get("errors")) == ("1", "1")
    assert "another run holds the lock" in ET.tostring(suite, encoding="unicode")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["junit.xml", "netrun.prom"]


def test_write_atomic_replaces_whole_and_is_readable(tmp_path: Path) -> None:
    path = tmp_path / "netrun.prom"
    text = prometheus_text(load("baremetal-3"))
    assert write_atomic(path, "old\n") == path
    write_atomic(path, text)
    assert path.read_text() == text
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["netrun.prom"]  # no temp file left


def test_junit_names_a_flagged_test_and_fails_it_with_fail_on_flags() -> None:
    """repeats-8's tcp-forward measured above its ceiling: a ``flags`` property and a line
    in its output; with fail_on_flags a failure of type "flagged"."""
    doc = load("repeats-8")

    def case(xml: str) -> ET.Element:
        root = ET.fromstring(xml)
        found = root.find("testsuite/testcase[@name='tcp-forward']")
        assert found is not None
        return found

    plain = case(junit_xml(doc))
    assert plain.find("properties/property[@name='flags']").get("value") == "above-ceiling"
    assert plain.find("failure") is None
    assert "flagged above-ceiling: measured above" in (plain.findtext("system-out") or "")
    strict = junit_xml(doc, fail_on_flags=True)
    failure = case(strict).find("failure")
    assert failure is not None and failure.get("type") == "flagged"
    assert failure.get("message", "").startswith("flagged above-ceiling: the figure is not")
    # 2: udp-300m too, flagged loss-above-max
    assert ET.fromstring(strict).find("testsuite").get("failures") == "2"


def test_publish_lists_flagged_tests_and_writes_the_strict_junit(tmp_path: Path) -> None:
    """publish() hands the CLI one line per flagged test (netrun.job turns them into exit
    1 with --fail-on-flags); export() writes the JUnit with the option."""
    from netrun.publish import PublishOptions, export, publish

    doc = load("repeats-8")
    junit = tmp_path / "junit.xml"
    opts = PublishOptions(junit=junit, fail_on_flags=True)
    out = publish(doc, tmp_path, opts)
    assert out.flagged == [
        f"test tcp-forward: flagged above-ceiling: {FLAGS['above-ceiling']}",
        # repeats of 1.2-3.7% loss, above iperf3's default max_loss of 1% (issue 35)
        f"test udp-300m: flagged loss-above-max: {FLAGS['loss-above-max']}",
    ]
    assert not junit.exists()  # written once the exit code is known
    export(doc, opts, out, 1)
    assert 'type="flagged"' in junit.read_text()
    # its udp-ok's third repeat sent 125 of the 200 Mbit/s asked: not what the test asked for
    flagged = publish(load("mixed-failed-3"), tmp_path, PublishOptions()).flagged
    assert flagged == [
        f"test udp-ok: flagged sender-below-target: {FLAGS['sender-below-target']}",
        f"test udp-ok: flagged loss-above-max: {FLAGS['loss-above-max']}",  # 6.3% lost
    ]
