"""netperf's ``-v 2`` latency histogram: read, pooled over instances, and its percentiles.

netperf (built with ``--enable-histogram``) counts every transaction's time in a hundred
buckets per decade and prints them summed by ten: ten buckets per decade (1 us wide below 10
us, 10 us wide below 100 us, ... up to 100 s). Its own P50/P90/P99 (``-o``) read the finer
internal buckets; a percentile read from the printed ones is known to its bucket.
Percentiles of several netperf processes come from the sum of their histograms, as
PerfKitBenchmarker's netperf benchmark does, never from an average of each process's own
percentiles (which is not a percentile of anything)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

#: Row name -> the width in microseconds of each of its ten buckets (row i starts at 10*width).
ROWS = {
    "UNIT_USEC": 1,
    "TEN_USEC": 10,
    "HUNDRED_USEC": 100,
    "UNIT_MSEC": 1_000,
    "TEN_MSEC": 10_000,
    "HUNDRED_MSEC": 100_000,
    "UNIT_SEC": 1_000_000,
    "TEN_SEC": 10_000_000,
}
_ROW = re.compile(r"^\s*([A-Z_]+)\s*((?::\s*\d+\s*){10})$")
_BEYOND = re.compile(r"^\s*>100_SECS:\s*(\d+)\s*$")
_TOTAL = re.compile(r"^\s*HIST_TOTAL:\s*(\d+)\s*$")


@dataclass(frozen=True)
class Histogram:
    """Counts per bucket: ``buckets`` holds (low_us, high_us, count) for the non-empty ones,
    lowest first; ``beyond`` counts transactions over 100 s (netperf's ">100_SECS")."""

    buckets: tuple[tuple[float, float, int], ...]
    beyond: int = 0

    @property
    def count(self) -> int:
        """Transactions in the buckets (the ones over 100 s are not placed)."""
        return sum(c for _, _, c in self.buckets)


def parse(text: str) -> Histogram | None:
    """The histogram netperf printed after "Histogram of", or None when there is none."""
    if "Histogram of" not in text:
        return None
    counts: dict[tuple[float, float], int] = {}
    beyond = 0
    rows = 0
    for line in text.split("Histogram of", 1)[1].splitlines():
        if m := _ROW.match(line):
            width = ROWS.get(m.group(1))
            if width is None:
                continue
            rows += 1
            for i, cell in enumerate(m.group(2).split(":")[1:]):
                if int(cell) > 0:
                    counts[(i * width, (i + 1) * width)] = int(cell)
        elif m := _BEYOND.match(line):
            beyond = int(m.group(1))
        elif _TOTAL.match(line):
            break
    if rows == 0:
        return None
    # the rows overlap at their first cell (always 0: below the row's range), never else
    return Histogram(tuple((lo, hi, c) for (lo, hi), c in sorted(counts.items())), beyond)


def pooled(histograms: Iterable[Histogram]) -> Histogram:
    """The sum of several processes' histograms, bucket by bucket."""
    counts: dict[tuple[float, float], int] = {}
    beyond = 0
    for hist in histograms:
        beyond += hist.beyond
        for lo, hi, c in hist.buckets:
            counts[(lo, hi)] = counts.get((lo, hi), 0) + c
    return Histogram(tuple((lo, hi, c) for (lo, hi), c in sorted(counts.items())), beyond)


def rank(count: int, q: float) -> int:
    """The 1-based rank of the transaction a q-th percentile (0-100) is: netperf's own rule
    (HIST_get_percentile in netlib.c: ``(int)(percentile * total)``), at least the first."""
    return max(1, min(count, int(q / 100 * count)))


def bucket(hist: Histogram, q: float) -> tuple[float, float] | None:
    """The (low, high) microseconds of the bucket holding the q-th percentile (0-100), or
    None for an empty histogram: the transaction at netperf's rank (``rank``)."""
    n = hist.count
    if n == 0 or not 0 <= q <= 100:
        return None
    wanted, seen = rank(n, q), 0
    for lo, hi, c in hist.buckets:
        seen += c
        if seen >= wanted:
            return lo, hi
    return None  # unreachable: the ranks stop at the count


def percentile(hist: Histogram, q: float) -> float | None:
    """The q-th percentile (0-100) in microseconds: the low edge of its bucket (``bucket``),
    or None for an empty histogram.

    The printed histogram knows a transaction only to its bucket (10 us wide from 10 to
    100 us), so a percentile is no finer: the value is the bucket's low edge, the true one
    lies in [value, value + width), as PerfKitBenchmarker reads netperf's histogram (its
    ParseHistogram keys each bucket by its low edge). netperf's own P50/P90/P99, read from
    its finer internal buckets at the same rank, fall in that bucket.
    """
    found = bucket(hist, q)
    return None if found is None else found[0]


def resolution(hist: Histogram, value: float) -> float:
    """The width in microseconds of the bucket holding ``value``: how exact a percentile is."""
    for lo, hi, _ in hist.buckets:
        if lo <= value < hi:
            return hi - lo
    return 0.0
