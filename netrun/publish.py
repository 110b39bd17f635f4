"""Publishing a finished run: history, baseline verdicts, plots and exporter files.

Everything here works from the saved results document, after the hosts are left alone,
so a failure to publish never costs the measurements: results.json is already on disk
and ``netrun history import`` can take the run in later.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from netrun.core.spec import Scenario
from netrun.errors import InputError, Interrupted, NetrunError
from netrun.history import confirm
from netrun.history.baseline import parse_spec, spreads
from netrun.history.db import History
from netrun.history.judge import DEFAULT_PAGE_ON
from netrun.history.regress import (
    Verdict,
    compare,
    figure,
    parse_tolerance,
    resolve_baseline,
    tolerances_from_doc,
)
from netrun.report import exporters, why
from netrun.results import context, flags
from netrun.results.stats import samples_by_test
from netrun.scenario.validator import NAME_RE as TAG_RE


@dataclass(frozen=True)
class PublishOptions:
    """What to do with a finished run (from the CLI flags and the scenario)."""

    db: Path | None = None
    baseline: str | None = None
    tolerance: str | None = None
    plot: bool = False
    prometheus: Path | None = None
    junit: Path | None = None
    tag: str | None = None  # --tag: `--baseline last` compares runs of the same tag
    #: --fail-on-flags: a figure that is not what its test asked for fails the run (and JUnit)
    fail_on_flags: bool = False
    #: --page-on: the causes (netrun.history.judge.CAUSES) whose regressions exit 3
    page_on: tuple[str, ...] = DEFAULT_PAGE_ON
    #: --no-confirm turns it off: a regression that would page is measured again first
    #: (netrun.history.confirm)
    confirm: bool = True


#: Measures the named tests again (netrun.history.confirm): the second run's results
#: document and the folder it went to, or None and why there is none. It is called with
#: the run's baseline record already saying what stands if it never returns (KILLED), for
#: it to save first.
Remeasure = Callable[[list[str]], tuple[dict[str, Any] | None, Path | None, str]]
#: Why a regression stands unconfirmed when netrun never saw its second measurement end.
KILLED = "netrun was killed while measuring it again"


@dataclass
class Published:
    """What publishing produced, and what went wrong without losing the run."""

    verdicts: list[Verdict] = field(default_factory=list)
    baseline_id: str | None = None
    plots: list[Path] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    #: One line per passing test whose figure is not what it asked for (flags.NOT_AS_ASKED).
    flagged: list[str] = field(default_factory=list)
    #: Ctrl-C (130) or SIGTERM (143) while publishing: the run's exit code; what publishing
    #: had not done yet is in ``problems``.
    interrupted: int | None = None

    @property
    def regressed(self) -> bool:
        """A regression whose cause pages (--page-on): exit 3."""
        return any(v.verdict == "regressed" and v.pages for v in self.verdicts)


def check_baseline(opts: PublishOptions, history: History | None, scenario: Scenario) -> None:
    """Fail before the run (exit 2) on a baseline that does not exist or a bad tolerance."""
    if opts.tolerance is not None:
        parse_tolerance(opts.tolerance)
    if opts.tag is not None and not TAG_RE.fullmatch(opts.tag):
        raise InputError(
            f"--tag {opts.tag[:40]!r}: use 1-64 of A-Z a-z 0-9 . _ -, e.g. --tag nightly"
        )
    for test in scenario.tests:
        try:
            if "tolerance" in test.options:  # iperf3's; other tools use tolerances:
                parse_tolerance(test.value("tolerance"))
        except InputError as exc:
            raise InputError(f"{scenario.path}: test '{test.name}': {exc}") from None
    spec = (opts.baseline or "").strip()
    if spec and spec != "last" and parse_spec(spec) is None:  # median:N is checked by its form
        resolve_baseline(spec, history, scenario.name)


def publish(
    doc: dict[str, Any],
    outdir: Path,
    opts: PublishOptions,
    remeasure: Remeasure | None = None,
) -> Published:
    """Store the run, compare it with its baseline (a regression that would page measured
    again first with ``remeasure``, when given), and write plots and exporter files."""
    out = Published()
    if opts.tag:
        doc["tag"] = opts.tag
    out.flagged = flags.flagged_lines(samples_by_test(doc))
    history: History | None = None
    #: What is left to do, for the line an interrupt leaves (the run's table still prints).
    left = [
        *(["the baseline comparison"] if opts.baseline else []),
        *(["the history"] if opts.db is not None else []),
        *(["the plots"] if opts.plot else []),
    ]
    try:
        if opts.db is not None:
            try:
                history = History.open(opts.db)
            except NetrunError as exc:
                _done(left, "the history")
                out.problems.append(_not_stored(exc, outdir))
        try:
            _compare(doc, opts, history, out, remeasure, outdir)
        except NetrunError as exc:  # the run is done: report, do not lose the table
            out.problems.append(f"no baseline comparison: {exc}")
        _done(left, "the baseline comparison")
        if history is not None:
            try:
                history.add_run(doc, outdir)
            except NetrunError as exc:
                out.problems.append(_not_stored(exc, outdir))
        _done(left, "the history")
        if opts.plot:
            try:
                out.plots = _plots(doc, outdir, history, opts)
            except NetrunError as exc:
                out.problems.append(f"plots not written: {exc}")
    except (KeyboardInterrupt, Interrupted) as exc:  # the measurements stand: keep them
        out.interrupted = exc.code if isinstance(exc, Interrupted) else 130
        out.problems.append(_cut_short(out.interrupted, left, outdir))
    finally:
        if history is not None:
            history.close()
    return out


def _done(left: list[str], step: str) -> None:
    if step in left:
        left.remove(step)


def _cut_short(code: int, left: list[str], outdir: Path) -> str:
    """The line an interrupt while publishing leaves: what was not done, and how to do it."""
    signal = "SIGTERM" if code == 143 else "SIGINT"
    line = f"publishing interrupted by {signal}; not done: {', '.join(left) or 'nothing'}"
    if "the history" in left:
        line += f"; store the run later with: netrun history import {outdir.resolve()}"
    return line


def _not_stored(exc: NetrunError, outdir: Path) -> str:
    return (
        f"history not updated: {exc}; store the run later with: "
        f"netrun history import {outdir.resolve()}"
    )


def _compare(
    doc: dict[str, Any],
    opts: PublishOptions,
    history: History | None,
    out: Published,
    remeasure: Remeasure | None = None,
    outdir: Path = Path(),
) -> None:
    if not opts.baseline:
        return
    spec = opts.baseline.strip()
    try:
        base = resolve_baseline(spec, history, doc["scenario"], doc.get("run_id"), doc)
    except InputError as exc:
        if spec == "last" or spec.startswith("median:"):
            out.notes.append(f"no comparison: {exc}")
            return
        raise
    throughput = parse_tolerance(opts.tolerance) if opts.tolerance else None
    noise = spreads(history, doc, doc.get("run_id")) if history is not None else None
    out.verdicts = compare(doc, base, tolerances_from_doc(doc, throughput), noise, opts.page_on)
    again = confirm.to_confirm(out.verdicts) if opts.confirm and remeasure else []
    out.baseline_id = str(base.get("run_id") or opts.baseline)
    if not again or remeasure is None:
        _record(doc, base, spec, opts, out)
        return
    # what stands if the second measurement never returns (netrun is SIGKILLed): the
    # remeasure callback saves it first (netrun.job.Again)
    first = out.verdicts
    out.verdicts = confirm.settle(first, None, KILLED)
    _record(doc, base, spec, opts, out, {"tests": again, "run_id": None, "unavailable": KILLED})
    found, where, why_none = remeasure(again)
    verdicts, figures = None, {}
    if found is not None:
        tolerances = tolerances_from_doc(found, throughput)
        verdicts = compare(found, base, tolerances, noise, opts.page_on)
        figures = {v.test: figure(found, v.test, v.metric) for v in first if v.test in again}
    out.verdicts = confirm.settle(first, verdicts, why_none, figures)
    second: dict[str, Any] = {"tests": again, "run_id": (found or {}).get("run_id")}
    if where is not None:  # beside the run's own results: the folder moves as one
        second["results"] = str(
            where.relative_to(outdir) if where.is_relative_to(outdir) else where
        )
    else:
        second["unavailable"] = why_none
    _record(doc, base, spec, opts, out, second)


def _record(
    doc: dict[str, Any],
    base: dict[str, Any],
    spec: str,
    opts: PublishOptions,
    out: Published,
    second: dict[str, Any] | None = None,
) -> None:
    """The run's ``baseline`` record: what it was compared with, and the verdicts."""
    doc["baseline"] = {
        "run_id": out.baseline_id,
        "started": base.get("started"),
        "spec": spec,
        **{k: base[k] for k in ("median_of", "tests_from", "unusable") if base.get(k)},
        "context_changes": context.records(context.changes(base, doc)),
        "page_on": list(opts.page_on),
        "verdicts": [why.record(v) for v in out.verdicts],
        **({"confirmation": second} if second else {}),
    }


def _plots(
    doc: dict[str, Any], outdir: Path, history: History | None, opts: PublishOptions
) -> list[Path]:
    from netrun.report.plots import figures as plots
    from netrun.report.plots.mtu import plot_mtu

    files = plots.plot_all(doc, outdir)
    files += plot_mtu(doc, outdir)  # when the scenario swept mtu:
    if history is not None:
        from netrun.report.plots.trend import trend_plots

        throughput = parse_tolerance(opts.tolerance) if opts.tolerance else None
        files += trend_plots(doc, outdir, history, throughput)
    return files


def export(doc: dict[str, Any], opts: PublishOptions, out: Published, exit_code: int) -> None:
    """Write the Prometheus textfile and the JUnit XML, once the run's exit code is known
    (netrun_run_exit_code); what went wrong goes to ``out.problems``."""
    if opts.prometheus is not None:
        try:
            previous = _previous_success(opts.prometheus, str(doc.get("scenario")))
            text = exporters.prometheus_text(doc, out.verdicts, previous, exit_code)
            out.files.append(exporters.write_atomic(opts.prometheus, text))
        except (OSError, NetrunError) as exc:
            out.problems.append(f"{opts.prometheus}: not written ({exc})")
    if opts.junit is not None:
        try:
            xml = exporters.junit_xml(doc, out.verdicts, opts.fail_on_flags)
            out.files.append(exporters.write_atomic(opts.junit, xml))
        except (OSError, NetrunError) as exc:
            out.problems.append(f"{opts.junit}: not written ({exc})")


def export_nothing_ran(
    prometheus: Path | None, junit: Path | None, scenario: str, exit_code: int, error: str
) -> list[str]:
    """A run that ended before measuring (exit 2, 75) replaces what it was asked to write, so
    no earlier run's figures or passing JUnit stay to be published again: the textfile says
    its exit code (the last success carried over), the JUnit its error. Problems, if any."""
    problems = []
    when = datetime.now(UTC).timestamp()
    if prometheus is not None:
        try:
            previous = _previous_success(prometheus, scenario)
            text = exporters.nothing_ran_text(scenario, exit_code, when, previous)
            exporters.write_atomic(prometheus, text)
        except (OSError, NetrunError) as exc:
            problems.append(f"{prometheus}: not written ({exc})")
    if junit is not None:
        doc = {"scenario": scenario, "status": f"exit {exit_code}", "errors": [error], "tests": []}
        try:
            exporters.write_atomic(junit, exporters.junit_xml(doc))
        except (OSError, NetrunError) as exc:
            problems.append(f"{junit}: not written ({exc})")
    return problems


def _previous_success(path: Path, scenario: str) -> float | None:
    """The scenario's last success in the textfile an earlier run left, if any."""
    if not path.exists():
        return None
    return exporters.previous_last_success(path.read_text(encoding="utf-8"), scenario)
