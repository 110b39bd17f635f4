"""netperf's -v 2 histogram: rows read, histograms pooled, percentiles at netperf's rank,
known to their bucket."""

from __future__ import annotations

import pytest

from netrun.tools.netperf import histogram
from netrun.tools.netperf.histogram import Histogram
from netrun.tools.netperf.parse import parse
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


@pytest.mark.parametrize(
    ("q", "edges"),
    [(0, (10, 20)), (10, (10, 20)), (50, (10, 20)), (60, (20, 30)), (77, (20, 30)),
     (90, (100, 200)), (99.9, (100, 200)), (100, (100, 200))],
)  # fmt: skip
def test_a_percentile_is_the_bucket_of_netperfs_rank(q: float, edges: tuple[int, int]) -> None:
    """netperf's HIST_get_percentile: the transaction at rank int(q x count), at least the
    first; its bucket's low edge is the value (9 transactions: p50 is the 4th, p60 the 5th,
    p90 the 8th)."""
    h = Histogram(((10, 20, 4), (20, 30, 3), (100, 200, 2)))
    assert histogram.bucket(h, q) == edges
    assert histogram.percentile(h, q) == edges[0]
    assert histogram.resolution(h, edges[0]) == edges[1] - edges[0]


def test_an_empty_histogram_has_no_percentile() -> None:
    assert histogram.percentile(Histogram(()), 50) is None
    assert histogram.bucket(Histogram(()), 50) is None


@pytest.mark.parametrize("name", ["tcp_rr", "tcp_rr_i0", "tcp_rr_i1", "udp_rr", "tcp_crr"])
def test_netperfs_own_percentiles_fall_in_the_bucket_netrun_names(name: str) -> None:
    """netperf's P50/P90/P99 on the same run (its -o line, read from its finer internal
    buckets) lie in the printed bucket netrun reads at the same rank: within one bucket."""
    text = (NETPERF_FIXTURES / f"{name}.stdout").read_text()
    own = parse(text).values
    h = hist_of(name)
    for q, key in ((50, "p50_us"), (90, "p90_us"), (99, "p99_us")):
        found = histogram.bucket(h, q)
        value = own[key]
        assert found is not None and isinstance(value, float)
        assert found[0] <= value <= found[1], (name, q, found, value)
