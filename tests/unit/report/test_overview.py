"""The HTML page's opening section (netrun.report.overview), from real lab runs."""

from __future__ import annotations

import copy
import json
from typing import Any

from netrun.report.html import render_html
from netrun.report.overview import counts, environment, section
from netrun.report.summary import summary_rows
from tests.conftest import RESULTS_FIXTURES


def load(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((RESULTS_FIXTURES / name / "results.json").read_text())
    return doc


def test_the_page_opens_with_the_counts_and_keeps_the_environment_in_the_detail() -> None:
    doc = load("context-b")
    page = render_html(doc)
    top = page.index('<section id="overview">')
    assert top < page.index("<th>mode</th>")  # before the main table
    part = page[top : page.index("</section>")]
    assert "<th>passed</th><th>failed</th><th>regressed</th><th>flagged</th>" in part
    env = page.index('<section id="environment">')
    assert page.index("<th>mode</th>") < page.index('id="detail"') < env  # issue 36
    part = page[env : page.index("</section>", env)]
    assert "<td>data0: veth 1.0</td>" in part and "<td>reno</td>" in part
    assert "<td>iperf3 3.12</td>" in part


def test_counts_over_the_summary_rows() -> None:
    doc = load("mixed-failed-3")
    rows = summary_rows(doc)
    found = counts(rows)
    assert found["tests"] == len(rows)
    assert found["failed"] == sum(1 for r in rows if r["errors"]) > 0
    assert found["passed"] == found["tests"] - found["failed"]
    regressed = [dict(r, verdict="regressed") for r in rows]
    assert counts(regressed)["regressed"] == len(rows)


def test_a_run_from_before_the_context_shows_its_probe_facts() -> None:
    doc = load("baremetal-3")
    rows, notes = environment(doc)
    assert rows and all(r[1] != "-" for r in rows)  # the probe's kernel
    assert notes and "context not recorded" in notes[0]
    html = section(doc, summary_rows(doc))
    assert "context not recorded" in html


def test_host_names_are_escaped() -> None:
    doc = copy.deepcopy(load("context-a"))
    doc["hosts"]["<b>x</b>"] = doc["hosts"].pop("alpha")
    assert "&lt;b&gt;x&lt;/b&gt;" in section(doc, summary_rows(doc))
    assert "<b>x</b>" not in section(doc, summary_rows(doc))
