"""Scenario files: which tests run, between which hosts, with which iperf3 options.

A scenario is checked completely before anything runs: every problem in the file is
collected and raised as one ScenarioError, one line each, naming the file, the test and the
key, with a "did you mean" hint. Values merge as option default < scenario ``defaults`` <
test < CLI ``-e`` (see invoke's Config.merge), and land in frozen TestSpecs.
"""

from __future__ import annotations

import itertools
import math
import re
import zlib
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from netrun import options as _options
from netrun import pairs as _pairs
from netrun import yamlfile
from netrun.errors import InputError, ScenarioError, did_you_mean
from netrun.flags import same_host_problem
from netrun.host import Host
from netrun.options import (  # noqa: F401  (re-exported: the checks' old home)
    GENERAL_OPTIONS,
    KEY_RE,
    Option,
    _scalar,
    expecting,
    integer,
    matching,
    number,
    parse_overrides,
    problem,
    seconds,
    show,
    size,
    size_value,
)
from netrun.tools import DEFAULT as DEFAULT_TOOL
from netrun.tools.base import Tool
from netrun.tools.iperf3_tool import OPTIONS as IPERF3_OPTIONS

MAX_BYTES = yamlfile.MAX_BYTES
MAX_NODES = 100_000  # YAML nodes after alias expansion: 5,000 tests or more, or an alias bomb
MAX_COMBINATIONS = 1000  # tests one sweep may expand into
#: Test and scenario names become file names: 1-64 of A-Z a-z 0-9 . _ -, no leading . _ -
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
TOP_KEYS = ("name", "description", "defaults", "tests", "baseline", "parallel", "forks")
#: Most tests run at once when a scenario asks for parallel execution (a host runs one at a time).
MAX_PARALLEL = 256
#: Most hosts connected, probed or swept at once (``forks``, as in Ansible).
MAX_FORKS = 256
PLACEMENT = ("mode", "server", "client", "tool")  # test keys that may also sit in defaults or -e
REQUIRED = ("mode", "server", "client")  # placement keys without a default
TEST_KEYS = ("name", *PLACEMENT, "sweep", *_pairs.KEYS)
#: The roles of a mode that declares none: the two ends of one iperf3 test.
DEFAULT_ROLES = ("server", "client")
_EMPTY: Mapping[str, Any] = MappingProxyType({})


#: Every option of an iperf3 test in any mode (scenario v1's option list; the CLI reads the
#: inventory-settable ones from it).
COMMON_OPTIONS: tuple[Option, ...] = (*GENERAL_OPTIONS, *IPERF3_OPTIONS)


# -- the frozen result ---------------------------------------------------------------------
@dataclass(frozen=True)
class TestSpec:
    """One test to run: placement, every option with defaults filled, what the user set."""

    __test__ = False  # not a pytest test class

    name: str
    mode: str
    server: str
    client: str
    index: int  # position in the file's tests list
    options: Mapping[str, Any]
    explicit: frozenset[str]  # options set by the test, defaults or -e
    base_name: str = ""  # the name in the file, without a sweep's [k=v,...] suffix
    swept: Mapping[str, Any] = field(
        default_factory=lambda: _EMPTY
    )  # this test's values from `sweep:`
    #: role -> host name for every role of the mode (server and client included); empty
    #: means just those two.
    roles: Mapping[str, str] = field(default_factory=lambda: _EMPTY)

    @property
    def hosts_by_role(self) -> Mapping[str, str]:
        """Every role's host, server and client first."""
        return self.roles or MappingProxyType({"server": self.server, "client": self.client})

    @property
    def hosts(self) -> tuple[str, ...]:
        """The distinct hosts this test holds, in role order (what it connects and locks)."""
        return tuple(dict.fromkeys(self.hosts_by_role.values()))

    tool: str = DEFAULT_TOOL  # what measures: iperf3, ping, ... (netrun.tools)
    #: A generated pair's matrix (its entry's name and sweep label), kind and tournament
    #: round (netrun.pairs); "" for a test that names its hosts.
    matrix: str = ""
    pairs: str = ""
    slot: int = 0

    def value(self, name: str) -> Any:
        """One option's merged value; an unknown name raises KeyError with a hint."""
        if name not in self.options:
            raise KeyError(
                f"no option {name!r} in test {self.name!r}" + did_you_mean(name, self.options)
            )
        return self.options[name]

    duration = property(lambda self: self.value("duration"))
    protocol = property(lambda self: self.value("protocol"))
    streams = property(lambda self: self.value("streams"))
    reverse = property(lambda self: self.value("reverse"))
    omit = property(lambda self: self.value("omit"))
    bitrate = property(lambda self: self.value("bitrate"))
    length = property(lambda self: self.value("length"))
    repeat = property(lambda self: self.value("repeat"))
    port = property(lambda self: self.value("port"))
    connect_timeout = property(lambda self: self.value("connect_timeout"))
    window = property(lambda self: self.value("window"))
    timeout = property(lambda self: self.value("timeout"))

    @property
    def tag(self) -> str:
        """Names the test's files and containers on a host; the generated pairs of one entry
        run at once, and a lab's hosts share /tmp, so each pair has its own."""
        return f"t{self.index}" + (f"p{zlib.crc32(self.name.encode()):08x}" if self.matrix else "")

    @property
    def deadline(self) -> float:
        """Seconds one run may take: ``timeout``, else warm-up + traffic + generous slack."""
        if self.timeout is not None:
            return float(self.timeout)
        get = self.options.get
        return float(get("omit", 0) + get("duration", 10) + 2 * get("connect_timeout", 5) + 30)


@dataclass(frozen=True)
class Scenario:
    """A validated scenario file: its tests in order, sweeps expanded."""

    name: str
    path: Path
    description: str | None
    tests: tuple[TestSpec, ...]
    defaults: Mapping[str, Any]
    baseline: str | None = None
    #: Tests that may run at once; never two on one host (1: one after another, the default).
    parallel: int = 1
    #: Hosts connected, probed and swept at once; None: ``-f`` or Ansible's default, 5.
    forks: int | None = None


# -- reading the file ----------------------------------------------------------------------
def _read(path: Path) -> Any:
    """The file's YAML data; any unreadable, oversized or hostile file is one plain error."""
    return yamlfile.load(path, ScenarioError, unique_keys=True, max_nodes=MAX_NODES)


# -- validation ----------------------------------------------------------------------------
class _Check:
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
    ) -> None:
        self.where = where
        self.select = select or _pairs.simple_select(hosts)
        self.roles = {m: tuple((roles or {}).get(m) or DEFAULT_ROLES) for m in modes}
        every = [r for rs in self.roles.values() for r in rs]
        self.placement_keys = ("mode", "tool", *dict.fromkeys([*DEFAULT_ROLES, *every]))
        self.hosts = None if hosts is None else sorted(hosts)
        self.resolve = resolve
        if tools is None:
            from netrun.tools import tools as registered

            tools = registered()
        self.tools = dict(tools)
        self.mode_own = {m: tuple(opts) for m, opts in modes.items()}
        self.modes = {m: {o.name: o for o in (*COMMON_OPTIONS, *opts)} for m, opts in modes.items()}
        self.all_keys = {k for table in self.modes.values() for k in table}
        self.all_keys.update(o.name for o in COMMON_OPTIONS)
        self.all_keys.update(o.name for t in self.tools.values() for o in t.options)
        self.problems: list[str] = []
        self.bad_layer_keys: set[str] = set()  # mode/server/client given but wrong in a layer

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

    def metric_names(self, pre: str, tool: str, options: Mapping[str, Any]) -> None:
        """``tolerances:`` may name only the metrics the test's tool declares."""
        names = [m.name for m in self.tools[tool].metrics]
        for key in options.get("tolerances") or {}:
            if key not in names:
                self.add(
                    pre,
                    f"tolerances: {tool} has no metric {key!r}{did_you_mean(str(key), names)}"
                    f" (its metrics: {', '.join(names)})",
                )
        if self.tools[tool].check is not None:
            for text in self.tools[tool].check(options):
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

    def role(self, value: str) -> str:
        """The host a role value names (a group or pattern resolves to its one host)."""
        return value if self.resolve is None else self.resolve(value)

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
            elif key in _pairs.KEYS:  # a generated test's pattern or kind (netrun.pairs)
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
            allowed = self.tools[tool].modes
            if allowed is not None and mode not in allowed:
                self.add(pre, f"tool {tool!r} runs in mode {', '.join(allowed)} only, not {mode!r}")
            else:
                table = self.table(mode, tool)
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
            placed = key in ("mode", "tool", *DEFAULT_ROLES) or key in roles
            if key in keys and not placed and table is not None:
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
        sweep = self.sweep(pre, raw["sweep"], table, own, overrides) if "sweep" in raw else {}
        generate: list[_pairs.Pair] | str = [_pairs.Pair("", "", 0)]
        placed = _pairs.entry(raw, defaults, overrides)  # hosts and pairs: defaults < test < -e
        if generated:
            generate = _pairs.from_test(placed, self.select)
        if generated and not isinstance(generate, str):  # -e server=/client= narrow them
            narrow = {r: self.role(overrides[r]) for r in _pairs.ENDS if r in overrides}
            generate = _pairs.narrow(generate, narrow, str(name))
        if isinstance(generate, str):
            self.add(pre, generate)
        if len(self.problems) > before or table is None or not {"mode", *roles} <= set(place):
            return []  # (a placement wrong in defaults or -e is reported there, once)
        merged = {k: o.default for k, o in table.items()}
        layers = [{k: v for k, v in d.items() if k in table} for d in (defaults, own, overrides)]
        for layer in layers:
            merged.update(layer)
        self.metric_names(pre, str(tool), merged)
        if len(self.problems) > before:
            return []
        explicit = frozenset(k for layer in layers for k in layer) | frozenset(sweep)
        resolved = {r: self.role(place[r]) for r in roles}  # a group names its one host
        if loopback := same_host_problem(resolved, merged):
            self.add(pre, loopback)
            return []
        if merged.get("bidir") and merged.get("reverse"):  # iperf3 refuses -R with --bidir
            self.add(pre, "bidir and reverse cannot both be true: bidir sends both ways")
            return []
        specs = []
        for combo, pair in itertools.product(itertools.product(*sweep.values()), generate):
            swept = dict(zip(sweep, combo, strict=True))
            label = ",".join(f"{k}={_name_part(v)}" for k, v in swept.items())
            label = f"[{label}]" if swept else ""
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
                    swept=MappingProxyType(swept),
                    tool=str(tool),
                    matrix=f"{name}{label}" if pair.client else "",
                    pairs=_pairs.kind_of(placed) if pair.client else "",
                    slot=pair.slot,
                )
            )
        return specs

    def sweep(
        self,
        pre: str,
        raw: Any,
        table: dict[str, Option] | None,
        own: Mapping[str, Any],
        overrides: Mapping[str, Any],
    ) -> dict[str, list[Any]]:
        """Check ``sweep: {key: [values]}``; keys that -e sets are dropped (-e wins)."""
        if not isinstance(raw, dict) or not raw:
            self.add(pre, f"sweep must be a non-empty mapping of key: [values], got {show(raw)}")
            return {}
        good: dict[str, list[Any]] = {}
        for key, values in raw.items():
            if table is not None and key not in table:
                self.unknown(f"{pre}: sweep", key, table)
            elif key in own:
                self.add(pre, f"{key!r} is set both in the test and in its sweep")
            elif not isinstance(values, list) or not values:
                self.add(pre, f"sweep: {key} must be a non-empty list, got {show(values)}")
            elif table is not None and key not in overrides:
                names = [_name_part(v) for v in values]
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


def _name_part(value: Any) -> str:
    """A swept value as written in a test name; anything unsafe for file names becomes _."""
    return re.sub(r"[^A-Za-z0-9._+-]", "_", show(value).strip("'"))


def load_scenario(
    path: str | Path,
    *,
    hosts: Collection[str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    modes: Mapping[str, Sequence[Option]] | None = None,
    roles: Mapping[str, Sequence[str]] | None = None,
    resolve: Callable[[str], str] | None = None,
    select: _pairs.Select | None = None,
) -> Scenario:
    """Read and fully validate a scenario; every problem at once in one ScenarioError.

    ``roles`` gives each mode's roles (default: server and client); it and ``modes``
    default to the registered modes'."""
    path = Path(path)
    if modes is None:
        from netrun.modes import mode_options, mode_roles  # late: modes import heavy libraries

        modes = mode_options()
        roles = mode_roles() if roles is None else roles
    data = _read(path)
    where = str(path)
    if not isinstance(data, dict):
        got = "the file is empty" if data is None else f"got {show(data)}"
        raise ScenarioError(f"{where}: must be a mapping with a 'tests' list; {got}")
    from netrun.tools import tools as registered  # late: ping imports the modes

    check = _Check(where, hosts, modes, roles, resolve, registered(), select)
    for key in data:
        if key not in TOP_KEYS:
            check.unknown(where, key, TOP_KEYS)
            if isinstance(key, str) and not did_you_mean(key, TOP_KEYS):
                check.problems[-1] += f" (valid keys: {', '.join(TOP_KEYS)})"
    name = data.get("name", path.stem)
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        check.add(
            where,
            f"name {show(name)} is not safe for file names: use 1-64 of"
            " A-Z a-z 0-9 . _ -, starting with a letter or digit",
        )
    description = data.get("description")
    if description is not None and not isinstance(description, str):
        check.add(where, f"description must be a string, got {show(description)}")
    baseline = data.get("baseline")
    if baseline is not None and (not isinstance(baseline, str) or not baseline.strip()):
        check.add(
            where,
            "baseline must be 'last', 'median:N', a run id or a results path, "
            f"got {show(baseline)}",
        )
    parallel = data.get("parallel", 1)
    if parallel is True:  # "parallel: true": as many at once as the hosts allow
        parallel = MAX_PARALLEL
    elif parallel is False:
        parallel = 1
    if isinstance(parallel, bool) or not isinstance(parallel, int):
        check.add(where, f"parallel must be true, false or a number of tests, got {show(parallel)}")
        parallel = 1
    elif not 1 <= parallel <= MAX_PARALLEL:
        check.add(where, f"parallel must be 1..{MAX_PARALLEL}, got {parallel}")
        parallel = 1
    forks = data.get("forks")
    if forks is not None and (
        isinstance(forks, bool) or not isinstance(forks, int) or not 1 <= forks <= MAX_FORKS
    ):
        check.add(where, f"forks must be a number of hosts, 1..{MAX_FORKS}, got {show(forks)}")
        forks = None
    raw_defaults = {} if data.get("defaults") is None else data["defaults"]
    defaults: dict[str, Any] = {}
    if not isinstance(raw_defaults, dict):
        check.add(where, f"defaults must be a mapping, got {show(raw_defaults)}")
    else:
        defaults = check.layer(lambda k, v: f"{where}: defaults", raw_defaults)
    good_overrides = check.layer(lambda k, v: f"-e {k}={_scalar(v)}", dict(overrides or {}))
    tests = data.get("tests")
    specs: list[TestSpec] = []
    if tests is None:
        check.add(where, "missing key 'tests' (a list of tests)")
    elif not isinstance(tests, list) or not tests:
        check.add(where, f"tests must be a non-empty list of tests, got {show(tests)}")
    else:
        first: dict[str, int] = {}
        for i, raw in enumerate(tests):
            specs.extend(check.test(i, raw, defaults, good_overrides))
            test_name = raw.get("name") if isinstance(raw, dict) else None
            if isinstance(test_name, str) and test_name in first:
                check.add(
                    f"{where}: tests[{i}] {test_name!r}",
                    f"duplicate test name {test_name!r} (first at tests[{first[test_name]}])",
                )
            elif isinstance(test_name, str):
                first[test_name] = i
    for key in _pairs.unused(good_overrides, specs, check.problems):
        check.add(f"-e {key}={_scalar(good_overrides[key])}", _pairs.NOT_GENERATED)
    if check.problems:
        raise ScenarioError(check.problems)
    return Scenario(
        name=str(name),
        path=path,
        description=description,
        tests=tuple(specs),
        defaults=MappingProxyType(defaults),
        baseline=baseline if isinstance(baseline, str) else None,
        parallel=parallel,
        forks=forks,
    )


def option_for(test: TestSpec, host: Host, name: str, options: Sequence[Option]) -> Any:
    """A from_inventory option of a test (see options.option_for); ``options`` are the
    mode's own, the general and the tool's are added here."""
    from netrun.tools import get_tool

    table = (*GENERAL_OPTIONS, *get_tool(test.tool).options, *options)
    return _options.option_for(test, host, name, table)
