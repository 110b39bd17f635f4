"""A fan test's width: ``clients: N`` and ``sweep: {clients: [...]}`` (issue 28).

A fanin or fanout (netrun.scenario.pairs) runs every other host of ``hosts`` against its fan
host at once. ``clients: N`` (a test key, also in ``defaults``, ``-e`` and ``sweep:``) takes
the first N of them, in inventory order (fanout: the N it sends to); a sweep of it is one
test per count, ``NAME[1->delta]``, ``NAME[2->delta]``: the count is in the name, as each
pair is. The count places the test, as ``hosts`` does: it is no option of the tool.

Here is each generated test's expansion, count by count, into its pairs (netrun.scenario.
validator turns each into TestSpecs); a test that names its hosts is one pair without any.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from netrun.core.options import _scalar, show
from netrun.scenario.generated import narrow
from netrun.scenario.pairs import Pair, Select, from_test

#: The test key that narrows a fanin/fanout to its first N other hosts (and may be swept).
COUNT = "clients"

#: ``set_by`` of a count the scenario's ``defaults:`` gave (``first``).
DEFAULTS = "defaults"

NOT_FAN = (
    f"{COUNT} takes the first N hosts of a fan test: only a test with hosts: and pairs:"
    " {fanin: HOST} or {fanout: HOST} has it; drop clients, or make the test a fan"
)

#: Check.add: a problem's prefix (file, test) and its text.
Add = Callable[[str, str], None]


def count_problem(value: Any) -> str | None:
    """Why ``value`` cannot be a fan's ``clients:`` (a whole number of hosts, at least 1)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return f"{COUNT} must be a whole number of hosts (1, 2, ...), got {show(value)}"
    if value < 1:
        return f"{COUNT} must be at least 1 (the fan host's peers it takes), got {value}"
    return None


def layered(
    pre: str,
    raw: Mapping[str, Any],
    defaults: Mapping[str, Any],
    overrides: Mapping[str, Any],
    fan: bool,
    add: Add,
) -> int | None:
    """A fan test's ``clients:`` (defaults < test < -e; None: every other host). The test's
    own on a test that is no fan is a problem; the defaults' and -e's serve fans only."""
    if COUNT in raw and (bad := count_problem(raw[COUNT])):
        add(pre, bad)
    elif COUNT in raw and not fan:
        add(pre, NOT_FAN)
    if not fan:
        return None
    value = next((d[COUNT] for d in (overrides, raw, defaults) if COUNT in d), None)
    return value if count_problem(value) is None else None


def counts(pre: str, test: Mapping[str, Any], values: Any, fan: bool, add: Add) -> list[int]:
    """``sweep: {clients: [...]}``'s counts; [] after adding the problems."""
    found: list[tuple[str, str]] = []
    if not fan:
        found.append((f"{pre}: sweep", NOT_FAN))
    elif COUNT in test:
        found.append((pre, f"{COUNT!r} is set both in the test and in its sweep"))
    elif not isinstance(values, list) or not values:
        found.append(
            (pre, f"sweep: {COUNT} must be a non-empty list of counts, got {show(values)}")
        )
    else:
        for n, value in enumerate(values):
            if bad := count_problem(value):
                found.append((f"{pre}: sweep", bad.replace(COUNT, f"{COUNT}[{n}]", 1)))
            elif values.index(value) != n:
                found.append((pre, f"sweep: {COUNT} lists {value} twice"))
    for where, text in found:
        add(where, text)
    return [] if found else list(values)


def first(pair: Pair, count: int | None, pattern: str, set_by: str = "") -> Pair | str:
    """A fan's pair with only its first ``count`` flows; a string is the problem when it has
    fewer. ``set_by``: the ``-e`` key that gave the count (``-e clients``), or ``defaults``
    when the scenario's defaults did (the test sets none)."""
    if count is None or not pair.flows:
        return pair
    inn = pair.kind == "fanin"
    others = [f.client if inn else f.server for f in pair.flows]
    if count > len(others):
        centre = pair.server if inn else pair.client
        shown = ", ".join(others[:8]) + (", ..." if len(others) > 8 else "")
        source = f" (set by {set_by}={_scalar(count)})" if set_by else ""
        fix = f"{set_by}=" if set_by else f"{COUNT}: "
        if set_by == DEFAULTS:  # the test sets none: its scenario's defaults did
            source, fix = " (from defaults)", f"{COUNT}: "
        return (
            f"{COUNT}: {count}{source} is more than the {len(others)} host(s) of hosts"
            f" {pattern!r} other than {centre} ({shown}): use {fix}1..{len(others)},"
            " or widen hosts"
        )
    flows = pair.flows[:count]
    return Pair(flows[0].client, flows[0].server, pair.slot, flows=flows, kind=pair.kind)


def pairs_of(
    placed: Mapping[str, Any],
    select: Select,
    ends: Mapping[str, str],
    name: str,
    count: int | None,
    set_by: str = "",
    widths: int = 1,
) -> list[Pair] | str:
    """A generated test's pairs (a fan's first ``count`` others), narrowed to the hosts
    ``ends`` names (-e server=/client=); a string is the problem. Of a sweep of ``widths``
    counts, a count -e narrows to nothing is [] (the caller says so when all are)."""
    found = from_test(dict(placed), select)
    if isinstance(found, str):
        return found
    kept = []
    for pair in found:
        taken = first(pair, count, str(placed["hosts"]), set_by)
        if isinstance(taken, str):
            return taken
        kept.append(taken)
    narrowed = narrow(kept, ends, name)
    return [] if isinstance(narrowed, str) and widths > 1 else narrowed


def expand(
    placed: Mapping[str, Any] | None,
    widths: Sequence[int | None],
    select: Select,
    ends: Mapping[str, str],
    name: str,
    refuse: Callable[[Pair], str | None],
    set_by: str = "",
    first_only: bool = False,
) -> dict[int | None, list[Pair]] | str:
    """Each count of ``widths`` (``[None]``: no count) -> the test's pairs (``placed``: its
    layered hosts and pairs; None: the test names its hosts, one pair without any). A string
    is the first problem, of the pairs or of ``refuse`` (why a pair cannot run); counts
    that -e narrows alike are one; ``first_only``: the test has other problems, expand the
    first count alone."""
    by_count: dict[int | None, list[Pair]] = {}
    for width in widths:
        found: list[Pair] | str = [Pair("", "", 0)]
        if placed is not None:
            found = pairs_of(placed, select, ends, name, width, set_by, len(widths))
        if isinstance(found, str):
            return found
        if found and all(by_count[w] != found for w in by_count):
            by_count[width] = found  # (-e client= may narrow two counts alike: one)
        if refused := next(filter(None, map(refuse, found)), None):
            return refused
        if first_only:
            return by_count
    if placed is not None and not by_count:  # -e narrowed every count's pairs to none
        again = pairs_of(placed, select, ends, name, widths[-1], set_by)
        return again if isinstance(again, str) else by_count
    return by_count
