"""Scenario validation: one walk over the file that collects every problem before raising.

Each problem is one line naming the file, the test and the key, with a "did you mean"
hint; values merge as option default < scenario ``defaults`` < test < CLI ``-e`` into
frozen TestSpecs (netrun.core.spec). netrun.scenario.loader reads the file and drives this.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from netrun.core.options import GENERAL_OPTIONS, Option, problem, show
from netrun.core.spec import DEFAULT_ROLES, DEFAULT_TOOL, TestSpec
from netrun.errors import InputError, did_you_mean
from netrun.results.flags import same_host_problem
from netrun.scenario import fanwidth
from netrun.scenario import sweep as sweeps
from netrun.scenario.fanwidth import COUNT
from netrun.scenario.generated import ENDS, entry, is_fan, is_generated, kind_of, layer_problem
from netrun.scenario.pairs import KEYS, SHARED_ROLES, USAGE, Select, flow_problem, simple_select
from netrun.tools import form
from netrun.tools import tools as registered
from netrun.tools.base import Tool
from netrun.tools.iperf3.tool import OPTIONS as IPERF3_OPTIONS
from netrun.tools.load import spec as load_spec

#: Test and scenario names become file names: 1-64 of A-Z a-z 0-9 . _ -, no leading . _ -
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
PLACEMENT = ("mode", "server", "client", "tool")  # test keys that may also sit in defaults or -e
REQUIRED = ("mode", "server", "client")  # placement keys without a default
TEST_KEYS = ("name", *PLACEMENT, "sweep", *KEYS, COUNT)

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
        select: Select | None = None,
        mode_tools: Mapping[str, Sequence[str] | None] | None = None,
    ) -> None:
        self.where = where
        self.select = select or simple_select(hosts)
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
        for text in load_spec.problems(tool, options):
            self.add(pre, text)
        names = [m.name for m in form.of(self.tools[tool], options).metrics]
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
            elif key in (*KEYS, COUNT):  # a generated test's (netrun.scenario.generated)
                found = fanwidth.count_problem(value) if key == COUNT else layer_problem(key, value)
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
        self,
        i: int,
        raw: Any,
        defaults: Mapping[str, Any],
        overrides: Mapping[str, Any],
        named: Mapping[str, Any] | None = None,
    ) -> list[TestSpec]:
        """One entry of ``tests``: its TestSpecs (several with a sweep), or [] if it is bad.
        ``named``: which of ``overrides`` came as ``-e NAME.KEY`` (to name them so)."""
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
                fan_entry = is_fan(entry(raw, defaults, overrides))
                for key in overrides:
                    took = key in table or key in keys or key in KEYS
                    if took or (fan_entry and key == COUNT):
                        self.took.setdefault(key, []).append(str(name))
        roles = self.roles.get(mode, DEFAULT_ROLES) if isinstance(mode, str) else DEFAULT_ROLES
        generated = is_generated(raw, defaults, overrides)
        if generated:  # hosts + pairs stand for server and client
            roles = tuple(r for r in roles if r not in DEFAULT_ROLES)
            for key in set(DEFAULT_ROLES) & set(raw):
                self.add(pre, f"{key!r} and 'hosts'/'pairs' exclude each other: {USAGE}")
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
        placed = entry(raw, defaults, overrides)  # hosts and pairs: defaults < test < -e
        fan_test = generated and is_fan(placed)
        count = fanwidth.layered(pre, raw, defaults, overrides, fan_test, self.add)
        sweep = {}
        if "sweep" in raw:
            sweep = sweeps.check(pre, raw, table, own, overrides, fan_test, self.add, self.unknown)
        fan = tool in self.tools and self.tools[str(tool)].fan is not None
        shared = {r: self.host_of(str(place[r])) for r in roles if isinstance(place.get(r), str)}
        serve = shared or dict.fromkeys(roles, "")  # a fan's other roles serve every flow
        set_by = ""  # the -e key that set the count, for its problems
        if COUNT in overrides:
            set_by = f"-e {name}.{COUNT}" if COUNT in (named or {}) else f"-e {COUNT}"
        elif COUNT in defaults and COUNT not in raw:
            set_by = fanwidth.DEFAULTS
        by_count = fanwidth.expand(  # a fan's clients: N -> its pairs
            placed if generated else None,
            sweep.get(COUNT) or [count],
            self.select,
            {r: self.role(overrides[r]) for r in ENDS if r in overrides} if generated else {},
            str(name),
            lambda pair: flow_problem(pair, str(tool), fan, serve, SHARED_ROLES),
            set_by,
            first_only=len(self.problems) > before,
        )
        if isinstance(by_count, str):
            self.add(pre, by_count)
            return []
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
        for swept, shown in sweeps.combinations(options) if options and between else ():
            assert between is not None
            for text in dict.fromkeys(between({**merged, **swept})):  # between options, per combo
                self.add(f"{self.where}: tests[{i}] {f'{name}[{shown}]'!r}", text)
        if len(self.problems) > before:
            return []
        specs = []
        combos = sweeps.combinations(options)
        for (swept, label), width in itertools.product(combos, by_count):
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
                        pairs=kind_of(placed) if pair.client else "",
                        slot=pair.slot,
                        flows=pair.flows,
                    )
                )
        return specs

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
