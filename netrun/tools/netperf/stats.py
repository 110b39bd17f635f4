"""One repeat's figures from its netperf processes: summed rates, pooled latency.

Percentiles come from the processes' histograms summed bucket by bucket (histogram.pooled),
one rule whether one process ran or several; the mean, standard deviation and maximum are
pooled exactly from each process's own (netperf computes them from every transaction).
"""

from __future__ import annotations

import math
from typing import Any

from netrun.tools.netperf import histogram
from netrun.tools.netperf.command import RR_TESTS
from netrun.tools.netperf.parse import Instance

#: percentile -> its metric.
PERCENTILES = {50.0: "latency_p50_us", 90.0: "latency_p90_us", 99.0: "latency_p99_us",
               99.9: "latency_p999_us"}  # fmt: skip
LATENCY = (*PERCENTILES.values(), "latency_mean_us", "latency_stddev_us", "latency_max_us")
NAMES = ("transactions_per_s", *LATENCY, "connections_per_s", "throughput_bps")


def _count(inst: Instance) -> float:
    """How many transactions a process timed (its histogram's, else rate x elapsed)."""
    if inst.histogram is not None:
        return float(inst.histogram.count)
    rate, elapsed = inst.number("throughput"), inst.number("elapsed_s")
    return (rate or 0.0) * (elapsed or 0.0)


def _moments(found: list[Instance]) -> tuple[float | None, float | None, float | None]:
    """Pooled mean, population standard deviation and maximum, in microseconds."""
    weights = [_count(i) for i in found]
    means = [i.number("mean_us") for i in found]
    sds = [i.number("stddev_us") for i in found]
    maxes = [m for i in found if (m := i.number("max_us")) is not None]
    top = max(maxes) if maxes else None
    total = sum(weights)
    if total <= 0 or any(m is None for m in means):
        return None, None, top
    mean = sum(w * (m or 0.0) for w, m in zip(weights, means, strict=True)) / total
    if any(s is None for s in sds):
        return mean, None, top
    square = sum(
        w * ((s or 0.0) ** 2 + (m or 0.0) ** 2) for w, s, m in zip(weights, sds, means, strict=True)
    )
    return mean, math.sqrt(max(0.0, square / total - mean**2)), top


def figures(
    test: str, found: list[Instance], where: str
) -> tuple[dict[str, float | None], dict[str, str], dict[str, Any]]:
    """(metrics, why each missing one is missing, details) of one repeat; ``where`` names
    the client host in the reasons."""
    metrics: dict[str, float | None] = dict.fromkeys(NAMES)
    why: dict[str, str] = {}
    rates = [i.number("throughput") or 0.0 for i in found]
    per = [
        {key: i.values.get(key) for key in ("throughput", "p50_us", "p90_us", "p99_us",
                                             "mean_us", "max_us", "elapsed_s")}
        | {"samples": i.histogram.count if i.histogram else None}
        for i in found
    ]  # fmt: skip
    details: dict[str, Any] = {"test": test, "instances": len(found), "per_instance": per}
    if test == "TCP_STREAM":
        bps = [i.throughput_bps for i in found]
        metrics["throughput_bps"] = None if None in bps else sum(b or 0.0 for b in bps)
        for name in (*LATENCY, "transactions_per_s", "connections_per_s"):
            why[name] = "TCP_STREAM measures throughput, not transactions"
        return metrics, why, details
    why["throughput_bps"] = f"{test} measures transactions; only TCP_STREAM measures throughput"
    metrics["transactions_per_s"] = sum(rates)
    if test == "TCP_CRR":
        metrics["connections_per_s"] = sum(rates)  # one connection per transaction
    else:
        why["connections_per_s"] = "only TCP_CRR opens a connection per transaction"
    mean, sd, top = _moments(found)
    metrics.update(latency_mean_us=mean, latency_stddev_us=sd, latency_max_us=top)
    hists = [i.histogram for i in found]
    if any(h is None for h in hists):
        lacking = "built without --enable-histogram" if not all(
            i.has_histogram for i in found) else "printed no -v 2 histogram"  # fmt: skip
        for name in PERCENTILES.values():
            why[name] = (
                f"netperf on {where} {lacking}: no histogram to read percentiles from "
                "(rebuild it with ./configure --enable-histogram); netperf's own per-process "
                "P50/P90/P99 are in details.per_instance"
            )
        return metrics, why, details
    pool = histogram.pooled(h for h in hists if h is not None)
    n = pool.count
    details["samples"] = n
    details["histogram_us"] = [[lo, hi, c] for lo, hi, c in pool.buckets]
    if pool.beyond:
        details["samples_over_100s"] = pool.beyond
    details["percentile_source"] = (
        f"pooled -v 2 histograms of {len(found)} netperf processes" if len(found) > 1
        else "netperf's -v 2 histogram"
    ) + (" (10 buckets per decade; a percentile is the low edge of the bucket holding "
         "netperf's rank, int(q x count))")  # fmt: skip
    widths, buckets = {}, {}
    for q, name in PERCENTILES.items():
        needed = math.ceil(100 / (100 - q) - 1e-9)
        if n < needed:
            why[name] = f"{n} transactions timed; a p{q:g} needs at least {needed}"
            continue
        found_bucket = histogram.bucket(pool, q)
        if found_bucket is not None:
            metrics[name] = found_bucket[0]
            buckets[name] = list(found_bucket)
            widths[name] = found_bucket[1] - found_bucket[0]
    details["bucket_width_us"] = widths
    details["bucket_us"] = buckets
    return metrics, why, details


def payload_bytes(
    test: str, found: list[Instance], request_size: int | None, response_size: int | None
) -> dict[str, int]:
    """The bytes the processes' payload moved each way, {"client": sent by the client,
    "server": sent by the server}: what a path check compares the devices' counters with.
    A request/response test sends a request and a response per transaction (1 byte each
    unless sized); TCP_STREAM sends its rate for its elapsed time, client to server."""
    if test in RR_TESTS:
        count = sum(_count(i) for i in found)
        return {"client": round(count * (request_size or 1)),
                "server": round(count * (response_size or 1))}  # fmt: skip
    sent = sum((i.throughput_bps or 0.0) * (i.number("elapsed_s") or 0.0) / 8 for i in found)
    return {"client": round(sent), "server": 0}


def is_rr(test: str) -> bool:
    return test in RR_TESTS
