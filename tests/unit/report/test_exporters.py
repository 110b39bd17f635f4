"""netrun.report.exporters on the real results.json fixtures (see tests/unit/report/test_render.py
for what they are).

The Prometheus text is read back with prometheus_client's own parser, the JUnit XML with
xml.etree, so the checks are on what a node_exporter or a CI dashboard would see.
"""

from __future__ import annotations

import copy
import json
import stat
import statistics
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from netrun.report.exporters import (
    junit_xml,
    previous_last_success,
    prometheus_text,
    run_passed,
    write_atomic,
)
from netrun.results.flags import FLAGS
from tests.conftest import RESULTS_FIXTURES

LABELS = ("scenario", "test", "mode", "server", "client", "protocol")


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
            key = tuple(s.labels[k] for k in LABELS if k in s.labels)
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
    through = {key[1]: v for key, v in got["netrun_throughput_bps"].items()}
    assert through == pytest.approx(medians(doc, "throughput_bps"), rel=1e-12)
    key = ("baremetal", "tcp-forward", "baremetal", "alpha", "bravo", "tcp")
    assert key in got["netrun_throughput_bps"]
    udp = ("baremetal", "udp-500m", "baremetal", "alpha", "bravo", "udp")
    assert list(got["netrun_jitter_ms"]) == [udp]  # TCP tests have no jitter
    assert got["netrun_jitter_ms"][udp] == pytest.approx(medians(doc, "jitter_ms")["udp-500m"])
    assert got["netrun_lost_percent"][udp] == pytest.approx(
        medians(doc, "lost_percent")["udp-500m"]
    )
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
    assert "tcp-down" not in {key[1] for key in got["netrun_throughput_bps"]}
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
    assert reg.get("message") == "throughput regressed -12.0% against the baseline"
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
    1 with --fail-on-flags) and writes the JUnit with the option."""
    from netrun.publish import PublishOptions, publish

    doc = load("repeats-8")
    junit = tmp_path / "junit.xml"
    out = publish(doc, tmp_path, PublishOptions(junit=junit, fail_on_flags=True))
    assert out.flagged == [
        f"test tcp-forward: flagged above-ceiling: {FLAGS['above-ceiling']}",
        # repeats of 1.2-3.7% loss, above iperf3's default max_loss of 1% (issue 35)
        f"test udp-300m: flagged loss-above-max: {FLAGS['loss-above-max']}",
    ]
    assert 'type="flagged"' in junit.read_text()
    # its udp-ok's third repeat sent 125 of the 200 Mbit/s asked: not what the test asked for
    flagged = publish(load("mixed-failed-3"), tmp_path, PublishOptions()).flagged
    assert flagged == [
        f"test udp-ok: flagged sender-below-target: {FLAGS['sender-below-target']}",
        f"test udp-ok: flagged loss-above-max: {FLAGS['loss-above-max']}",  # 6.3% lost
    ]
