"""netrun.results.stats against published t tables, hand-computed summaries and real results.json.

Reference t values are the two-sided critical values of a standard Student t table (e.g.
NIST/SEMATECH e-Handbook 1.3.6.7.2). When scipy is installed the quantile is also checked
against ``scipy.stats.t.ppf`` over a wide range of degrees of freedom.
"""

from __future__ import annotations

import json
import math
import statistics

import pytest

from netrun.results.stats import (
    MIN_CI_SAMPLES,
    Summary,
    betainc,
    group_summaries,
    ok_values,
    outliers,
    quartiles,
    summarize,
    t_cdf,
    t_critical,
)
from tests.conftest import HISTORY_FIXTURES, RESULTS_FIXTURES

# df -> (90%, 95%, 99%) two-sided critical values, from a published t table.
T_TABLE = {
    1: (6.314, 12.706, 63.657),
    2: (2.920, 4.303, 9.925),
    3: (2.353, 3.182, 5.841),
    4: (2.132, 2.776, 4.604),
    5: (2.015, 2.571, 4.032),
    6: (1.943, 2.447, 3.707),
    7: (1.895, 2.365, 3.499),
    8: (1.860, 2.306, 3.355),
    9: (1.833, 2.262, 3.250),
    10: (1.812, 2.228, 3.169),
    15: (1.753, 2.131, 2.947),
    20: (1.725, 2.086, 2.845),
    25: (1.708, 2.060, 2.787),
    29: (1.699, 2.045, 2.756),
    30: (1.697, 2.042, 2.750),
    40: (1.684, 2.021, 2.704),
    60: (1.671, 2.000, 2.660),
    100: (1.660, 1.984, 2.626),
    120: (1.658, 1.980, 2.617),
}


@pytest.mark.parametrize("df", sorted(T_TABLE))
def test_t_critical_matches_published_table(df: int) -> None:
    for confidence, expected in zip((0.90, 0.95, 0.99), T_TABLE[df], strict=True):
        assert t_critical(df, confidence) == pytest.approx(expected, abs=6e-4)


def test_t_critical_tends_to_the_normal_quantile() -> None:
    assert t_critical(1_000_000) == pytest.approx(1.959964, abs=1e-4)
    assert t_critical(1_000_000, 0.99) == pytest.approx(2.575829, abs=1e-4)


def test_t_critical_is_the_inverse_of_the_cdf() -> None:
    for df in (1, 2, 3, 7.5, 31, 250):
        t = t_critical(df)
        assert t_cdf(t, df) == pytest.approx(0.975, abs=1e-10)
        assert t_cdf(-t, df) == pytest.approx(0.025, abs=1e-10)


def test_t_cdf_closed_forms() -> None:
    # df=1 is the Cauchy distribution, df=2 has F(t) = 1/2 + t / (2 sqrt(2 + t^2)).
    for t in (-3.0, -0.5, 0.0, 0.7, 4.0):
        assert t_cdf(t, 1) == pytest.approx(0.5 + math.atan(t) / math.pi, abs=1e-12)
        assert t_cdf(t, 2) == pytest.approx(0.5 + t / (2 * math.sqrt(2 + t * t)), abs=1e-12)


def test_betainc_known_values() -> None:
    # I_x(1, 1) = x; I_x(a, 1) = x^a; I_x(1, b) = 1 - (1 - x)^b; symmetry I_x(a,b) = 1 - I_1-x(b,a).
    assert betainc(1, 1, 0.3) == pytest.approx(0.3)
    assert betainc(2.5, 1, 0.4) == pytest.approx(0.4**2.5)
    assert betainc(1, 3, 0.2) == pytest.approx(1 - 0.8**3)
    assert betainc(2, 5, 0.3) == pytest.approx(1 - betainc(5, 2, 0.7))
    assert betainc(2, 5, 0.0) == 0.0 and betainc(2, 5, 1.0) == 1.0


def test_t_critical_against_scipy() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    for df in [*range(1, 61), 75, 100, 500, 10_000]:
        for confidence in (0.8, 0.9, 0.95, 0.99, 0.999):
            expected = scipy_stats.t.ppf(0.5 + confidence / 2, df)
            assert t_critical(df, confidence) == pytest.approx(expected, rel=1e-8)


def test_t_critical_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError):
        t_critical(0)
    with pytest.raises(ValueError):
        t_critical(5, 1.0)


def test_summarize_three_values_by_hand() -> None:
    s = summarize([940e6, 950e6, 960e6])
    assert s is not None
    assert (s.n, s.median, s.mean, s.min, s.max) == (3, 950e6, 950e6, 940e6, 960e6)
    assert s.stdev == pytest.approx(10e6)
    half = 4.303 * 10e6 / math.sqrt(3)  # t(0.975, 2) from the table
    assert s.ci_low == pytest.approx(950e6 - half, rel=1e-4)
    assert s.ci_high == pytest.approx(950e6 + half, rel=1e-4)
    assert s.values == (940e6, 950e6, 960e6)


def test_summarize_even_count_median_and_ci() -> None:
    s = summarize([4, 1, 3, 2])
    assert s is not None
    assert s.median == 2.5 and s.mean == 2.5
    assert s.stdev == pytest.approx(statistics.stdev([1, 2, 3, 4]))
    assert s.ci_high - s.mean == pytest.approx(3.182 * s.stdev / 2, rel=1e-3)


def test_summarize_single_and_empty() -> None:
    one = summarize([5.0])
    assert one == Summary(1, 5.0, 5.0, None, 5.0, 5.0, None, None, (5.0,))
    assert summarize([]) is None


def test_summary_round_trips_through_json() -> None:
    s = summarize([1.0, 2.0, 4.0])
    assert s is not None
    assert Summary.from_dict(json.loads(json.dumps(s.to_dict()))) == s


def test_quartiles_match_linear_interpolation() -> None:
    # numpy.percentile([1..8], [25, 75]) == [2.75, 6.25]
    assert quartiles([1, 2, 3, 4, 5, 6, 7, 8]) == (2.75, 6.25)


def test_outliers_flags_both_sides_and_keeps_order() -> None:
    # Q1 = 10, Q3 = 11.5, IQR = 1.5 -> fences 7.75 and 13.75.
    values = [10, 11, 12, 11, 10, 50, 1]
    assert outliers(values) == [5, 6]
    assert values == [10, 11, 12, 11, 10, 50, 1]  # flagged, never dropped


def test_outliers_none_for_tight_or_tiny_sets() -> None:
    assert outliers([940, 941, 939, 940]) == []
    assert outliers([1, 1000]) == []
    assert outliers([]) == []


def test_group_summaries_on_a_real_run() -> None:
    doc = json.loads((HISTORY_FIXTURES / "baremetal-1" / "results.json").read_text())
    groups = group_summaries(doc)
    assert list(groups) == ["tcp-forward", "tcp-reverse", "tcp-4-streams", "udp-500m"]
    fwd = [t["throughput_bps"] for t in doc["tests"] if t["name"] == "tcp-forward"]
    assert groups["tcp-forward"]["throughput_bps"].median == statistics.median(fwd)
    assert groups["tcp-forward"]["throughput_bps"].n == 3
    assert set(groups["tcp-forward"]) == {"throughput_bps", "retransmits"}  # TCP: no jitter
    assert set(groups["udp-500m"]) == {"throughput_bps", "jitter_ms", "lost_percent"}


def test_group_summaries_skips_failed_samples() -> None:
    doc = {
        "tests": [
            {"name": "a", "status": "ok", "throughput_bps": 100.0},
            {"name": "a", "status": "failed", "throughput_bps": None},
            {"name": "a", "status": "ok", "throughput_bps": 300.0},
            {"name": "b", "status": "failed", "throughput_bps": None},
        ]
    }
    groups = group_summaries(doc)
    assert groups["a"]["throughput_bps"].values == (100.0, 300.0)
    assert groups["b"] == {}


def test_summary_ci_against_scipy() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    doc = json.loads((HISTORY_FIXTURES / "baremetal-2" / "results.json").read_text())
    for name, metrics in group_summaries(doc).items():
        s = metrics["throughput_bps"]
        low, high = scipy_stats.t.interval(
            0.95, s.n - 1, loc=statistics.fmean(s.values), scale=scipy_stats.sem(s.values)
        )
        assert (s.ci_low, s.ci_high) == (pytest.approx(low), pytest.approx(high)), name


def test_two_values_give_no_ci() -> None:
    """Student t with one degree of freedom: a real 2-repeat netperf run's longest
    transaction (tests/fixtures/results/netperf-lab) would read -23633 to 59465 us."""
    s = summarize([14646.0, 21186.0])
    assert s is not None and s.stdev is not None
    assert (s.ci_low, s.ci_high) == (None, None)
    assert MIN_CI_SAMPLES == 3


def test_a_metric_that_cannot_be_negative_gets_no_negative_bound() -> None:
    """The real 3-repeat run's longest transactions (us): t gives a low bound below 0."""
    doc = json.loads((RESULTS_FIXTURES / "netperf-lab" / "results.json").read_text())
    values = ok_values([t for t in doc["tests"] if t["name"] == "rr-3"], "latency_max_us")
    s = summarize(values)
    assert s is not None and s.ci_low is not None and s.ci_high is not None
    half = t_critical(2) * statistics.stdev(values) / math.sqrt(3)
    assert s.mean - half < 0 and s.ci_low == 0.0
    assert s.ci_high == pytest.approx(s.mean + half)
    signed = summarize([-1.0, 2.0, 40.0])  # a difference (latency added) may be negative
    assert signed is not None and signed.ci_low is not None and signed.ci_low < 0
