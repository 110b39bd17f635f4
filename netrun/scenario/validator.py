"""Scenario validation: one walk over the file that collects every problem before raising.

Each problem is one line naming the file, the test and the key, with a "did you mean"
hint; values merge as option default < scenario ``defaults`` < test < CLI ``-e`` into
frozen TestSpecs (netrun.core.spec). netrun.scenario.loader reads the file and drives this.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from netrun.core.options import GENERAL_OPTIONS, Option, problem, show
from netrun.core.spec import DEFAULT_ROLES, DEFAULT_TOOL, TestSpec
from netrun.errors import InputError, did_you_mean
from netrun.results.flags import same_host_problem
from netrun.scenario import pairs as _pairs
from netrun.scenario.pairs import COUNT
from netrun.tools import tools as registered
from netrun.tools.base import Tool
from netrun.tools.iperf3.tool import OPTIONS as IPERF3_OPTIONS
from netrun.tools.load import spec as load_spec
from netrun.tools.load.tool import with_load

MAX_COMBINATIONS = 1000  # tests one sweep may expand into
#: Test and scenario names become file names: 1-64 of A-Z a-z 0-9 . _ -, no leading . _ -
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
PLACEMENT = ("mode", "server", "client", "tool")  # test keys that may also sit in defaults or -e
REQUIRED = ("mode", "server", "client")  # placement keys without a default
TEST_KEYS = ("name", *PLACEMENT, "sweep", *_pairs.KEYS, _pairs.COUNT)

#: Every option of an iperf3 test in any mode (scenario v1's option list; the CLI reads the
#: inventory-settable ones from it).
COMMON_OPTIONS: tuple[Option, ...] = (*GENERAL_OPTIONS, *IPERF3_OPTIONS)


class Check:
    """Walks one scenario, collecting every problem before anything is raised."""

    def __init__(
        self,
        where: str,
        hosts: Collection[str] | None,
        modes: Mapping[str, Sequence[Option]],
        roles: Mapping[str, Sequence[str]] | None = None,
        resolve: Callable[[str], str] | None = None,
        tools: Mapping[str, Tool] | None = None,
        select: _pairs.Select | None = None,
        mode_tools: Mapping[str, Sequence[str] | None] | None = None,
    ) -> None:
        self.where = where
        self.select = select or _pairs.simple_select(hosts)
        self.roles = {m: tuple((roles or {}).get(m) or DEFAULT_ROLES) for m in modes}
        #: mode -> the tools it measures with (absent or None: any that runs in it)
        self.mode_tools = dict(mode_tools or {})
        every = [r for rs in self.roles.values() for r in rs]
        self.placement_keys = ("mode", "tool", *dict.fromkeys([*DEFAULT_ROLES, *every]))
        self.hosts = None if hosts is None else sorted(hosts)
        self.resolve = resolve
        if tools is None:
            tools = registered()
        self.tools = dict(tools)
        self.mode_own = {m: tuple(opts) for m, opts in modes.items()}
        self.modes = {m: {o.name: o for o in (*COMMON_OPTIONS, *opts)} for m, opts in modes.items()}
        self.all_keys = {k for table in self.modes.values() for k in table}
        self.all_keys.update(o.name for o in COMMON_OPTIONS)
        self.all_keys.update(o.name for t in self.tools.values() for o in t.options)
        self.problems: list[str] = []
        self.bad_layer_keys: set[str] = set()  # mode/server/client given but wrong in a layer
        #: -e key -> the tests (file names) whose tool and mode take it; and each test's
        #: (name, tool, mode), for "-e KEY=VALUE that no test takes" (netrun.scenario.loader).
        self.took: dict[str, list[str]] = {}
        self.placed: list[tuple[str, str, str]] = []

    def add(self, prefix: str, text: str) -> None:
        self.problems.append(f"{prefix}: {text}")

    def unknown(self, prefix: str, key: Any, valid: Collection[str]) -> None:
        if not isinstance(key, str):
            self.add(prefix, f"key {show(key)} is not a string")
        else:
            self.add(prefix, f"unknown key {key!r}{did_you_mean(key, sorted(valid))}")

    def table(self, mode: str, tool: str) -> dict[str, Option]:
        """Every option of a test of ``tool`` in ``mode``: general, the tool's, the mode's."""
        if tool == DEFAULT_TOOL:
            return self.modes[mode]
        opts = (*GENERAL_OPTIONS, *self.tools[tool].options, *self.mode_own[mode])
        return {o.name: o for o in opts}

    def foreign(self, key: str, mode: str, tool: str) -> str:
        """The line for a key that belongs to another tool or mode than this test's."""
        tools = sorted(n for n, t in self.tools.items() if any(o.name == key for o in t.options))
        if tools:
            owners = ", ".join(map(repr, tools))
            return f"unknown key {key!r} for tool {tool!r} (an option of tool {owners})"
        modes = sorted(m for m, opts in self.mode_own.items() if any(o.name == key for o in opts))
        owners = ", ".join(map(repr, modes))
        return f"unknown key {key!r} for mode {mode!r} (an option of mode {owners})"

    def metric_names(self, pre: str, tool: str, options: Mapping[str, Any], mode: str) -> None:
        """``tolerances:`` may name only the metrics the test's tool declares (a ``load:``
        test's: netrun.tools.load), and ``load:``'s own keys are checked."""
        for text in load_spec.problems(tool, mode, options):
            self.add(pre, text)
        names = [m.name for m in with_load(self.tools[tool], options).metrics]
        for key in options.get("tolerances") or {}:
            if key not in names:
                self.add(
                    pre,
                    f"tolerances: {tool} has no metric {key!r}{did_you_mean(str(key), names)}"
                    f" (its metrics: {', '.join(names)})",
                )
        check = self.tools[tool].check
        if check is not None:
            for text in check(options):
                self.add(pre, text)

    def placement(self, prefix: str, key: str, value: Any) -> bool:
        """Check mode/server/client/tool: a known mode or tool, a host in the inventory."""
        if not isinstance(value, str) or not value:
            self.add(prefix, f"{key} must be a non-empty string, got {show(value)}")
        elif key == "tool" and value not in self.tools:
            self.add(prefix, f"unknown tool {value!r}{did_you_mean(value, sorted(self.tools))}")
        elif key == "tool":
            return True
        elif key == "mode" and value not in self.modes:
            self.add(prefix, f"unknown mode {value!r}{did_you_mean(value, sorted(self.modes))}")
        elif key != "mode" and self.resolve is not None:
            try:
                self.resolve(value)
            except InputError as exc:  # the role names no host, or several
                self.add(prefix, f"{key} {exc}")
            else:
                return True
        elif key != "mode" and self.hosts is not None and value not in self.hosts:
            self.add(
                prefix, f"{key} {value!r} is not in the inventory" + did_you_mean(value, self.hosts)
            )
        else:
            return True
        return False

    def combination(self, mode: str, tool: str, named: bool) -> str:
        """Why ``tool`` cannot measure in ``mode`` (the mode declares its tools), and the
        fix; "" when it can. Refused here so --check-only and `netrun check` say it."""
        tools = self.mode_tools.get(mode)
        if tools is None or tool in tools:
            return ""
        which = f"tool {tool!r}" if named else f"the default tool {tool!r}"
        fits = [m for m in sorted(self.modes) if tool in (self.mode_tools.get(m) or (tool,))]
        elsewhere = f" ({tool} runs in mode {', '.join(fits)})" if fits else ""
        return (
            f"mode {mode!r} measures with tool {', '.join(tools)} only, not {which}: "
            f"set tool: {tools[0]}, or another mode{elsewhere}"
        )

    def role(self, value: str) -> str:
        """The host a role value names (a group or pattern resolves to its one host)."""
        return value if self.resolve is None else self.resolve(value)

    def host_of(self, value: str) -> str:
        """``role(value)``, or the value itself when it names no one host (reported later)."""
        try:
            return self.role(value)
        except InputError:
            return value

    def option(self, prefix: str, key: str, value: Any, tables: list[dict[str, Option]]) -> bool:
        """Check a value against every definition of ``key`` (one line per distinct problem)."""
        found = {p for t in tables if key in t and (p := problem(t[key], key, value))}
        for text in sorted(found):
            self.add(prefix, text)
        return not found

    def every_table(self) -> list[dict[str, Option]]:
        """Every mode's and tool's options: a value must suit each that defines its key."""
        tables = list(self.modes.values()) or [{o.name: o for o in COMMON_OPTIONS}]
        return tables + [{o.name: o for o in t.options} for t in self.tools.values()]

    def layer(self, prefix: Callable[[str, Any], str], raw: Mapping[Any, Any]) -> dict[str, Any]:
        """Validate ``defaults`` or ``-e``: any option of any mode, plus mode and roles."""
        good: dict[str, Any] = {}
        tables = self.every_table()
        for key, value in raw.items():
            if isinstance(key, str) and key in self.placement_keys:
                ok = self.placement(prefix(key, value), key, value)
            elif key in (*_pairs.KEYS, _pairs.COUNT):  # a generated test's (netrun.scenario.pairs)
                found = _pairs.layer_problem(key, value)
                if found:
                    self.add(prefix(key, value), found)
                ok = found is None
            elif isinstance(key, str) and key in self.all_keys:
                # a layer serves every tool: one definition taking the value is enough
                # (bitrate: 1000pps is iperf2's); each test checks its own tool's later
                # (one line when none does: the first definition's, iperf3's for bitrate)
                owners = [t for t in tables if key in t]
                fits = [t for t in owners if not problem(t[key], key, value)]
                ok = bool(fits) or self.option(prefix(key, value), key, value, owners[:1])
            else:
                self.unknown(prefix(str(key), value), key, [*self.all_keys, *self.placement_keys])
                ok = False
            if ok:
                good[key] = value
            elif isinstance(key, str):
                self.bad_layer_keys.add(key)
        return good

    def test(
        self, i: int, raw: Any, defaults: Mapping[str, Any], overrides: Mapping[str, Any]
    ) -> list[TestSpec]:
        """One entry of ``tests``: its TestSpecs (several with a sweep), or [] if it is bad."""
        if not isinstance(raw, dict):
            self.add(f"{self.where}: tests[{i}]", f"must be a mapping, got {show(raw)}")
            return []
        before = len(self.problems)
        name = raw.get("name")
        pre = f"{self.where}: tests[{i}]" + (f" {name!r}" if isinstance(name, str) else "")
        if "name" not in raw:
            self.add(pre, "missing key 'name'")
        elif not isinstance(name, str) or not NAME_RE.fullmatch(name):
            self.add(
                pre,
                f"name {show(name)} is not safe for file names: use 1-64 of"
                " A-Z a-z 0-9 . _ -, starting with a letter or digit",
            )
        keys = self.placement_keys
        place = {k: v for k, v in defaults.items() if k in keys}
        for key in keys:
            if key in raw and not self.placement(pre, key, raw[key]):
                place[key] = None  # wrong here: no fallback to defaults
            elif key in raw:
                place[key] = raw[key]
        place.update((k, v) for k, v in overrides.items() if k in keys)
        mode = place.get("mode")
        tool = place.get("tool", DEFAULT_TOOL)
        table = None
        if isinstance(mode, str) and mode in self.modes and tool in self.tools:
            combination = self.combination(mode, str(tool), "tool" in raw or "tool" in place)
            if combination:
                self.add(pre, combination)
            else:
                table = self.table(mode, tool)
                self.placed.append((str(name), str(tool), mode))
                fan_entry = _pairs.is_fan(_pairs.entry(raw, defaults, overrides))
                for key in overrides:
                    took = key in table or key in keys or key in _pairs.KEYS
                    if took or (fan_entry and key == COUNT):
                        self.took.setdefault(key, []).append(str(name))
        roles = self.roles.get(mode, DEFAULT_ROLES) if isinstance(mode, str) else DEFAULT_ROLES
        generated = _pairs.is_generated(raw, defaults, overrides)
        if generated:  # hosts + pairs stand for server and client
            roles = tuple(r for r in roles if r not in DEFAULT_ROLES)
            for key in set(DEFAULT_ROLES) & set(raw):
                self.add(pre, f"{key!r} and 'hosts'/'pairs' exclude each other: {_pairs.USAGE}")
        for key in ("mode", *roles):
            if key not in place and key not in self.bad_layer_keys:
                known = f"; known modes: {', '.join(sorted(self.modes))}" if key == "mode" else ""
                self.add(pre, f"missing key {key!r}{known}")
        for key in raw:
            own_role = key in ("mode", "tool", *DEFAULT_ROLES) or key in roles
            if key in keys and not own_role and table is not None:
                owners = sorted(m for m, rs in self.roles.items() if key in rs)
                self.add(
                    pre,
                    f"unknown role {key!r} for mode {mode!r} (its roles: {', '.join(roles)};"
                    f" {key!r} is a role of mode {', '.join(map(repr, owners))})",
                )
        own: dict[str, Any] = {}
        for key, value in raw.items():
            if key in TEST_KEYS or key in keys:
                continue
            if table is not None and key in table:
                if self.option(pre, key, value, [table]):
                    own[key] = value
            elif table is not None and isinstance(key, str) and key in self.all_keys:
                self.add(pre, self.foreign(key, str(mode), str(tool)))
            elif table is None and isinstance(key, str) and key in self.all_keys:
                self.option(pre, key, value, self.every_table())  # mode unknown: still checked
            else:
                self.unknown(pre, key, [*(table or self.all_keys), *TEST_KEYS])
        placed = _pairs.entry(raw, defaults, overrides)  # hosts and pairs: defaults < test < -e
        fan_test = generated and _pairs.is_fan(placed)
        count = self.count(pre, raw, defaults, overrides, fan_test)
        sweep = self.sweep(pre, raw, table, own, overrides, fan_test) if "sweep" in raw else {}
        fan = tool in self.tools and self.tools[str(tool)].fan is not None
        extra = {r: str(place[r]) for r in roles if isinstance(place.get(r), str)}
        by_count: dict[int | None, list[_pairs.Pair]] = {}  # a fan's clients: N -> its pairs
        widths = sweep.get(COUNT) or [count]
        for width in widths:
            generate = [_pairs.Pair("", "", 0)]
            if generated:
                generate = self.pairs_of(pre, str(name), placed, overrides, width, len(widths))
            if generate and all(by_count[w] != generate for w in by_count):
                by_count[width] = generate  # (-e client= may narrow two counts alike: one)
            flows = []
            for pair in generate:
                shared = {r: self.host_of(h) for r, h in extra.items()} if pair.flows else {}
                ends = shared or dict.fromkeys(roles, "")
                if found := _pairs.flow_problem(pair, str(tool), fan, ends, _pairs.SHARED_ROLES):
                    flows.append(found)
            if flows:
                self.add(pre, flows[0])
            if flows or len(self.problems) > before:
                break
        if generated and not by_count and len(self.problems) == before:  # -e narrowed all
            self.pairs_of(pre, str(name), placed, overrides, widths[-1], 1)
        if len(self.problems) > before or table is None or not {"mode", *roles} <= set(place):
            return []  # (a placement wrong in defaults or -e is reported there, once)
        merged = {k: o.default for k, o in table.items()}
        layers = [{k: v for k, v in d.items() if k in table} for d in (defaults, own, overrides)]
        for layer in layers:
            merged.update(layer)
        self.inherited(pre, str(tool), table, layers, sweep)
        self.metric_names(pre, str(tool), merged, str(mode))
        if len(self.problems) > before:
            return []
        explicit = frozenset(k for layer in layers for k in layer) | frozenset(sweep) - {COUNT}
        resolved = {r: self.role(place[r]) for r in roles}  # a group names its one host
        if loopback := same_host_problem(resolved, merged):
            self.add(pre, loopback)
            return []
        if merged.get("bidir") and merged.get("reverse"):  # iperf3 refuses -R with --bidir
            self.add(pre, "bidir and reverse cannot both be true: bidir sends both ways")
            return []
        between = self.tools[str(tool)].check
        options = {k: v for k, v in sweep.items() if k != COUNT}  # the count is not an option
        for combo in itertools.product(*options.values()) if options and between else ():
            swept = dict(zip(options, combo, strict=True))
            shown = ",".join(f"{k}={name_part(v)}" for k, v in swept.items())
            assert between is not None
            for text in dict.fromkeys(between({**merged, **swept})):  # between options, per combo
                self.add(f"{self.where}: tests[{i}] {f'{name}[{shown}]'!r}", text)
        if len(self.problems) > before:
            return []
        specs = []
        combos = itertools.product(*options.values())
        for combo, width in itertools.product(combos, by_count):
            swept = dict(zip(options, combo, strict=True))
            label = ",".join(f"{k}={name_part(v)}" for k, v in swept.items())
            label = f"[{label}]" if swept else ""
            tags = {**swept, COUNT: width} if COUNT in sweep else swept  # the pair label says it
            for pair in by_count[width]:
                ends = {"server": pair.server, "client": pair.client} if pair.client else {}
                by_role = {**ends, **resolved}
                specs.append(
                    TestSpec(
                        name=f"{name}[{pair.label}]{label}" if pair.client else f"{name}{label}",
                        mode=str(mode),
                        server=by_role["server"],
                        client=by_role["client"],
                        roles=MappingProxyType(by_role),
                        index=i,
                        options=MappingProxyType({**merged, **swept}),
                        explicit=explicit,
                        base_name=str(name),
                        swept=MappingProxyType(tags),
                        tool=str(tool),
                        matrix=f"{name}{label}" if pair.client and not pair.flows else "",
                        pairs=_pairs.kind_of(placed) if pair.client else "",
                        slot=pair.slot,
                        flows=pair.flows,
                    )
                )
        return specs

    def pairs_of(
        self,
        pre: str,
        name: str,
        placed: dict[str, Any],
        overrides: Mapping[str, Any],
        count: int | None,
        counts: int,
    ) -> list[_pairs.Pair]:
        """A generated test's pairs (a fan's first ``count`` others), narrowed by -e
        server=/client=; [] after adding the problem. Of a sweep of ``counts`` widths,
        a width -e narrows to nothing is left out (the caller says so when all are)."""
        generate = _pairs.from_test(placed, self.select, count)
        narrow = {r: self.role(overrides[r]) for r in _pairs.ENDS if r in overrides}
        if not isinstance(generate, str):
            found = _pairs.narrow(generate, narrow, name)
            if isinstance(found, str) and counts > 1:
                return []
            generate = found
        if isinstance(generate, str):
            self.add(pre, generate)
            return []
        return generate

    def count(
        self,
        pre: str,
        raw: Mapping[str, Any],
        defaults: Mapping[str, Any],
        overrides: Mapping[str, Any],
        fan: bool,
    ) -> int | None:
        """A fan test's ``clients:`` (defaults < test < -e; None: every other host). The test's
        own on a test that is no fan is a problem; the defaults' and -e's serve fans only."""
        if COUNT in raw and (bad := _pairs.count_problem(raw[COUNT])):
            self.add(pre, bad)
        elif COUNT in raw and not fan:
            self.add(pre, _pairs.NOT_FAN)
        if not fan:
            return None
        value = next((d[COUNT] for d in (overrides, raw, defaults) if COUNT in d), None)
        return value if _pairs.count_problem(value) is None else None

    def inherited(
        self,
        pre: str,
        tool: str,
        table: Mapping[str, Option],
        layers: Sequence[Mapping[str, Any]],
        sweep: Mapping[str, Any],
    ) -> None:
        """A value from ``defaults`` or ``-e`` that this test's own tool refuses: the layer
        took it for another tool's (``-e bitrate=1000pps`` is iperf2's, not iperf3's)."""
        defaults, own, overrides = layers
        for key, option in table.items():
            if key in overrides:
                value, where = overrides[key], f"-e {key}"
            elif key in defaults and key not in own and key not in sweep:
                value, where = defaults[key], "defaults"
            else:
                continue
            bad = problem(option, key, value)
            if bad:
                self.add(pre, f"{bad} (set by {where}, for tool {tool} here)")

    def sweep(
        self,
        pre: str,
        test: Mapping[str, Any],
        table: dict[str, Option] | None,
        own: Mapping[str, Any],
        overrides: Mapping[str, Any],
        fan: bool,
    ) -> dict[str, list[Any]]:
        """Check ``sweep: {key: [values]}``; keys that -e sets are dropped (-e wins). A fan
        test may sweep its ``clients`` (netrun.scenario.pairs.COUNT)."""
        raw = test["sweep"]
        if not isinstance(raw, dict) or not raw:
            self.add(pre, f"sweep must be a non-empty mapping of key: [values], got {show(raw)}")
            return {}
        good: dict[str, list[Any]] = {}
        for key, values in raw.items():
            if key == COUNT:
                counts = self.counts(pre, test, values, fan)
                if counts and key not in overrides:
                    good[key] = counts
            elif table is not None and key not in table:
                self.unknown(f"{pre}: sweep", key, table)
            elif key in own:
                self.add(pre, f"{key!r} is set both in the test and in its sweep")
            elif not isinstance(values, list) or not values:
                self.add(pre, f"sweep: {key} must be a non-empty list, got {show(values)}")
            elif table is not None and key not in overrides:
                names = [name_part(v) for v in values]
                for n, value in enumerate(values):
                    bad = problem(table[key], f"{key}[{n}]", value)
                    if bad:
                        self.add(f"{pre}: sweep", bad)
                    elif names.index(names[n]) != n:
                        self.add(pre, f"sweep: {key} lists {show(value)} twice")
                good[key] = values
        if math.prod(len(v) for v in good.values()) > MAX_COMBINATIONS:
            self.add(pre, f"sweep expands into more than {MAX_COMBINATIONS} tests")
        return good

    def counts(self, pre: str, test: Mapping[str, Any], values: Any, fan: bool) -> list[int]:
        """``sweep: {clients: [...]}``'s counts; [] after adding the problem."""
        before = len(self.problems)
        if not fan:
            self.add(f"{pre}: sweep", _pairs.NOT_FAN)
        elif COUNT in test:
            self.add(pre, f"{COUNT!r} is set both in the test and in its sweep")
        elif not isinstance(values, list) or not values:
            self.add(pre, f"sweep: {COUNT} must be a non-empty list of counts, got {show(values)}")
        else:
            for n, value in enumerate(values):
                if bad := _pairs.count_problem(value):
                    self.add(f"{pre}: sweep", bad.replace(COUNT, f"{COUNT}[{n}]", 1))
                elif values.index(value) != n:
                    self.add(pre, f"sweep: {COUNT} lists {value} twice")
        return list(values) if len(self.problems) == before else []


def name_part(value: Any) -> str:
    """A swept value as written in a test name; anything unsafe for file names becomes _."""
    return re.sub(r"[^A-Za-z0-9._+-]", "_", show(value).strip("'"))
