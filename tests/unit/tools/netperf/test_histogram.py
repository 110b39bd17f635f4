"""netperf's -v 2 histogram: rows read, histograms pooled, percentiles by numeric's rule."""

from __future__ import annotations

import pytest

from netrun.core.numeric import percentile as numeric_percentile
from netrun.tools.netperf import histogram
from netrun.tools.netperf.histogram import Histogram
from tests.conftest import NETPERF_FIXTURES


def hist_of(name: str) -> Histogram:
    found = histogram.parse((NETPERF_FIXTURES / f"{name}.stdout").read_text())
    assert found is not None
    return found


def test_rows_become_buckets_with_their_widths() -> None:
    h = hist_of("tcp_rr")
    assert h.buckets[0] == (10, 20, 25056)  # TEN_USEC cell 1
    assert (100, 200, 240) in h.buckets and (10_000, 20_000, 1) in h.buckets
    assert h.count == 32638 and h.beyond == 0
    stream = hist_of("tcp_stream")
    assert stream.buckets[0] == (1, 2, 2376)  # UNIT_USEC cell 1


def test_no_histogram_is_none() -> None:
    assert histogram.parse((NETPERF_FIXTURES / "tcp_rr_nohist.stdout").read_text()) is None


def test_pooled_sums_bucket_by_bucket() -> None:
    a, b = hist_of("tcp_rr_i0"), hist_of("tcp_rr_i1")
    pool = histogram.pooled([a, b])
    assert pool.count == a.count + b.count == 37956 + 31197
    first = dict(((lo, hi), c) for lo, hi, c in a.buckets)
    second = dict(((lo, hi), c) for lo, hi, c in b.buckets)
    for lo, hi, c in pool.buckets:
        assert c == first.get((lo, hi), 0) + second.get((lo, hi), 0)


def test_percentile_is_numerics_rule_over_the_spread_samples() -> None:
    h = Histogram(((10, 20, 4), (20, 30, 3), (100, 200, 2)))
    spread = [lo + (j + 0.5) * (hi - lo) / c for lo, hi, c in h.buckets for j in range(c)]
    for q in (0, 10, 50, 90, 99, 99.9, 100):
        assert histogram.percentile(h, q) == pytest.approx(numeric_percentile(spread, q))
    assert histogram.percentile(Histogram(()), 50) is None


def test_percentiles_stay_close_to_netperfs_own() -> None:
    """netperf's P50/P90/P99 come from its finer internal histogram; the printed one agrees
    within a bucket."""
    h = hist_of("tcp_rr")
    for q, own in ((50, 17), (90, 28), (99, 930)):
        value = histogram.percentile(h, q)
        assert value is not None and abs(value - own) <= histogram.resolution(h, value)
