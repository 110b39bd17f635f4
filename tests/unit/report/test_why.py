"""Why a test regressed reaches every output, from the saved verdict (netrun.report.why).

The case of issue 41: a UDP test whose throughput moved a little while its loss rose far
beyond its limit. JUnit used to say ``lost_percent regressed -7.6%`` (the throughput's
change under the loss's name); every output now names the loss, its two values and the limit.
The runs are the real baremetal-3 fixture; its baseline is a copy with the loss at 0.1%.
"""

from __future__ import annotations

import copy
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from netrun.cli.main import main
from netrun.core.metrics import declared, legacy
from netrun.history.db import History
from netrun.publish import PublishOptions, publish
from netrun.report import why
from netrun.report.exporters import junit_xml
from netrun.report.oneline import summary_line
from netrun.report.render import render
from netrun.results import schema
from tests.conftest import RESULTS_FIXTURES

#: What every output says of udp-500m (its start: a cause, when judged, follows the limit).
WANT = "lost_percent 0.10 -> 28.26 % (+28.16 points), limit 1 point"


def load(name: str) -> dict[str, Any]:
    return json.loads((RESULTS_FIXTURES / name / "results.json").read_text())


@pytest.fixture
def compared(tmp_path: Path) -> dict[str, Any]:
    """baremetal-3 judged against itself with udp-500m's loss at 0.1% in the baseline."""
    doc = load("baremetal-3")
    base = copy.deepcopy(doc)
    base["run_id"] = "0badbeef"
    for sample in base["tests"]:
        if sample["name"] == "udp-500m":
            sample["lost_percent"] = 0.1
    (tmp_path / "base.json").write_text(json.dumps(base))
    out = publish(doc, tmp_path, PublishOptions(baseline=str(tmp_path / "base.json")))
    assert {v.test: v.verdict for v in out.verdicts}["udp-500m"] == "regressed"
    return doc


def test_the_saved_verdict_names_the_metric_its_values_and_limit(
    compared: dict[str, Any],
) -> None:
    (saved,) = [v for v in compared["baseline"]["verdicts"] if v["test"] == "udp-500m"]
    assert saved["metric"] == "lost_percent" and saved["limit"].startswith("1 point")
    assert saved["before"] == pytest.approx(0.1) and saved["after"] == pytest.approx(28.2631, 1e-4)
    # it survives the trip through results.json's checks, and reads back whole
    again = schema.check(json.loads(json.dumps(compared)), Path("results.json"))
    (back,) = [v for v in why.stored(again) or [] if v.test == "udp-500m"]
    assert why.reason(back, declared(again)).startswith(WANT)


def test_every_report_and_junit_say_why(compared: dict[str, Any]) -> None:
    verdicts = why.stored(compared)
    for fmt in ("table", "markdown", "html"):
        text = render(compared, fmt, verdicts)
        want = WANT.replace(">", "&gt;") if fmt == "html" else WANT
        assert any("udp-500m" in line and want in line for line in text.splitlines()), fmt
    suite = ET.fromstring(junit_xml(compared, verdicts)).find("testsuite")
    assert suite is not None
    (failure,) = suite.iter("failure")
    assert (failure.get("message") or "").startswith(f"regressed against run 0badbeef: {WANT}")


def test_a_cause_is_said_when_the_verdict_names_one() -> None:
    saved = {"test": "t", "verdict": "regressed", "delta_pct": -49.0, "detail": "",
             "metric": "throughput_bps", "before": 941e6, "after": 480e6, "limit": "5%",
             "cause": "network path"}  # fmt: skip
    declared = {m.name: m for m in legacy()}
    assert why.reason(saved, declared) == (
        "throughput_bps 941.0 -> 480.0 Mbit/s (-49.0%), limit 5%; cause: network path"
    )
    assert why.reason({**saved, "verdict": "ok"}) == ""


def test_an_old_verdict_falls_back_to_the_part_of_its_detail_that_judged_it() -> None:
    old = {"test": "t", "verdict": "regressed", "delta_pct": -7.6,
           "detail": "throughput 400 vs 433 Mbit/s (-7.6%, tolerance 10%); "
                     "UDP loss rose by 6.60 points (0.10 -> 6.70), limit 1"}  # fmt: skip
    assert why.reason(old) == "UDP loss rose by 6.60 points (0.10 -> 6.70), limit 1"


def test_history_says_why(
    compared: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with History.open(tmp_path / "h.sqlite") as history:
        history.add_run(compared, tmp_path)
    assert main(["history", "--db", str(tmp_path / "h.sqlite")]) == 0
    assert f"run {compared['run_id']}: udp-500m regressed: {WANT}" in capsys.readouterr().out
    argv = ["history", "--db", str(tmp_path / "h.sqlite"), "--test", "tcp-forward"]
    assert main(argv) == 0
    assert "udp-500m" not in capsys.readouterr().out  # --test: that test's only


def test_the_summary_line_names_what_regressed_and_where(compared: dict[str, Any]) -> None:
    line = summary_line(compared)
    assert line == (
        "baremetal: 3 ok, 1 regressed (udp-500m lost_percent 0.1 -> 28.3 on bravo→alpha, "
        "cause: network)"
    )
    doc = copy.deepcopy(compared)
    doc.update(tag="nightly", status="interrupted", not_run=["later"])
    doc["baseline"]["verdicts"][0].update(
        verdict="regressed", metric="throughput_bps", before=941e6, after=480e6, limit="5%",
        cause="network path",
    )  # fmt: skip
    assert summary_line(doc).startswith(
        "nightly: 2 ok, 2 regressed, 1 not run, run interrupted "
        "(tcp-forward -49% on bravo→alpha, cause: network path; udp-500m"
    )
    # a relative limit with the tool's floor beside it is still relative: the change in %
    doc["baseline"]["verdicts"][0].update(
        metric="rtt_avg_ms", before=0.04, after=0.06, limit="20% and 0.05 ms"
    )
    assert "(tcp-forward +50% rtt_avg_ms on bravo→alpha" in summary_line(doc)
