"""Scenario options: what a key accepts, its default, and the checks behind it.

Tools and modes declare their own options with ``Option`` and the checks here; the scenario
loader only walks them. Kept apart from scenario/loader.py and modes/ so that neither imports the
other (a mode's options and the file that reads them used to import each other).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import yaml

from netrun.core import yamlfile
from netrun.core.metrics import tolerance_problem
from netrun.errors import ScenarioError, did_you_mean

if TYPE_CHECKING:
    from netrun.core.spec import TestSpec

#: Types YAML may hand us for an option; ``int`` values are accepted where floats are.
Kind = type | tuple[type, ...]


class VarsHolder(Protocol):
    """What an inventory-settable option reads of a host (a netrun.hosts.host.Host)."""

    @property
    def name(self) -> str: ...
    @property
    def vars(self) -> Mapping[str, Any]: ...


SIZE_RE = re.compile(r"([0-9]+(?:\.[0-9]+)?)([KMGTkmgt]?)")
KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: ``-e TEST.KEY=VALUE``: a test's name (a generated or swept one's [...] may hold '=' and
#: '.'), a dot, then the key; the first '=' outside brackets ends it.
TEST_KEY_RE = re.compile(
    r"\s*(?P<test>[^=\[\s][^=\[]*?(?:\[[^\]]*\])*)\.(?P<key>[A-Za-z_][A-Za-z0-9_]*)\s*=(?P<value>.*)",
    re.DOTALL,
)


@dataclass(frozen=True)
class Option:
    """One scenario key: its accepted types, default and a check for its value.

    ``check`` returns a problem text (e.g. "must be > 0") or None when the value is fine.
    Options with ``from_inventory`` may also be set as the inventory variable
    ``netrun_<name>`` on the hosts involved (the test and defaults win over inventory).
    """

    name: str
    kind: Kind
    default: Any
    help: str
    choices: tuple[Any, ...] | None = None
    check: Callable[[Any], str | None] | None = None
    nullable: bool = False
    from_inventory: bool = False


def expecting(expects: str, ok: Callable[[Any], bool]) -> Callable[[Any], str | None]:
    """An Option.check that says "must be <expects>"; type errors reuse the same words."""

    def check(value: Any) -> str | None:
        return None if ok(value) else f"must be {expects}"

    check.expects = expects  # type: ignore[attr-defined]
    return check


def number(
    minimum: float, *, strict: bool, maximum: float | None = None
) -> Callable[[Any], str | None]:
    """A finite number above (strict) or at least ``minimum``, and at most ``maximum``."""
    sign = ">" if strict else ">="
    upto = "" if maximum is None else f" and <= {maximum:g}"
    return expecting(
        f"a number {sign} {minimum:g}{upto}",
        lambda v: (
            (v > minimum if strict else v >= minimum)
            and (maximum is None or v <= maximum)
            # an int is finite (a 400-digit one would overflow float()); .inf is not
            and (isinstance(v, int) or math.isfinite(v))
        ),
    )


def seconds(low: int, high: int) -> Callable[[Any], str | None]:
    """Whole seconds in ``low..high``: iperf3 reads -t and -O as whole seconds (1.5 would
    silently become 1), and refuses -t above 86400 and -O above 600 (60 before 3.18)."""
    return expecting(
        f"a whole number of seconds from {low} to {high}",
        lambda v: low <= v <= high and float(v).is_integer(),
    )


def integer(low: int, high: int | None = None) -> Callable[[Any], str | None]:
    """An integer in ``low..high`` (inclusive)."""
    text = f"an integer >= {low}" if high is None else f"an integer from {low} to {high}"
    return expecting(text, lambda v: v >= low and (high is None or v <= high))


def size_value(value: Any) -> float | None:
    """Bytes (or bits/s) of an iperf3 size such as 100, 128K or 1G; None if malformed."""
    if isinstance(value, int) and not isinstance(value, bool):
        return float(max(-(2**100), min(value, 2**100)))  # a 400-digit int overflows float()
    match = SIZE_RE.fullmatch(value) if isinstance(value, str) else None
    if not match:
        return None
    return float(match[1]) * 1024 ** " KMGT".index(match[2].upper() or " ")


def size(minimum: int, maximum: str) -> Callable[[Any], str | None]:
    """An iperf3 size: an integer or digits with an optional K, M, G or T suffix, at most
    ``maximum`` (iperf3's own limit, where it has one)."""
    low = "" if minimum == 0 else " > 0"
    high = size_value(maximum)
    return expecting(
        f"an iperf3 size such as 100, 128K or 1G{low}, at most {maximum}",
        lambda v: (n := size_value(v)) is not None and minimum <= n <= (high or 0),
    )


def matching(pattern: str, expects: str) -> Callable[[Any], str | None]:
    """A string option held to a strict pattern (nothing a shell would read specially)."""
    regex = re.compile(pattern)
    return expecting(expects, lambda v: regex.fullmatch(v) is not None)


_KIND_TEXT = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}


def show(value: Any) -> str:
    """A value as the user wrote it in YAML, shortened for one-line messages."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    text = repr(value) if isinstance(value, str) else _short_repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _short_repr(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return repr(value)


def _kind_ok(kind: type | tuple[type, ...], value: Any) -> bool:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool):  # YAML's yes/true is never a number
        return bool in kinds
    if isinstance(value, int) and float in kinds:
        return True
    return isinstance(value, tuple(k for k in kinds if k is not bool))


def problem(option: Option, key: str, value: Any) -> str | None:
    """What is wrong with ``value`` for ``option``, as "<key> must be ..., got ...", or None."""
    if value is None and option.nullable:
        return None
    kinds = option.kind if isinstance(option.kind, tuple) else (option.kind,)
    expects = getattr(option.check, "expects", None) or " or ".join(
        _KIND_TEXT.get(k, k.__name__) for k in kinds
    )
    if option.choices is not None:
        expects = "one of " + ", ".join(str(c) for c in option.choices)
    what: str | None
    if value is None or not _kind_ok(option.kind, value):
        what = f"must be {expects}"
        if isinstance(value, bool):
            return f"{key} {what}, got {show(value)} (YAML reads yes/no/on/off as true/false)"
    elif isinstance(value, str) and any(ord(c) < 32 or ord(c) == 127 for c in value):
        what = "must not contain control characters"
    elif option.choices is not None and value not in option.choices:
        hint = did_you_mean(
            value.lower() if isinstance(value, str) else str(value),
            [str(c) for c in option.choices],
        )
        return f"{key} must be {expects}, got {show(value)}{hint}"
    else:
        what = option.check(value) if option.check else None
        if what is None:
            return None
        if what.startswith("."):  # the check named the entry and the value itself
            return f"{key}{what}"
    return f"{key} {what}, got {show(value)}"


def option_for(test: TestSpec, host: VarsHolder, name: str, options: Iterable[Option]) -> Any:
    """A from_inventory option among ``options`` (the test's whole table): the explicit
    scenario value, else the host's netrun_<mode>_<name> (one mode's own, e.g.
    netrun_docker_network: a host whose docker0 is on the overlay keeps a routed network
    for docker mode), else its netrun_<name>, else the default. A bad inventory value
    raises ScenarioError naming the host and variable."""
    table = {o.name: o for o in options}
    if name not in table:
        raise KeyError(f"no option {name!r}{did_you_mean(name, table)}")
    option = table[name]
    if not option.from_inventory or name in test.explicit:
        return test.options.get(name, option.default)
    scoped = f"{test.mode}_{name}"  # not when that is an option's own (turn_port is not port's)
    names = ([f"netrun_{scoped}"] if scoped not in table else []) + [f"netrun_{name}"]
    var = next((v for v in names if v in host.vars), None)
    if var is None:
        return test.options.get(name, option.default)
    value = host.vars[var]
    bad = problem(option, var, value)
    if bad:
        raise ScenarioError(f"inventory host {host.name!r}: {bad}")
    return value


def _tolerances(value: Any) -> str | None:
    """``tolerances: {metric: 20% | number | [20%, number] | null}``; the metric names are
    checked per tool. A bad entry is named as ``.metric`` with its value (see ``problem``)."""

    if not isinstance(value, dict) or not value:
        return "must be a mapping of metric: tolerance, e.g. {rtt_avg_ms: 20%, lost_percent: 0.5}"
    for key, each in value.items():
        if not isinstance(key, str):
            return f"must name metrics by string, got {show(key)}"
        bad = tolerance_problem(each)
        if bad:
            return f".{key}: {bad}; got {show(each)}"
    return None


_tolerances.expects = "a mapping of metric: tolerance"  # type: ignore[attr-defined]

#: ``max_loss``'s default per tool, in % of the datagrams sent: a UDP test that lost more
#: measured a lossy or overrun path, not the rate it asked for (status flagged
#: loss-above-max). Kept here, below the tools and netrun.results.flags, so a run saved
#: before the option existed is judged by the same default.
MAX_LOSS_DEFAULTS: dict[str, float] = {"iperf3": 1.0, "iperf2": 1.0}


def max_loss_option(tool: str) -> Option:
    """The ``max_loss`` key of a tool that counts lost datagrams, with its default."""
    return Option(
        "max_loss", (int, float), MAX_LOSS_DEFAULTS[tool],
        "UDP loss in % above which the figure is not the one asked for (status flagged "
        "loss-above-max); null: no limit", check=number(0, strict=False, maximum=100),
        nullable=True,
    )  # fmt: skip


# fmt: off
#: Options of every test that say how it is run and judged, never where its ends are or
#: what they start (a kept container serves tests that differ in them:
#: netrun.modes.docker.savers.keep).
RUN_OPTIONS: tuple[Option, ...] = (
    Option("repeat", int, 1, "how many times the runner repeats the test",
           check=integer(1, 10000)),
    Option("timeout", (int, float), None, "deadline in seconds for one run; null: derived",
           check=number(0, strict=True, maximum=7 * 86400), nullable=True),
    Option("allow_same_host", bool, False, "let two roles be one host: the test measures "
           "loopback and is flagged same-host"),
    Option("tolerances", dict, None, "allowed change per metric against the baseline, "
           "e.g. {rtt_avg_ms: 20%, lost_percent: 0.5, rtt_min_ms: [20%, 0.05], "
           "rtt_mdev_ms: null}", check=_tolerances, nullable=True),
)
#: Options of every test, whatever its tool and mode.
GENERAL_OPTIONS: tuple[Option, ...] = (
    *RUN_OPTIONS,
    # MTU tuning (netrun.run.mtu): set for the test on every role's data NIC, checked, restored
    Option("mtu", int, None, "MTU of every role's data NIC during the test; null: as is",
           check=integer(576, 65535), nullable=True),
    Option("overlay_mtu", int, None, "the overlay's MTU with mtu: (default mtu - 50)",
           check=integer(576, 65535), nullable=True),
    Option("allow_management_mtu", bool, False, "let mtu: change a NIC that also carries "
           "netrun's SSH session"),
)
# fmt: on


# -- -e key=value ---------------------------------------------------------------------------
def _scalar(value: Any) -> str:
    """A -e value written back as the user typed it."""
    return show(value).strip("'") if isinstance(value, str) else show(value)


def split_test_key(key: str) -> tuple[str, str]:
    """(test name, key) of an ``-e TEST.KEY`` override's key; ("", key) for every test."""
    test, dot, own = key.rpartition(".")
    return (test, own) if dot else ("", key)


def parse_overrides(pairs: Sequence[str]) -> dict[str, Any]:
    """CLI ``-e key=value`` pairs; each value is read as one YAML scalar (``-e k=`` is null).

    ``-e TEST.KEY=VALUE`` overrides one test: its key is ``TEST.KEY`` (split_test_key)."""
    found: dict[str, Any] = {}
    problems: list[str] = []
    for pair in pairs:
        qualified = TEST_KEY_RE.fullmatch(pair)
        if qualified:
            key = f"{qualified['test'].strip()}.{qualified['key']}"
            sep, text = "=", qualified["value"]
        else:
            key, sep, text = pair.partition("=")
        if not sep or not (qualified or KEY_RE.fullmatch(key.strip())):
            problems.append(f"-e {pair!r}: expected key=value or TEST.key=value, e.g. -e streams=4")
            continue
        try:
            value = yaml.load(text, Loader=yamlfile.SafeLoader) if text.strip() else None
        except (yaml.YAMLError, ValueError, RecursionError):  # ValueError: a date 2024-13-45
            problems.append(f"-e {pair}: the value is not a valid YAML scalar; quote it")
            continue
        if isinstance(value, list | dict) or not isinstance(value, str | int | float | None):
            problems.append(f"-e {pair}: the value must be one plain value, got {show(value)}")
            continue
        found[key.strip()] = value
    if problems:
        raise ScenarioError(problems)
    return found
