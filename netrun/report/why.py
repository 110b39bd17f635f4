"""Why a test got its verdict, in one phrase, from the saved verdict alone.

Every output that names a verdict (the text, markdown and HTML tables, JUnit, Prometheus,
`netrun history`, the -q summary line) says why through ``reason``, so they never disagree:
the deciding metric, its baseline and current values, the limit, and the cause when the
verdict names one (``regressed: lost_percent 0.10 -> 6.70 % (+6.60), limit 1 points``).
A verdict saved before these fields existed falls back to the part of its detail that
judged it. A regression that would have paged and was measured again
(netrun.history.confirm) is marked in every verdict cell (``regressed ✓``, ``noisy ✗``,
``regressed ?``: ``mark``, with a ``legend`` line under the table), and its reason gives
the second measurement's figure beside the first's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from netrun.core.metrics import Metric, finite
from netrun.history.confirm import CONFIRMED, NOT_CONFIRMED, UNCONFIRMED
from netrun.history.regress import Verdict

#: What a verdict records beyond test, verdict, delta_pct and detail (results.json
#: baseline.verdicts[]): the deciding metric's values, its limit, what noise widened it
#: to, the cause (netrun.history.judge.CAUSES), whether it pages (exits 3), and what a
#: second measurement said and read (netrun.history.confirm).
FIELDS = (
    "metric", "before", "after", "limit", "noise", "cause", "cause_detail", "pages",
    "confirmation", "again",
)  # fmt: skip
#: The verdict cell's mark of a regression that would have paged and was measured again,
#: and what it means (a line under each table that shows one: legend).
MARKS = {CONFIRMED: "✓", NOT_CONFIRMED: "✗", UNCONFIRMED: "?"}
MEANS = {
    CONFIRMED: "confirmed: it pages",
    NOT_CONFIRMED: "not confirmed: noisy, pages nobody",
    UNCONFIRMED: "the second could not judge it: it pages",
}
#: Verdicts that carry a reason worth printing (ok, new and incomparable say enough).
EXPLAINED = ("failed", "regressed", "regression", "noisy", "improved")


def _get(verdict: Any, key: str) -> Any:
    if isinstance(verdict, Mapping):
        return verdict.get(key)
    return getattr(verdict, key, None)


def record(verdict: Any) -> dict[str, Any]:
    """A verdict as results.json keeps it: the four old keys, then FIELDS that are known."""
    out = {k: _get(verdict, k) for k in ("test", "verdict", "delta_pct", "detail")}
    out.update({k: _get(verdict, k) for k in FIELDS if _get(verdict, k) is not None})
    if not out.get("confirmation"):  # only a paging regression was measured again
        out.pop("confirmation", None)
    return out


def stored(doc: Mapping[str, Any]) -> list[Verdict] | None:
    """The verdicts a results document saved from its baseline comparison (None: none)."""
    base = doc.get("baseline")
    if not isinstance(base, Mapping):
        return None
    out = []
    for v in base.get("verdicts") or ():
        if not isinstance(v, Mapping):
            continue
        text = {
            k: None if v.get(k) is None else str(v.get(k))
            for k in ("metric", "limit", "cause", "noise", "cause_detail", "confirmation")
        }
        out.append(
            Verdict(
                str(v.get("test")),
                str(v.get("verdict")),
                finite(v.get("delta_pct")),
                str(v.get("detail") or ""),
                metric=text["metric"],
                before=finite(v.get("before")),
                after=finite(v.get("after")),
                limit=text["limit"],
                noise=text["noise"] or "",
                cause=text["cause"],
                cause_detail=text["cause_detail"] or "",
                confirmation=text["confirmation"] or "",
                again=finite(v.get("again")),
                # saved before causes were judged: every regression paged
                pages=v["pages"] is True if "pages" in v else v.get("verdict") == "regressed",
            )
        )
    return out


def _fallback(detail: str) -> str:
    """The part of an old verdict's detail that judged it (a breach, else its first part)."""
    parts = [p.strip() for p in detail.split(";") if p.strip()]
    judged = [p for p in parts if " by " in p and "limit" in p]
    return (judged or parts or [""])[0]


def _value(metric: Metric | None, value: float) -> str:
    if metric is None:
        return f"{value:g}"
    return metric.show(value)


def _change(metric: Metric | None, before: float, after: float, limit: str) -> str:
    """The change as its limit counts it: in % for a relative limit, else in the unit
    (percentage points for a metric in %)."""
    if limit.endswith("%") and before:
        return f"{(after - before) / abs(before) * 100:+.1f}%"
    unit = (metric.shown_unit or metric.unit) if metric else ""
    sign = "+" if after >= before else "-"
    size = _value(metric, abs(after - before))
    return f"{sign}{size} {'points' if unit == '%' else unit}".rstrip()


def reason(verdict: Any, declared: Mapping[str, Metric] | None = None) -> str:
    """Why the verdict is what it is, in one phrase; "" for ok, new and incomparable.

    ``declared``: the run's metric declarations (metrics.declared), to show the values in
    the unit people read them in (Mbit/s rather than bit/s)."""
    kind = str(_get(verdict, "verdict") or "")
    if kind not in EXPLAINED:
        return ""
    name, before, after = _get(verdict, "metric"), _get(verdict, "before"), _get(verdict, "after")
    cause = _get(verdict, "cause")
    if kind == "failed" or name is None or before is None or after is None:
        text = _fallback(str(_get(verdict, "detail") or ""))
        delta = _get(verdict, "delta_pct")
        if not text and isinstance(delta, int | float):
            text = f"headline {delta:+.1f}%"
    else:
        metric = (declared or {}).get(str(name))
        unit = (metric.shown_unit or metric.unit) if metric else ""
        limit = _get(verdict, "limit")
        text = f"{name} {_value(metric, before)} -> {_value(metric, after)} {unit}".rstrip()
        text += f" ({_change(metric, before, after, str(limit or '%'))})"
        if limit:
            text += f", limit {limit}"
    if said := _confirmation(verdict, (declared or {}).get(str(name))):
        text += f"; {said}"
    if cause:  # a cause key, and what showed it when the verdict says
        detail = _get(verdict, "cause_detail")
        text += f"; cause: {cause}" + (f" ({detail})" if detail else "")
    return text


#: How a verdict's detail begins what a second measurement said (netrun.history.confirm).
SECOND = ("confirmed by a second measurement", "not confirmed:", "a second measurement could")


def _confirmation(verdict: Any, metric: Metric | None) -> str:
    """What a second measurement said of a regression that would have paged, "" if none:
    its figure of the same metric (``again``) when known, else its phrase in the detail."""
    said = str(_get(verdict, "confirmation") or "")
    if not said:
        return ""
    again, before = _get(verdict, "again"), _get(verdict, "before")
    if said in (CONFIRMED, NOT_CONFIRMED) and again is not None and before is not None:
        unit = (metric.shown_unit or metric.unit) if metric else ""
        figure = f"{_value(metric, again)} {unit}".rstrip()
        figure += f" ({_change(metric, before, again, str(_get(verdict, 'limit') or '%'))})"
        if said == CONFIRMED:
            return f"confirmed by a second measurement: {figure}"
        return f"not confirmed: a second measurement read {figure}"
    parts = str(_get(verdict, "detail") or "").split("; ")
    return next((p for p in reversed(parts) if p.startswith(SECOND)), "")


def mark(verdict: str, confirmation: str | None) -> str:
    """The verdict cell: the verdict, and its MARKS sign when it was measured again."""
    sign = MARKS.get(confirmation or "")
    return f"{verdict} {sign}" if sign else verdict


def legend(confirmations: Iterable[str | None]) -> list[str]:
    """The line under a table whose verdict cells carry MARKS: what each sign shown means."""
    used = set(confirmations)
    said = [f"{MARKS[k]} {MEANS[k]}" for k in MARKS if k in used]
    if not said:
        return []
    return [
        f"verdict {'; '.join(said)} (a regression that would page is measured again at "
        "once; its reason gives both figures)"
    ]


def reasons(
    verdicts: Sequence[Any] | None, declared: Mapping[str, Metric] | None = None
) -> dict[str, str]:
    """Test name -> reason, for the tests whose verdict has one."""
    out = {}
    for v in verdicts or ():
        if text := reason(v, declared):
            out[str(_get(v, "test"))] = text
    return out
