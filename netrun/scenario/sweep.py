"""``sweep: {key: [values]}``: one test per combination of the swept values, named by them.

A test ``tcp`` that sweeps ``streams: [1, 4]`` and ``length: [1400, 9000]`` becomes four,
``tcp[streams=1,length=1400]`` and so on; each value is checked as the key's option and
written into the name (``name_part``), which is also a file name. A fan test may sweep its
``clients`` (netrun.scenario.fanwidth): the count goes in its pair label instead.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Collection, Mapping
from typing import Any

from netrun.core.options import Option, problem, show
from netrun.scenario import fanwidth
from netrun.scenario.fanwidth import COUNT

MAX_COMBINATIONS = 1000  # tests one sweep may expand into

#: Check.unknown: a problem's prefix, the unknown key and the keys it could have been.
Unknown = Callable[[str, Any, Collection[str]], None]


def check(
    pre: str,
    test: Mapping[str, Any],
    table: Mapping[str, Option] | None,
    own: Mapping[str, Any],
    overrides: Mapping[str, Any],
    fan: bool,
    add: fanwidth.Add,
    unknown: Unknown,
) -> dict[str, list[Any]]:
    """The test's checked ``sweep:`` (``table``: its options; None when its mode or tool is
    unknown); keys that -e sets are dropped (-e wins). Problems go to ``add``/``unknown``."""
    raw = test["sweep"]
    if not isinstance(raw, dict) or not raw:
        add(pre, f"sweep must be a non-empty mapping of key: [values], got {show(raw)}")
        return {}
    good: dict[str, list[Any]] = {}
    for key, values in raw.items():
        if key == COUNT:
            widths = fanwidth.counts(pre, test, values, fan, add)
            if widths and key not in overrides:
                good[key] = widths
        elif table is not None and key not in table:
            unknown(f"{pre}: sweep", key, table)
        elif key in own:
            add(pre, f"{key!r} is set both in the test and in its sweep")
        elif not isinstance(values, list) or not values:
            add(pre, f"sweep: {key} must be a non-empty list, got {show(values)}")
        elif table is not None and key not in overrides:
            names = [name_part(v) for v in values]
            for n, value in enumerate(values):
                bad = problem(table[key], f"{key}[{n}]", value)
                if bad:
                    add(f"{pre}: sweep", bad)
                elif names.index(names[n]) != n:
                    add(pre, f"sweep: {key} lists {show(value)} twice")
            good[key] = values
    if math.prod(len(v) for v in good.values()) > MAX_COMBINATIONS:
        add(pre, f"sweep expands into more than {MAX_COMBINATIONS} tests")
    return good


def combinations(options: Mapping[str, list[Any]]) -> list[tuple[dict[str, Any], str]]:
    """Each combination of the swept options, with its part of the test's name
    (``streams=4,length=1400``); no option swept: one, empty."""
    out = []
    for combo in itertools.product(*options.values()):
        swept = dict(zip(options, combo, strict=True))
        out.append((swept, ",".join(f"{k}={name_part(v)}" for k, v in swept.items())))
    return out


def name_part(value: Any) -> str:
    """A swept value as written in a test name; anything unsafe for file names becomes _."""
    return re.sub(r"[^A-Za-z0-9._+-]", "_", show(value).strip("'"))
