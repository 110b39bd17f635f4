"""Scenario files: which tests run, between which hosts, with which iperf3 options.

A scenario is checked completely before anything runs: every problem in the file is
collected and raised as one ScenarioError, one line each, naming the file, the test and the
key, with a "did you mean" hint. Values merge as option default < scenario ``defaults`` <
test < CLI ``-e`` (see invoke's Config.merge), and land in frozen TestSpecs.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from netrun.core import options as _options
from netrun.core import yamlfile
from netrun.core.options import (
    Option,
    _scalar,
    show,
)
from netrun.core.spec import Scenario, TestSpec
from netrun.errors import ScenarioError, did_you_mean
from netrun.hosts.host import Host
from netrun.modes import mode_options, mode_roles, mode_tools
from netrun.scenario import overrides as _overrides
from netrun.scenario.generated import NOT_GENERATED, unused
from netrun.scenario.pairs import Select
from netrun.scenario.validator import (
    NAME_RE,
    Check,
)
from netrun.tools import option_table
from netrun.tools import tools as registered

MAX_BYTES = yamlfile.MAX_BYTES
MAX_NODES = 100_000  # YAML nodes after alias expansion: 5,000 tests or more, or an alias bomb
TOP_KEYS = ("name", "description", "defaults", "tests", "baseline", "parallel", "forks")
#: Most tests run at once when a scenario asks for parallel execution (a host runs one at a time).
MAX_PARALLEL = 256
#: Most hosts connected, probed or swept at once (``forks``, as in Ansible).
MAX_FORKS = 256


# -- reading the file ----------------------------------------------------------------------
def _read(path: Path) -> Any:
    """The file's YAML data; any unreadable, oversized or hostile file is one plain error."""
    return yamlfile.load(path, ScenarioError, unique_keys=True, max_nodes=MAX_NODES)


def load_scenario(
    path: str | Path,
    *,
    hosts: Collection[str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    modes: Mapping[str, Sequence[Option]] | None = None,
    roles: Mapping[str, Sequence[str]] | None = None,
    resolve: Callable[[str], str] | None = None,
    select: Select | None = None,
    mode_tools_: Mapping[str, Sequence[str] | None] | None = None,
) -> Scenario:
    """Read and fully validate a scenario; every problem at once in one ScenarioError.

    ``roles`` gives each mode's roles (default: server and client); it and ``modes``
    default to the registered modes'."""
    path = Path(path)
    if modes is None:
        modes = mode_options()
        roles = mode_roles() if roles is None else roles
        mode_tools_ = mode_tools() if mode_tools_ is None else mode_tools_
    data = _read(path)
    where = str(path)
    if not isinstance(data, dict):
        got = "the file is empty" if data is None else f"got {show(data)}"
        raise ScenarioError(f"{where}: must be a mapping with a 'tests' list; {got}")

    check = Check(where, hosts, modes, roles, resolve, registered(), select, mode_tools_)
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
    every, per_test = _overrides.split(overrides or {})
    own: dict[int, dict[str, Any]] = {}
    good_overrides = check.layer(lambda k, v: f"-e {k}={_scalar(v)}", every)
    tests = data.get("tests")
    specs: list[TestSpec] = []
    if tests is None:
        check.add(where, "missing key 'tests' (a list of tests)")
    elif not isinstance(tests, list) or not tests:
        check.add(where, f"tests must be a non-empty list of tests, got {show(tests)}")
    else:
        first: dict[str, int] = {}
        own = _overrides.by_entry(check, tests, per_test)
        for i, raw in enumerate(tests):
            named = own.get(i, {})
            specs.extend(check.test(i, raw, defaults, {**good_overrides, **named}, named))
            test_name = raw.get("name") if isinstance(raw, dict) else None
            if isinstance(test_name, str) and test_name in first:
                check.add(
                    f"{where}: tests[{i}] {test_name!r}",
                    f"duplicate test name {test_name!r} (first at tests[{first[test_name]}])",
                )
            elif isinstance(test_name, str):
                first[test_name] = i
    for key in unused(good_overrides, specs, check.problems):
        check.add(f"-e {key}={_scalar(good_overrides[key])}", NOT_GENERATED)
    entries = tests if isinstance(tests, list) else []
    _overrides.untaken(check, entries, good_overrides, own if entries else {})
    specs = _overrides.apply_to_specs(check, entries, specs, per_test)
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
    return _options.option_for(test, host, name, option_table(test.tool, options))
