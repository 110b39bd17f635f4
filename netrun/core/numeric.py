"""Numbers read from outside (tool output, saved results, YAML) made safe to compute with,
and numbers shown short.

JSON and YAML hand over Python ints of any size, NaN, infinities and negative zero. A
400-digit integer makes ``float()`` and ``math.isnan()`` raise OverflowError deep inside a
parser or a renderer, so every untrusted number goes through here first: a value is either
a finite float (negative zero folded into zero) or not a number at all.
"""

from __future__ import annotations

import math
from typing import Any

#: Above this magnitude a value is not a measurement (1e18 bit/s is an exabit per second) and
#: would lose its meaning in sums, statistics and SQLite's 64-bit integers.
LIMIT = 1e18


def finite(value: Any, *, limit: float = LIMIT) -> float | None:
    """``value`` as a finite float within +-limit, or None when it is not such a number.

    bool is not a number here (JSON's true is not 1 bit/s); -0.0 becomes 0.0.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int beyond float's range
        return None
    if not math.isfinite(number) or abs(number) > limit:
        return None
    return number + 0.0  # -0.0 + 0.0 == 0.0


def is_number(value: Any, *, limit: float = LIMIT) -> bool:
    """True for an int or float that ``finite`` accepts."""
    return finite(value, limit=limit) is not None


def whole(value: Any, *, limit: float = LIMIT) -> int | None:
    """``value`` as an int (truncated, as iperf3's own counters are whole), or None."""
    number = finite(value, limit=limit)
    return None if number is None else int(number)


def digits(value: float) -> int:
    """Decimals for about three significant figures (938, 52.4, 1.63)."""
    return 0 if abs(value) >= 100 else 1 if abs(value) >= 10 else 2


def short(value: float | None, places: int | None = None) -> str:
    """About three significant figures (or ``places`` decimals), "-" for None: the
    table's stats columns and the live line must stay narrow."""
    if value is None:
        return "-"
    return f"{value:.{digits(value) if places is None else places}f}"


def percentile(values: list[float], q: float) -> float | None:
    """The q-th percentile (0-100) by linear interpolation between closest ranks (numpy's
    default, R's type 7), or None for no values.

    One rule for every tool, so a p99 of ping and one of a pooled histogram mean the same;
    with few values a high percentile sits near the maximum: callers keep the count beside it.
    """
    if not values or not 0 <= q <= 100:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def jain(values: list[float]) -> float | None:
    """Jain's fairness index, (sum x)^2 / (n * sum x^2): 1.0 when every share is equal, 1/n
    when one takes everything; None for no values or all zero."""
    squares = sum(v * v for v in values)
    if not values or squares <= 0:
        return None
    return sum(values) ** 2 / (len(values) * squares)
