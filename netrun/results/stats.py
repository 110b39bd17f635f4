"""Statistics over repeated samples: median, mean, a 95% confidence interval, outliers.

A benchmark that repeats a test N times gets N throughput values; a single number hides how
noisy they were. ``summarize`` gives the median (what reports show), the mean with a
Student-t confidence interval (what regression verdicts compare; from 3 repeats on) and the
spread. No scipy at runtime: the t quantile comes from the regularized incomplete beta
function, inverted by bisection."""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from netrun.core.metrics import finite

METRICS = ("throughput_bps", "jitter_ms", "lost_percent", "retransmits")
#: Fewer samples than this give no confidence interval: with two, Student's t has one
#: degree of freedom (t = 12.7) and the interval says nothing but "anything".
MIN_CI_SAMPLES = 3


@dataclass(frozen=True)
class Summary:
    """Summary of one metric's samples; ``stdev`` is None for a single sample, the CI for
    fewer than MIN_CI_SAMPLES."""

    n: int
    median: float
    mean: float
    stdev: float | None
    min: float
    max: float
    ci_low: float | None
    ci_high: float | None
    values: tuple[float, ...]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view (values as a list)."""
        return {
            "n": self.n,
            "median": self.median,
            "mean": self.mean,
            "stdev": self.stdev,
            "min": self.min,
            "max": self.max,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "values": list(self.values),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Summary:
        """The inverse of ``to_dict``."""
        return cls(**{**data, "values": tuple(data.get("values", ()))})


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction for the incomplete beta function (modified Lentz's method)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 1000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), for 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(ln_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom."""
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


@functools.lru_cache(maxsize=512)
def t_critical(df: float, confidence: float = 0.95) -> float:
    """The two-sided critical value t such that P(|T| <= t) = ``confidence``.

    Solves I_x(df/2, 1/2) = 1 - confidence for x by bisection (I is increasing in x), then
    t = sqrt(df (1 - x) / x). Accurate to ~1e-12, checked against published t tables.
    """
    if df <= 0:
        raise ValueError(f"degrees of freedom must be positive, got {df}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    alpha = 1.0 - confidence
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if betainc(df / 2.0, 0.5, mid) < alpha:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-17:
            break
    x = (lo + hi) / 2.0
    return math.sqrt(df * (1.0 - x) / x)


def summarize(values: Sequence[float], confidence: float = 0.95) -> Summary | None:
    """Summary of ``values`` with a Student-t CI of the mean; None when there are none.

    No CI from fewer than MIN_CI_SAMPLES values. Where no value is negative (a rate, a
    time, a count) the interval stops at 0: the t interval is symmetric and would otherwise
    claim a negative mean it cannot have.
    """
    vals = tuple(float(v) for v in values)
    n = len(vals)
    if n == 0:
        return None
    mean = statistics.fmean(vals)
    stdev: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    if n >= 2:
        stdev = statistics.stdev(vals)
    if stdev is not None and n >= MIN_CI_SAMPLES:
        half = t_critical(n - 1, confidence) * stdev / math.sqrt(n)
        ci_low, ci_high = mean - half, mean + half
        if min(vals) >= 0:
            ci_low = max(ci_low, 0.0)
    return Summary(
        n=n,
        median=statistics.median(vals),
        mean=mean,
        stdev=stdev,
        min=min(vals),
        max=max(vals),
        ci_low=ci_low,
        ci_high=ci_high,
        values=vals,
    )


def quartiles(values: Sequence[float]) -> tuple[float, float]:
    """Q1 and Q3 by linear interpolation between order statistics (numpy's default)."""
    q = statistics.quantiles([float(v) for v in values], n=4, method="inclusive")
    return q[0], q[2]


def outliers(values: Sequence[float]) -> list[int]:
    """Indices of values outside [Q1 - 1.5 IQR, Q3 + 1.5 IQR]: flagged for the reader.

    Never used to drop samples: a slow repeat is a finding, not noise to hide. Fewer than
    three values have no meaningful quartiles, so nothing is flagged.
    """
    if len(values) < 3:
        return []
    q1, q3 = quartiles(values)
    spread = 1.5 * (q3 - q1)
    low, high = q1 - spread, q3 + spread
    return [i for i, v in enumerate(values) if v < low or v > high]


def ok_values(samples: Sequence[dict[str, Any]], metric: str) -> list[float]:
    """The non-null values of ``metric`` over the samples whose status is ok: the sample's
    own field of that name (schema 1's, which scripts may have edited), else its
    ``metrics`` (schema 2)."""
    out: list[float] = []
    for s in samples:
        found = s.get("metrics")
        value = s.get(metric)
        if value is None and isinstance(found, dict):
            value = found.get(metric)
        if s.get("status") == "ok" and (number := finite(value)) is not None:
            out.append(number)
    return out


def samples_by_test(doc: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """A results document's samples grouped by test name, in the order tests first ran."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for sample in doc.get("tests", []):
        grouped.setdefault(str(sample.get("name")), []).append(sample)
    return grouped


def group_summaries(doc: dict[str, Any]) -> dict[str, dict[str, Summary]]:
    """Per test name, a Summary of each metric in METRICS over its OK samples.

    A metric that no OK sample reports (jitter on TCP, retransmits on UDP) is left out, and
    a test whose samples all failed maps to an empty dict.
    """
    result: dict[str, dict[str, Summary]] = {}
    for name, samples in samples_by_test(doc).items():
        metrics: dict[str, Summary] = {}
        for metric in METRICS:
            summary = summarize(ok_values(samples, metric))
            if summary is not None:
                metrics[metric] = summary
        result[name] = metrics
    return result
