"""A regression measured again (netrun.history.confirm) reads on the one screen: its verdict
cell marked, a legend line, and both figures in its reason, in every table.

The run is tests/fixtures/results/confirm-lab (tests/fixtures/capture_confirm.py): both
lab links halved, so tcp-fwd and tcp-rev regressed and were measured again; alpha's link
was put back before the second measurement, so tcp-fwd's (bravo sends) was confirmed and
tcp-rev's (alpha sends) was not.
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from netrun.history.confirm import CONFIRMED, NOT_CONFIRMED, UNCONFIRMED, settle
from netrun.history.regress import Verdict
from netrun.publish import PublishOptions, publish
from netrun.report import why
from netrun.report.brief import render_brief, tables
from netrun.report.html import render_html
from netrun.report.oneline import summary_line
from netrun.report.render import render
from netrun.results import schema
from tests.conftest import RESULTS_FIXTURES

RUN = RESULTS_FIXTURES / "confirm-lab"
#: What the one screen says of each test (baseline -> first measurement, then the second).
FWD = "tcp-fwd regressed: throughput_bps 932.4 -> 469.2 Mbit/s (-49.7%), limit 5%; " \
    "confirmed by a second measurement: 471.1 Mbit/s (-49.5%)"  # fmt: skip
REV = "tcp-rev noisy: throughput_bps 940.0 -> 471.7 Mbit/s (-49.8%), limit 5%; " \
    "not confirmed: a second measurement read 940.9 Mbit/s (+0.1%)"  # fmt: skip


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


@pytest.fixture
def night() -> tuple[dict[str, Any], list[Verdict]]:
    doc = load(RUN / "results.json")
    return doc, why.stored(doc) or []


def test_the_saved_verdicts_keep_what_the_second_measurement_read(
    night: tuple[dict[str, Any], list[Verdict]],
) -> None:
    doc, verdicts = night
    schema.check(copy.deepcopy(doc), RUN / "results.json")  # "again" is a known field
    by_test = {v.test: v for v in verdicts}
    fwd, rev = by_test["tcp-fwd"], by_test["tcp-rev"]
    assert (fwd.verdict, fwd.confirmation, fwd.pages) == ("regressed", CONFIRMED, True)
    assert (rev.verdict, rev.confirmation, rev.pages) == ("noisy", NOT_CONFIRMED, False)
    second = load(RUN / "confirm" / "results.json")
    assert doc["baseline"]["confirmation"]["run_id"] == second["run_id"]
    assert fwd.again == pytest.approx(471.065e6, rel=1e-5) and fwd.after < 0.51 * fwd.before
    assert rev.again == pytest.approx(940.9e6, rel=1e-3)  # alpha's link was back


def test_publish_on_the_captured_runs_settles_as_the_night_did(tmp_path: Path) -> None:
    first = load(RUN / "results.json")
    saved = first.pop("baseline")
    first.pop("tag", None)

    def again(names: list[str]) -> tuple[dict[str, Any] | None, Path | None, str]:
        assert names == ["tcp-fwd", "tcp-rev"]
        return load(RUN / "confirm" / "results.json"), tmp_path / "confirm/results.json", ""

    out = publish(first, tmp_path, PublishOptions(baseline=str(RUN / "baseline")), again)
    got = {v.test: (v.verdict, v.confirmation, v.again) for v in out.verdicts}
    want = {v["test"]: (v["verdict"], v["confirmation"], v["again"]) for v in saved["verdicts"]}
    assert got == want and out.regressed


def test_the_one_screen_marks_the_verdict_and_gives_both_figures(
    night: tuple[dict[str, Any], list[Verdict]],
) -> None:
    doc, verdicts = night
    text = render_brief(doc, verdicts, where="OUT")
    assert len(text.splitlines()) <= 40, text
    [(_, _, headers, rows)] = tables(doc, verdicts)
    cells = {r[0]: dict(zip(headers, r, strict=True)) for r in rows}
    assert cells["tcp-fwd"]["verdict"] == "regressed ✓"
    assert cells["tcp-rev"]["verdict"] == "noisy ✗"
    legend = [line for line in text.splitlines() if line.startswith("verdict ✓")]
    assert legend == [
        "verdict ✓ confirmed: it pages; ✗ not confirmed: noisy, pages nobody (a regression "
        "that would page is measured again at once; its reason gives both figures)"
    ]
    assert FWD in text and REV in text
    assert max(len(line) for line in text.splitlines() if line.startswith("test")) <= 170


def test_the_full_report_markdown_and_page_say_it_too(
    night: tuple[dict[str, Any], list[Verdict]],
) -> None:
    doc, verdicts = night
    for fmt in ("table", "markdown"):
        out = render(doc, fmt, verdicts)
        assert "regressed ✓" in out and "noisy ✗" in out and "verdict ✓ confirmed" in out
        assert FWD.split(": ", 1)[1] in out
    page = render_html(doc, verdicts)
    assert '<td class="verdict-regressed">regressed ✓</td>' in page
    assert '<td class="verdict-noisy">noisy ✗</td>' in page
    assert "verdict ✓ confirmed: it pages; ✗ not confirmed" in page
    assert "not confirmed: a second measurement read 940.9 Mbit/s (+0.1%)" in page
    assert summary_line(doc) == (
        "nightly: 1 regressed, 1 noisy (tcp-fwd -50% on bravo→alpha, cause: host, confirmed)"
    )  # the cron mail's first line
    rows = json.loads(render(doc, "json", verdicts))["tests"]
    assert {r["name"]: r["confirmation"] for r in rows} == {
        "tcp-fwd": CONFIRMED, "tcp-rev": NOT_CONFIRMED,
    }  # fmt: skip


def test_a_second_measurement_that_never_came_is_marked_and_says_why(
    night: tuple[dict[str, Any], list[Verdict]],
) -> None:
    doc, verdicts = night
    # the night as its first measurement judged it: both regressed, both would page
    first = [replace(v, verdict="regressed", pages=True, confirmation="") for v in verdicts]
    kept = settle(first, None, "interrupted by SIGINT")
    assert {v.confirmation for v in kept} == {UNCONFIRMED}
    text = render_brief(doc, kept, where="OUT")
    assert "regressed ?" in text and "verdict ? the second could not judge it: it pages" in text
    assert "a second measurement could not confirm it (interrupted by SIGINT)" in text
    plain = render_brief(
        doc, why.stored({"baseline": {"verdicts": [why.record(v) for v in first]}})
    )
    assert "✓" not in plain and "✗" not in plain and "verdict ✓" not in plain  # not measured again
