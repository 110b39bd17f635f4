"""One repeat's figures: summed rates, pooled percentiles, exact pooled mean and stddev."""

from __future__ import annotations

import math

import pytest

from netrun.tools.netperf import histogram
from netrun.tools.netperf.parse import Instance, parse
from netrun.tools.netperf.stats import figures
from tests.conftest import NETPERF_FIXTURES


def inst(name: str) -> Instance:
    return parse((NETPERF_FIXTURES / f"{name}.stdout").read_text())


def test_one_tcp_rr_process() -> None:
    metrics, why, details = figures("TCP_RR", [inst("tcp_rr")], "bravo")
    assert metrics["transactions_per_s"] == pytest.approx(16315.63)
    assert metrics["latency_mean_us"] == pytest.approx(61.22)
    assert metrics["latency_stddev_us"] == pytest.approx(312.13)
    assert metrics["latency_max_us"] == 17697
    # netperf's own P50 is 17 us: netrun names its 10 us bucket, no finer
    assert metrics["latency_p50_us"] == 10 and details["bucket_us"]["latency_p50_us"] == [10, 20]
    assert metrics["latency_p99_us"] == 900 and details["bucket_us"]["latency_p99_us"] == [
        900,
        1000,
    ]
    assert metrics["latency_p999_us"] is not None
    assert metrics["connections_per_s"] is None and "TCP_CRR" in why["connections_per_s"]
    assert metrics["throughput_bps"] is None and "throughput_bps" in why
    assert details["samples"] == 32638 and details["bucket_width_us"]["latency_p50_us"] == 10


def test_two_processes_pool_their_histograms_never_average_percentiles() -> None:
    a, b = inst("tcp_rr_i0"), inst("tcp_rr_i1")
    metrics, _, details = figures("TCP_RR", [a, b], "bravo")
    pool = histogram.pooled([a.histogram, b.histogram])  # type: ignore[list-item]
    assert details["samples"] == pool.count == 37956 + 31197
    assert metrics["latency_p99_us"] == pytest.approx(histogram.percentile(pool, 99))
    assert metrics["transactions_per_s"] == pytest.approx(18969.44 + 15581.94)
    assert metrics["latency_max_us"] == 32285
    na, nb = 37956, 31197
    mean = (na * 52.66 + nb * 64.05) / (na + nb)
    assert metrics["latency_mean_us"] == pytest.approx(mean)
    sq = (na * (402.75**2 + 52.66**2) + nb * (502.49**2 + 64.05**2)) / (na + nb)
    assert metrics["latency_stddev_us"] == pytest.approx(math.sqrt(sq - mean**2))
    assert len(details["per_instance"]) == 2 and "pooled" in details["percentile_source"]


def test_tcp_crr_counts_connections() -> None:
    metrics, why, _ = figures("TCP_CRR", [inst("tcp_crr")], "bravo")
    assert metrics["connections_per_s"] == metrics["transactions_per_s"] == pytest.approx(3511.25)
    assert "connections_per_s" not in why


def test_tcp_stream_has_throughput_only() -> None:
    metrics, why, _ = figures("TCP_STREAM", [inst("tcp_stream")], "bravo")
    assert metrics["throughput_bps"] == pytest.approx(2984.03e6)
    assert metrics["transactions_per_s"] is None and metrics["latency_p50_us"] is None
    assert "TCP_STREAM" in why["latency_p50_us"]


def test_without_histograms_percentiles_are_unavailable_with_the_reason() -> None:
    metrics, why, _ = figures("TCP_RR", [inst("tcp_rr_nohist")], "bravo")
    assert metrics["latency_p50_us"] is None and metrics["latency_mean_us"] == pytest.approx(56.12)
    assert "bravo" in why["latency_p99_us"] and "--enable-histogram" in why["latency_p99_us"]


def test_a_p999_needs_a_thousand_transactions() -> None:
    few = Instance(
        {"throughput": 10.0, "mean_us": 5.0, "stddev_us": 1.0, "max_us": 9.0, "elapsed_s": 1.0},
        histogram.Histogram(((1, 2, 10),)), True, "",
    )  # fmt: skip
    metrics, why, _ = figures("TCP_RR", [few], "bravo")
    assert metrics["latency_p90_us"] is not None and metrics["latency_p99_us"] is None
    assert why["latency_p999_us"] == "10 transactions timed; a p99.9 needs at least 1000"
