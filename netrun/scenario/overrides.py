"""``-e KEY=VALUE`` for every test and ``-e TEST.KEY=VALUE`` for one.

An override no test takes used to vanish (``-e streams=2`` on a scenario of ping tests ran
the scenario unchanged), so a nightly could measure something other than what its command line
says. Every ``-e`` key must be taken by some test; a test's own (``-e tcp.streams=4``) names
the test as ``--list-tests`` shows it: an entry of the file (all its swept and generated
tests) or one expanded test (``tcp[streams=4].length=1400``, ``mesh[a->b].bitrate=1G``).
Values layer: option default < scenario defaults < test < ``-e KEY`` < ``-e TEST.KEY``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from netrun.core.options import _scalar, problem, split_test_key
from netrun.core.spec import TestSpec
from netrun.errors import did_you_mean
from netrun.scenario.fanwidth import COUNT
from netrun.scenario.pairs import KEYS
from netrun.scenario.validator import Check

#: Tests named in a message before "and N more".
SHOWN = 8


def split(overrides: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """(every test's overrides, test name -> its own) of parse_overrides' result."""
    every: dict[str, Any] = {}
    per_test: dict[str, dict[str, Any]] = {}
    for key, value in overrides.items():
        test, own = split_test_key(key) if isinstance(key, str) else ("", key)
        if test:
            per_test.setdefault(test, {})[own] = value
        else:
            every[own] = value
    return every, per_test


def _entry_names(tests: Sequence[Any]) -> dict[str, int]:
    names: dict[str, int] = {}
    for i, raw in enumerate(tests):
        name = raw.get("name") if isinstance(raw, dict) else None
        if isinstance(name, str):
            names.setdefault(name, i)
    return names


def by_entry(
    check: Check, tests: Sequence[Any], per_test: Mapping[str, Mapping[str, Any]]
) -> dict[int, dict[str, Any]]:
    """Entry index -> its ``-e NAME.KEY`` overrides (checked as ``-e`` values are), for
    the entries named as in the file; expanded names are apply_to_specs'."""
    names = _entry_names(tests)
    out: dict[int, dict[str, Any]] = {}
    for name, values in per_test.items():
        if name in names:
            out[names[name]] = check.layer(_prefix(name), values)
    return out


def _prefix(name: str) -> Callable[[str, Any], str]:
    """How a problem of ``-e NAME.KEY=VALUE`` is introduced."""
    return lambda key, value: f"-e {name}.{key}={_scalar(value)}"


def _tests_text(placed: Sequence[tuple[str, str, str]]) -> str:
    shown = [f"{n} (tool {t}, mode {m})" for n, t, m in placed[:SHOWN]]
    more = f" and {len(placed) - SHOWN} more" if len(placed) > SHOWN else ""
    return ", ".join(shown) + more


def _owners(check: Check, key: str) -> str:
    """Which tools or modes have ``key``: the fix for an -e no test takes."""
    tools = sorted(n for n, t in check.tools.items() if any(o.name == key for o in t.options))
    if tools:
        return f"{key!r} is an option of tool {', '.join(tools)}"
    modes = sorted(m for m, opts in check.mode_own.items() if any(o.name == key for o in opts))
    if key == COUNT:  # not an option: the width of a fan test
        return f"{key!r} is a key of fan tests (pairs: {{fanin: HOST}} or {{fanout: HOST}})"
    return f"{key!r} is an option of mode {', '.join(modes)}" if modes else ""


def untaken(
    check: Check,
    tests: Sequence[Any],
    every: Mapping[str, Any],
    own: Mapping[int, Mapping[str, Any]],
) -> None:
    """An ``-e`` key no test takes (none of their tools and modes has it) is a problem."""
    if not check.placed:  # no test got as far as its tool and mode: those are the problems
        return
    for key, value in every.items():
        if check.took.get(key):
            continue
        owners = _owners(check, key)
        check.add(
            f"-e {key}={_scalar(value)}",
            f"no test of this scenario takes {key!r} (its tests: {_tests_text(check.placed)});"
            f" {owners + ': ' if owners else ''}drop -e {key}, or give a test a tool or mode"
            " that has it",
        )
    placed = {name: (tool, mode) for name, tool, mode in check.placed}
    names = {i: n for n, i in _entry_names(tests).items()}
    for i, values in own.items():
        name = names.get(i)
        if name is None or name not in placed:
            continue
        tool, mode = placed[name]
        for key, value in values.items():
            if name not in check.took.get(key, []):
                owners = _owners(check, key)
                check.add(
                    f"-e {name}.{key}={_scalar(value)}",
                    f"test {name!r} (tool {tool}, mode {mode}) takes no key {key!r}"
                    + (f"; {owners}" if owners else ""),
                )


def apply_to_specs(
    check: Check,
    tests: Sequence[Any],
    specs: list[TestSpec],
    per_test: Mapping[str, Mapping[str, Any]],
) -> list[TestSpec]:
    """The tests with each ``-e EXPANDED.KEY`` override (one swept or generated test's)
    applied; an unknown test name is a problem naming the known ones."""
    entries = _entry_names(tests)
    by_name = {s.name: n for n, s in enumerate(specs)}
    out = list(specs)
    for name, values in per_test.items():
        if name in entries:
            continue
        where = ", ".join(f"-e {name}.{k}={_scalar(v)}" for k, v in values.items())
        if name not in by_name:
            if not check.problems or "[" not in name:  # (a bad entry expands into none)
                known = list(dict.fromkeys([*entries, *by_name]))
                shown = ", ".join(known[:SHOWN]) + (" ..." if len(known) > SHOWN else "")
                check.add(
                    where,
                    f"no test named {name!r}{did_you_mean(name, known)}; the tests (as"
                    f" --list-tests shows them): {shown}",
                )
            continue
        n = by_name[name]
        spec = _override(check, out[n], values)
        if spec is not None:
            out[n] = spec
    return out


def _override(check: Check, spec: TestSpec, values: Mapping[str, Any]) -> TestSpec | None:
    """One expanded test with its own overrides; None (and the problems) when one is bad."""
    table = check.table(spec.mode, spec.tool)
    before = len(check.problems)
    for key, value in values.items():
        pre = f"-e {spec.name}.{key}={_scalar(value)}"
        if key in check.placement_keys or key in (*KEYS, COUNT):
            check.add(
                pre,
                f"{key!r} places the test: set it on the entry, -e {spec.base_name}.{key}=...",
            )
        elif key not in table:
            owners = _owners(check, key)
            check.add(
                pre,
                f"test {spec.name!r} (tool {spec.tool}, mode {spec.mode}) takes no key {key!r}"
                + (f"; {owners}" if owners else ""),
            )
        elif key in spec.swept:
            check.add(
                pre,
                f"{key!r} is swept in this test (its name says {key}="
                f"{_scalar(spec.swept[key])}): override the entry, -e {spec.base_name}.{key}=...",
            )
        elif bad := problem(table[key], key, value):
            check.add(pre, bad)
    if len(check.problems) > before:
        return None
    options = {**spec.options, **values}
    tool_check = check.tools[spec.tool].check
    for text in tool_check(options) if tool_check else ():
        check.add(f"-e {spec.name}: {', '.join(values)}", text)
    if len(check.problems) > before:
        return None
    return dataclasses.replace(
        spec, options=MappingProxyType(options), explicit=spec.explicit | frozenset(values)
    )
