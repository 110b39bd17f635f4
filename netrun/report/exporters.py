"""Exporting a run for machines: Prometheus textfile metrics and JUnit XML.

A nightly cron job runs netrun, then writes ``netrun.prom`` into node_exporter's textfile
collector folder (alerts on throughput, failures and staleness) and ``junit.xml`` for a CI
dashboard. Both are rendered from results.json alone, like netrun.report.render.
"""

from __future__ import annotations

import contextlib
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from netrun.core import metrics
from netrun.errors import NetrunError
from netrun.history.regress import VERDICTS
from netrun.report import headline, prom_names, why
from netrun.report.metric_table import median_text
from netrun.report.summary import VerdictLike, group_samples, is_regression
from netrun.results import flags, stats
from netrun.results.fanin import ends
from netrun.results.store import atomic_write

TEST_LABELS = ("scenario", "test", "mode", "server", "client", "protocol")
GAUGES = {
    "netrun_test_ok": "1 when every repeat of the test passed, else 0.",
    "netrun_test_regressed": "1 when the test regressed against its baseline for a cause "
    "that pages (--page-on), else 0.",
    "netrun_test_verdict": (
        "The test's verdict against its baseline: 1 for the verdict it got, 0 for the others "
        "(a state set)."
    ),
    "netrun_test_verdict_cause": "1 for the cause the test's verdict names.",
    "netrun_run_exit_code": (
        "netrun's exit code for the run: 0 passed, 1 a test failed or results not saved, "
        "2 bad input, 3 regressed, 75 another run measured on a host it needed, "
        "130/143 interrupted."
    ),
    "netrun_run_timestamp_seconds": "When the run finished (started, if it never finished).",
    "netrun_last_success_timestamp_seconds": (
        "When a run of the scenario last finished with every test passing and none "
        "regressed; 0 if none is known."
    ),
}


def timestamp(iso: str | None) -> float | None:
    """Seconds since the epoch of a results.json time ("2026-11-30T09:56:41Z")."""
    if not iso:
        return None
    when = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def _regressed(verdicts: Sequence[VerdictLike] | None) -> dict[str, bool]:
    return {v.test: is_regression(v) for v in verdicts or ()}


def run_passed(doc: dict[str, Any], verdicts: Sequence[VerdictLike] | None = None) -> bool:
    """True when the run finished, ran tests, and every sample passed with no regression."""
    tests = doc.get("tests", [])
    return (
        doc.get("status") == "finished"
        and bool(tests)
        and all(t.get("status") == "ok" for t in tests)
        and not any(_regressed(verdicts).values())
    )


# -- Prometheus -----------------------------------------------------------------------------
def escape_label(value: object) -> str:
    """A label value as the exposition format wants it: \\ " and newline escaped."""
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _sample(name: str, labels: Mapping[str, object], value: float) -> str:
    inner = ",".join(f'{k}="{escape_label(v)}"' for k, v in labels.items())
    number = float(value)
    text = str(int(number)) if number.is_integer() and abs(number) < 1e15 else repr(number)
    return f"{name}{{{inner}}} {text}"


def prometheus_text(
    doc: dict[str, Any],
    verdicts: Sequence[VerdictLike] | None = None,
    last_success: float | None = None,
    exit_code: int | None = None,
) -> str:
    """node_exporter textfile-collector metrics for one run, in base units (prom_names).

    ``last_success`` is the previous netrun_last_success_timestamp_seconds (see
    ``previous_last_success``): kept when this run did not pass, replaced when it did.
    ``exit_code``: the run's, as netrun_run_exit_code.
    """
    scenario = str(doc.get("scenario"))
    regressed = _regressed(verdicts)
    by_test = {v.test: v for v in verdicts or ()}
    gauges = dict(GAUGES)
    samples: dict[str, list[str]] = {name: [] for name in gauges}
    for name, group in group_samples(doc.get("tests", [])).items():
        first = group[0]
        labels: dict[str, object] = {"scenario": scenario, "test": name}
        labels.update({k: first.get(k, "") for k in TEST_LABELS[2:]})
        labels["client"], labels["server"] = ends(first)  # a fan's every flow, not its first
        tool = str(first.get("tool") or "iperf3")
        for key, metric in metrics.declared(doc, tool).items():
            summary = stats.summarize(stats.ok_values(group, key))
            if summary is None:  # a null (unavailable) metric is left out, never exported as 0
                continue
            out = prom_names.exported(tool, metric)
            gauges.setdefault(out.name, out.help)
            samples.setdefault(out.name, []).append(
                _sample(out.name, labels, summary.median * out.factor)
            )
        ok = all(s.get("status") == "ok" for s in group)
        samples["netrun_test_ok"].append(_sample("netrun_test_ok", labels, int(ok)))
        if name in regressed:
            value = int(regressed[name])
            samples["netrun_test_regressed"].append(_sample("netrun_test_regressed", labels, value))
        if (verdict := by_test.get(name)) is not None:
            samples["netrun_test_verdict"] += _verdict_samples(labels, verdict)
            if cause := getattr(verdict, "cause", None):
                samples["netrun_test_verdict_cause"].append(
                    _sample("netrun_test_verdict_cause", {**labels, "cause": cause}, 1)
                )
    run_at = timestamp(doc.get("finished")) or timestamp(doc.get("started"))
    return _run_gauges(gauges, samples, scenario, run_at, exit_code, last_success,
                       run_passed(doc, verdicts))  # fmt: skip


def _verdict_samples(labels: dict[str, object], verdict: VerdictLike) -> list[str]:
    """The state set of one test's verdict: 1 for its own, 0 for every other one."""
    known = list(VERDICTS) + ([] if verdict.verdict in VERDICTS else [str(verdict.verdict)])
    return [
        _sample("netrun_test_verdict", {**labels, "verdict": v}, int(v == verdict.verdict))
        for v in known
    ]


def _run_gauges(
    gauges: dict[str, str],
    samples: dict[str, list[str]],
    scenario: str,
    run_at: float | None,
    exit_code: int | None,
    last_success: float | None,
    passed: bool,
) -> str:
    """Add the run's own gauges and lay every family out: HELP, TYPE, its samples."""
    run = {"scenario": scenario}
    if exit_code is not None:
        samples["netrun_run_exit_code"].append(_sample("netrun_run_exit_code", run, exit_code))
    if run_at is not None:
        samples["netrun_run_timestamp_seconds"].append(
            _sample("netrun_run_timestamp_seconds", run, run_at)
        )
    if passed and run_at is not None:
        last_success = run_at
    samples["netrun_last_success_timestamp_seconds"].append(
        _sample("netrun_last_success_timestamp_seconds", run, last_success or 0)
    )
    lines = []
    for gauge, help_text in sorted(gauges.items(), key=lambda kv: kv[0] not in GAUGES):
        if samples.get(gauge):
            lines += [f"# HELP {gauge} {help_text}", f"# TYPE {gauge} gauge", *samples[gauge]]
    return "\n".join(lines) + "\n"


def nothing_ran_text(scenario: str, exit_code: int, when: float, last_success: float | None) -> str:
    """The textfile of a run that ended before measuring (exit 2 or 75): its exit code and
    time, and the last success carried over, so no earlier run's figures stay exported."""
    gauges = {k: GAUGES[k] for k in ("netrun_run_exit_code", "netrun_run_timestamp_seconds",
                                      "netrun_last_success_timestamp_seconds")}  # fmt: skip
    samples: dict[str, list[str]] = {name: [] for name in gauges}
    return _run_gauges(gauges, samples, scenario, when, exit_code, last_success, False)


_LAST = re.compile(
    r'^netrun_last_success_timestamp_seconds\{scenario="((?:[^"\\]|\\.)*)"\}\s+(\S+)', re.M
)


def scenarios_in(text: str) -> list[str]:
    """The scenarios an earlier prometheus_text output names (their last-success lines)."""
    found = [m.group(1) for m in _LAST.finditer(text)]
    unescape = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}
    return [re.sub(r'\\[\\"n]', lambda m: unescape[m.group(0)], f) for f in found]


def previous_last_success(text: str, scenario: str) -> float | None:
    """The scenario's last-success time from an earlier prometheus_text output, if any."""
    for match in _LAST.finditer(text):
        if match.group(1) == escape_label(scenario):
            with contextlib.suppress(ValueError):
                value = float(match.group(2))
                return value or None
    return None


# -- JUnit ----------------------------------------------------------------------------------
def _duration(samples: list[dict[str, Any]]) -> float:
    total = 0.0
    for s in samples:
        start, end = timestamp(s.get("started")), timestamp(s.get("finished"))
        if start is not None and end is not None:
            total += max(end - start, 0.0)
    return total


def _describe(doc: dict[str, Any], samples: list[dict[str, Any]]) -> str:
    """The test's headline first (throughput: "median 941.2 Mbit/s over 3 ok repeat(s)",
    as before; ping: its mean RTT), then one line per other declared metric it measured."""
    head = headline.headline(doc, samples)
    lines = []
    if head.name == "throughput_bps":
        values = [v / 1e6 for v in stats.ok_values(samples, "throughput_bps")]
        summary = stats.summarize(values)
        if summary is not None:
            text = f"median {summary.median:.1f} Mbit/s over {summary.n} ok repeat(s)"
            if summary.ci_low is not None and summary.ci_high is not None:
                text += f", 95% CI {summary.ci_low:.1f}-{summary.ci_high:.1f}"
            lines.append(text)
    for metric in sorted(metrics.used(doc, samples), key=lambda m: m.name != head.name):
        if metric.name == "throughput_bps" and head.name == "throughput_bps":
            continue
        each = stats.summarize(stats.ok_values(samples, metric.name))
        if each is not None:
            unit = metric.shown_unit or metric.unit
            shown = median_text(each, samples, metric.name, unit, metric.show)
            text = f"{metric.name}: median {shown}" + ("" if "(" in shown else f" {unit}")
            text = text.rstrip()
            lines.append(
                text + (f" over {each.n} ok repeat(s)" if metric.name == head.name else "")
            )
    return "\n".join(lines) or "no ok repeat"


def regression_message(doc: dict[str, Any], verdict: VerdictLike) -> str:
    """JUnit's failure message for a regression: what moved, from what to what, the limit
    and the cause (netrun.report.why), and the baseline it was judged against."""
    base = doc.get("baseline")
    run_id = base.get("run_id") if isinstance(base, dict) else None
    against = f" against run {run_id}" if run_id else " against the baseline"
    because = why.reason(verdict, metrics.declared(doc))
    return f"regressed{against}" + (f": {because}" if because else "")


def not_run(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """(test, why) for each test the run did not measure: left out by --limit, or never
    reached (the run was interrupted or stopped by an internal error)."""
    out = [(str(name), "not selected (--limit)") for name in doc.get("skipped") or []]
    reason = {"interrupted": "the run was interrupted", "error": "the run stopped on an error"}
    why_not = f"not run: {reason.get(str(doc.get('status')), 'the run ended first')}"
    out += [(str(name), why_not) for name in doc.get("not_run") or []]
    return out


def testsuite(
    doc: dict[str, Any],
    verdicts: Sequence[VerdictLike] | None = None,
    fail_on_flags: bool = False,
) -> ET.Element:
    """One <testsuite> for a run: a <testcase> per test, failed or regressed ones failing.

    A test whose figure is not what it asked for (flags.NOT_AS_ASKED) carries a ``flags``
    property and says so in its output; with ``fail_on_flags`` it fails (type "flagged")."""
    scenario = str(doc.get("scenario"))
    by_test = {v.test: v for v in verdicts or ()}
    suite = ET.Element("testsuite", name=scenario)
    props = ET.SubElement(suite, "properties")
    for key in ("run_id", "netrun_version", "scenario_file", "status"):
        if doc.get(key) is not None:
            ET.SubElement(props, "property", name=key, value=str(doc[key]))
    failures = errors = skipped = 0
    total_time = 0.0
    groups = group_samples(doc.get("tests", []))
    for name, group in groups.items():
        seconds = _duration(group)
        total_time += seconds
        case = ET.SubElement(
            suite, "testcase", name=name, classname=f"netrun.{scenario}.{group[0].get('mode')}"
        )
        case.set("time", f"{seconds:.3f}")
        bad = [s for s in group if s.get("status") != "ok"]
        verdict = by_test.get(name)
        wrong = [] if bad else flags.not_as_asked(flags.of_test(group))
        if wrong:
            props = ET.SubElement(case, "properties")
            ET.SubElement(props, "property", name="flags", value=",".join(wrong))
        message = kind = None
        if bad:
            message = f"{len(bad)}/{len(group)} repeat(s) failed: {bad[0].get('error') or 'failed'}"
            kind = "failed"
        elif verdict is not None and is_regression(verdict):
            message = regression_message(doc, verdict)
            kind = "regression"
        elif wrong and fail_on_flags:
            message = f"flagged {', '.join(wrong)}: the figure is not what the test asked for"
            kind = "flagged"
        if message is not None:
            failures += 1
            failure = ET.SubElement(case, "failure", message=message)
            failure.set("type", kind or "failed")
            failure.text = "\n".join(
                f"repeat {s.get('repeat')}: {s.get('error') or 'failed'}" for s in bad
            ) or "\n".join([message, *(f"{f}: {flags.FLAGS[f]}" for f in wrong)])
        said = [f"flagged {f}: {flags.FLAGS[f]}" for f in wrong]
        ET.SubElement(case, "system-out").text = "\n".join([_describe(doc, group), *said])
    for name, why_not in not_run(doc):
        skipped += 1
        case = ET.SubElement(suite, "testcase", name=name, classname=f"netrun.{scenario}")
        case.set("time", "0")
        ET.SubElement(case, "skipped", message=why_not)
    if doc.get("errors"):
        ET.SubElement(suite, "system-err").text = "\n".join(map(str, doc["errors"]))
        if not groups:
            errors += 1
            case = ET.SubElement(suite, "testcase", name="run", classname=f"netrun.{scenario}")
            ET.SubElement(case, "error", message=str(doc["errors"][0]))
    suite.set("tests", str(len(groups) + skipped + (1 if errors else 0)))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", str(skipped))
    suite.set("time", f"{total_time:.3f}")
    if doc.get("started"):
        suite.set("timestamp", str(doc["started"]).removesuffix("Z"))
    return suite


def junit_xml(
    doc: dict[str, Any], verdicts: Sequence[VerdictLike] | None = None, fail_on_flags: bool = False
) -> str:
    """A JUnit XML document (<testsuites> holding the run's one <testsuite>)."""
    suite = testsuite(doc, verdicts, fail_on_flags)
    root = ET.Element("testsuites", name="netrun")
    for key in ("tests", "failures", "errors", "skipped", "time"):
        root.set(key, suite.get(key, "0"))
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


# -- files ----------------------------------------------------------------------------------
def write_atomic(path: Path | str, text: str, mode: int = 0o644) -> Path:
    """Replace ``path`` whole (never a half-written .prom), readable by node_exporter.

    netrun.results.store.atomic_write makes its temp file 0600; a textfile collector running as
    another user needs to read it, hence ``mode``.
    """
    path = Path(path)
    atomic_write(path, text)
    try:
        os.chmod(path, mode)
    except OSError as exc:
        raise NetrunError(f"{path}: cannot set its mode ({exc.strerror or exc})") from None
    return path
