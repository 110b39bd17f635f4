"""netperf's ``-v 2`` latency histogram: read, pooled over instances, and its percentiles.

netperf (built with ``--enable-histogram``) counts every transaction's time in ten buckets
per decade (1 us wide below 10 us, 10 us wide below 100 us, ... up to 100 s) and prints
those counts. Percentiles of several netperf processes come from the sum of their
histograms, as PerfKitBenchmarker's netperf benchmark does, never from an average of
each process's own percentiles (which is not a percentile of anything).
"""

from __future__ import annotations

import math
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


def _value(hist: Histogram, index: int) -> float:
    """The ``index``-th smallest transaction time (0-based), the ``c`` samples of a bucket
    taken as spread evenly across it: sample j sits at low + (j + 0.5) * width / c."""
    seen = 0
    for lo, hi, c in hist.buckets:
        if index < seen + c:
            return lo + (index - seen + 0.5) * (hi - lo) / c
        seen += c
    raise IndexError(index)


def percentile(hist: Histogram, q: float) -> float | None:
    """The q-th percentile (0-100) in microseconds, or None for an empty histogram.

    netrun.core.numeric.percentile's rule (linear interpolation between closest ranks) over
    the samples as ``_value`` places them: the same rule as ping's RTT percentiles, applied
    to values known only to their bucket, without building a list of millions of floats.
    """
    n = hist.count
    if n == 0 or not 0 <= q <= 100:
        return None
    rank = (n - 1) * q / 100
    low = math.floor(rank)
    high = min(low + 1, n - 1)
    a, b = _value(hist, low), _value(hist, high)
    return a + (b - a) * (rank - low)


def resolution(hist: Histogram, value: float) -> float:
    """The width in microseconds of the bucket holding ``value``: how exact a percentile is."""
    for lo, hi, _ in hist.buckets:
        if lo <= value < hi:
            return hi - lo
    return 0.0
