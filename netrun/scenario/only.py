"""``--test NAME``: run only some of a scenario's tests, named exactly or by a glob.

A name is first taken as it is (generated names hold brackets: ``mesh[alpha->bravo]``,
which as a glob would be a character class), then as a shell glob (``rrul-*``). A name that
matches no test is bad input: one line naming it and the closest test names.
"""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Sequence
from dataclasses import replace

from netrun.core.spec import Scenario
from netrun.errors import InputError


def matches(name: str, pattern: str) -> bool:
    """A test name against one --test: exactly, or as a glob."""
    return name == pattern or fnmatch.fnmatchcase(name, pattern)


def only(scenario: Scenario, patterns: Sequence[str]) -> Scenario:
    """The scenario with only the tests some pattern names (all of them without patterns)."""
    if not patterns:
        return scenario
    names = [t.name for t in scenario.tests]
    unknown = [p for p in patterns if not any(matches(n, p) for n in names)]
    if unknown:
        problems = []
        for pattern in unknown:
            close = difflib.get_close_matches(pattern, names, n=3, cutoff=0.5)
            hint = f"did you mean {', '.join(close)}?" if close else f"its tests: {_listed(names)}"
            problems.append(f"{scenario.path}: --test {pattern!r} names no test; {hint}")
        raise InputError(problems)
    kept = tuple(t for t in scenario.tests if any(matches(t.name, p) for p in patterns))
    return replace(scenario, tests=kept)


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:8])
    return shown + (f" and {len(names) - 8} more (see --list-tests)" if len(names) > 8 else "")
