"""Why a test got its verdict, in one phrase, from the saved verdict alone.

Every output that names a verdict (the text, markdown and HTML tables, JUnit, Prometheus,
`netrun history`, the -q summary line) says why through ``reason``, so they never disagree:
the deciding metric, its baseline and current values, the limit, and the cause when the
verdict names one (``regressed: lost_percent 0.10 -> 6.70 % (+6.60), limit 1 points``).
A verdict saved before these fields existed falls back to the part of its detail that
judged it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from netrun.core.metrics import Metric, finite
from netrun.history.regress import Verdict

#: What a verdict records beyond test, verdict, delta_pct and detail (results.json
#: baseline.verdicts[]): the deciding metric's values, its limit, what noise widened it
#: to, the cause (netrun.history.judge.CAUSES) and whether it pages (exits 3).
FIELDS = (
    "metric", "before", "after", "limit", "noise", "cause", "cause_detail", "pages",
    "confirmation",
)  # fmt: skip
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
    if said := _confirmation(verdict):
        text += f"; {said}"
    if cause:  # a cause key, and what showed it when the verdict says
        detail = _get(verdict, "cause_detail")
        text += f"; cause: {cause}" + (f" ({detail})" if detail else "")
    return text


#: How a verdict's detail begins what a second measurement said (netrun.history.confirm).
SECOND = ("confirmed by a second measurement", "not confirmed:", "a second measurement could")


def _confirmation(verdict: Any) -> str:
    """What a second measurement said of a regression that would have paged, "" if none."""
    if not _get(verdict, "confirmation"):
        return ""
    parts = str(_get(verdict, "detail") or "").split("; ")
    return next((p for p in reversed(parts) if p.startswith(SECOND)), "")


def reasons(
    verdicts: Sequence[Any] | None, declared: Mapping[str, Metric] | None = None
) -> dict[str, str]:
    """Test name -> reason, for the tests whose verdict has one."""
    out = {}
    for v in verdicts or ():
        if text := reason(v, declared):
            out[str(_get(v, "test"))] = text
    return out
