"""Regression verdicts: tonight's run against a baseline run, test by test.

Repeats are noisy, so a verdict is not a bare threshold on one number. With at least two
samples on both sides, throughput counts as regressed only when the median dropped by more
than the tolerance AND the current 95% confidence interval lies wholly below the baseline's
(improved is the mirror image). A change beyond the tolerance whose intervals overlap is
"noisy": worth a look, not an alarm. With a single sample on either side only the threshold
is left. Loss, jitter and retransmits have optional absolute limits: a rise of the median
beyond the limit is a regression.

Verdicts, worst first:
- ``failed``: the current run has a failed sample of this test (the runner already reports
  it; the verdict says so rather than guessing a delta from the samples that passed);
- ``regressed``, ``noisy``, ``improved``, ``ok``: as above;
- ``new``: the baseline has no successful sample of this test, so there is nothing to
  compare. Tests only in the baseline are not listed (the run skipped them, e.g. --limit).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from netrun import results
from netrun.errors import InputError, NetrunError
from netrun.history import History, UnknownRunError
from netrun.stats import Summary, ok_values, samples_by_test, summarize

VERDICTS = ("failed", "regressed", "noisy", "improved", "ok", "new")  # worst first
DEFAULT_TOLERANCE = "5%"
PERCENT_RE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*%\s*")


def parse_tolerance(value: object) -> float:
    """ "5%" -> 0.05. Only a percentage is accepted: a bare 5 is ambiguous (5% or 500%?)."""
    match = PERCENT_RE.fullmatch(value) if isinstance(value, str) else None
    fraction = float(match.group(1)) / 100 if match else -1.0
    if not 0.0 <= fraction <= 1.0:
        raise InputError(f"tolerance must be a percentage such as 5%, got {value!r}")
    return fraction


@dataclass(frozen=True)
class Tolerances:
    """How much change is accepted: throughput as a fraction, the others as absolute rises."""

    throughput: float = 0.05
    loss: float | None = None  # percentage points of UDP loss
    jitter_ms: float | None = None
    retransmits: float | None = None


def tolerances_from_doc(
    doc: dict[str, Any], throughput: float | None = None
) -> Callable[[str], Tolerances]:
    """Per test tolerances from the options the run recorded (tolerance, loss_tolerance, ...).

    ``throughput`` (a fraction, e.g. from a CLI flag) overrides every test's tolerance.
    """
    per_test: dict[str, Tolerances] = {}
    for name, samples in samples_by_test(doc).items():
        opts = samples[0].get("options") or {}
        per_test[name] = Tolerances(
            throughput=parse_tolerance(opts.get("tolerance") or DEFAULT_TOLERANCE),
            loss=opts.get("loss_tolerance"),
            jitter_ms=opts.get("jitter_tolerance"),
            retransmits=opts.get("retransmits_tolerance"),
        )

    def lookup(test: str) -> Tolerances:
        found = per_test.get(test, Tolerances())
        return found if throughput is None else replace(found, throughput=throughput)

    return lookup


@dataclass(frozen=True)
class Verdict:
    """The verdict on one test; ``delta_pct`` is the change of the throughput median in %."""

    test: str
    verdict: str
    delta_pct: float | None
    detail: str


def _mbit(bps: float) -> str:
    return f"{bps / 1e6:.1f}"


def _throughput(cur: Summary, base: Summary, tol: float) -> tuple[str, float | None, str]:
    """Verdict, delta % and detail for the throughput medians of one test."""
    if base.median <= 0:
        return "new", None, "baseline throughput is 0; nothing to compare"
    delta = (cur.median - base.median) / base.median
    text = (
        f"throughput {_mbit(cur.median)} vs {_mbit(base.median)} Mbit/s "
        f"({delta * 100:+.1f}%, tolerance {tol * 100:g}%)"
    )
    if abs(delta) <= tol:
        return "ok", delta * 100, text
    with_ci = cur.n >= 2 and base.n >= 2
    if not with_ci:
        verdict = "regressed" if delta < 0 else "improved"
        return verdict, delta * 100, text + f"; single sample (n={cur.n} vs {base.n}), no CI"
    assert cur.ci_low is not None and cur.ci_high is not None
    assert base.ci_low is not None and base.ci_high is not None
    cis = (
        f"95% CI [{_mbit(cur.ci_low)}, {_mbit(cur.ci_high)}] vs "
        f"[{_mbit(base.ci_low)}, {_mbit(base.ci_high)}]"
    )
    if delta < 0 and cur.ci_high < base.ci_low:
        return "regressed", delta * 100, f"{text}; {cis} do not overlap"
    if delta > 0 and cur.ci_low > base.ci_high:
        return "improved", delta * 100, f"{text}; {cis} do not overlap"
    return "noisy", delta * 100, f"{text}; {cis} overlap"


LIMITS = (
    ("lost_percent", "loss", "UDP loss", "points", "{:.2f}"),
    ("jitter_ms", "jitter_ms", "jitter", "ms", "{:.3f}"),
    ("retransmits", "retransmits", "retransmits", "", "{:g}"),
)


def _limits(
    cur: Sequence[dict[str, Any]], base: Sequence[dict[str, Any]], tol: Tolerances
) -> list[str]:
    """One message per metric whose median rose beyond its limit."""
    breaches: list[str] = []
    for metric, field, label, unit, fmt in LIMITS:
        limit = getattr(tol, field)
        now, before = summarize(ok_values(cur, metric)), summarize(ok_values(base, metric))
        if limit is None or now is None or before is None:
            continue
        rise = now.median - before.median
        if rise > limit:
            show = " ".join(x for x in (fmt.format(rise), unit) if x)
            breaches.append(
                f"{label} rose by {show} ({fmt.format(before.median)} -> "
                f"{fmt.format(now.median)}), limit {limit:g}"
            )
    return breaches


def compare_test(
    name: str, cur: Sequence[dict[str, Any]], base: Sequence[dict[str, Any]], tol: Tolerances
) -> Verdict:
    """The verdict on one test from its current and baseline samples."""
    failed = [s for s in cur if s.get("status") != "ok"]
    now = summarize(ok_values(cur, "throughput_bps"))
    before = summarize(ok_values(base, "throughput_bps"))
    if before is None:
        verdict, delta, detail = "new", None, "no successful baseline sample to compare with"
    elif now is None:
        verdict, delta, detail = "failed", None, "no successful sample"
    else:
        verdict, delta, detail = _throughput(now, before, tol.throughput)
    breaches = _limits(cur, base, tol) if before is not None else []
    if breaches and verdict in ("ok", "improved", "noisy"):
        verdict = "regressed"
    detail = "; ".join([detail, *breaches])
    if failed:
        error = failed[0].get("error") or "failed"
        detail = f"{len(failed)} of {len(cur)} samples failed ({error}); {detail}"
        verdict = "failed"
    return Verdict(name, verdict, delta, detail)


def compare(
    current_doc: dict[str, Any],
    baseline_doc: dict[str, Any],
    tolerances: Callable[[str], Tolerances] | Tolerances | None = None,
) -> list[Verdict]:
    """Verdicts for every test of the current run, in its order (see the module docstring).

    ``tolerances`` defaults to what each test recorded in the current run's options.
    """
    if tolerances is None:
        tolerances = tolerances_from_doc(current_doc)
    baseline = samples_by_test(baseline_doc)
    out: list[Verdict] = []
    for name, samples in samples_by_test(current_doc).items():
        tol = tolerances if isinstance(tolerances, Tolerances) else tolerances(name)
        if name not in baseline:
            out.append(Verdict(name, "new", None, "not in the baseline run"))
            continue
        out.append(compare_test(name, samples, baseline[name], tol))
    return out


def worst(verdicts: Sequence[Verdict]) -> str | None:
    """The worst verdict of a list (``failed`` > ``regressed`` > ... > ``new``), or None."""
    found = {v.verdict for v in verdicts}
    return next((v for v in VERDICTS if v in found), None)


def resolve_baseline(
    spec: str, history: History | None, scenario: str, current_run_id: str | None = None
) -> dict[str, Any]:
    """The baseline results document for ``spec``: "last", a stored run id (or prefix), or
    a path to a results.json or run folder. A baseline that does not exist is an InputError.
    """
    spec = spec.strip()
    hint = "list stored runs with `netrun history`"
    if spec == "last":
        if history is None:
            raise InputError("baseline 'last' needs the history database; pass a results path")
        row = history.last_run(scenario, before=current_run_id)
        if row is None:
            raise InputError(
                f"baseline 'last': no earlier stored run of scenario '{scenario}'; "
                f"run it once first, or {hint}"
            )
        return history.get_run(row.run_id)
    path = Path(spec).expanduser()
    if path.exists():
        try:
            return results.load(path)
        except NetrunError as exc:
            raise InputError(f"baseline {spec!r}: {exc}") from None
    looks_like_path = "/" in spec or spec.endswith(".json") or spec.startswith((".", "~"))
    if history is None or looks_like_path:
        raise InputError(f"baseline {spec!r}: no such results file or run folder; {hint}")
    try:
        doc = history.get_run(spec)
    except UnknownRunError as exc:
        raise InputError(f"baseline {spec!r}: {exc}") from None
    if current_run_id is not None and doc.get("run_id") == current_run_id:
        raise InputError(f"baseline {spec!r} is the current run itself; {hint}")
    return doc
