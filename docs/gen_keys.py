"""Write docs/user-guide/scenario-keys.md: every scenario key, from the code's own declarations.

The options tables come from what netrun validates with (``netrun.core.options.GENERAL_OPTIONS``,
each registered tool's ``options``, each registered mode's ``options``), so the page cannot
drift from the code: tests/unit/test_docs_keys.py fails when the checked-in page is stale.
Run it with ``make docs-keys`` (or ``python docs/gen_keys.py``); ``--check`` only compares.

The keys that shape a scenario rather than a measurement (``name``, ``tests``, ``sweep``...)
carry no Option declaration; they are described here, and the script refuses to run when the
code knows a key this list does not, so a new one cannot go undocumented.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from netrun import modes  # noqa: E402
from netrun.core.metrics import Metric, parse_tolerance  # noqa: E402
from netrun.core.options import GENERAL_OPTIONS, Option  # noqa: E402
from netrun.core.spec import DEFAULT_TOOL  # noqa: E402
from netrun.history.baseline import WORST_REPEAT  # noqa: E402
from netrun.scenario import loader as scenario  # noqa: E402
from netrun.scenario import pairs, validator  # noqa: E402
from netrun.tools import tools  # noqa: E402

PAGE = ROOT / "docs" / "user-guide" / "scenario-keys.md"

#: Top-level keys of a scenario file: (type, default, meaning).
TOP: dict[str, tuple[str, str, str]] = {
    "name": (
        "string",
        "the file name without .yaml",
        "the scenario's name: results folder, history "
        "and baselines use it; 1-64 of A-Z a-z 0-9 . _ -",
    ),
    "description": ("string", "-", "free text for the reader; netrun only checks it is a string"),
    "defaults": (
        "mapping",
        "-",
        "any test key; a test overrides it, `-e KEY=VALUE` overrides both",
    ),
    "tests": ("list of mappings", "(required)", "the tests, run in this order"),
    "baseline": (
        "string",
        "-",
        "`last`, `median:N`, a run id or a results path: what each "
        "test is compared with (`--baseline` on the command line wins)",
    ),
    "parallel": (
        "integer or boolean",
        "1",
        "tests at once, never two on one host; `true`: "
        f"as many as the hosts allow (`-p N`; 1..{scenario.MAX_PARALLEL})",
    ),
    "forks": (
        "integer",
        "5",
        f"hosts connected to, probed and swept at once (`-f N`; 1..{scenario.MAX_FORKS})",
    ),
}

#: Keys of a test that place it rather than measure: (type, default, meaning).
TEST: dict[str, tuple[str, str, str]] = {
    "name": (
        "string",
        "(required)",
        "the test's name, unique in the scenario; file names and history use it",
    ),
    "mode": (
        "string",
        "(required)",
        "how the ends are placed: " + ", ".join(f"`{m}`" for m in modes.mode_roles()),
    ),
    "tool": (
        "string",
        f"`{DEFAULT_TOOL}`",
        "what measures: " + ", ".join(f"`{t}`" for t in tools()),
    ),
    "server": (
        "string",
        "(required unless `hosts`)",
        "role: a host, a group or a host pattern resolving to one host",
    ),
    "client": ("string", "(required unless `hosts`)", "role: as `server`"),
    "sweep": (
        "mapping of lists",
        "-",
        "one test per value (or combination): `sweep: {length: [100, 1400]}`",
    ),
    "hosts": (
        "string",
        "-",
        "instead of roles: a host pattern whose pairs become the tests (with `pairs:`)",
    ),
    "pairs": (
        "string or mapping",
        "-",
        "`mesh`, `mesh-once`, `ring`, `{star: HOST}`, `{between: [A, B]}`; or one test of"
        " flows at once: `{fanin: HOST}`, `{fanout: HOST}`",
    ),
    "clients": (
        "integer",
        "every other host",
        "a fan test's width: the first N hosts of `hosts` other than the fan host;"
        " sweep it for one test per count: `sweep: {clients: [1, 2, 4]}`",
    ),
}

_KIND = {int: "integer", float: "number", str: "string", bool: "boolean", dict: "mapping"}


def kind_text(option: Option) -> str:
    """The option's YAML type in words: ``(int, float)`` is a number, ``(int, str)`` a size."""
    kinds = option.kind if isinstance(option.kind, tuple) else (option.kind,)
    if set(kinds) == {int, float}:
        text = "number"
    elif set(kinds) == {int, str}:
        text = "integer or string"
    else:
        text = " or ".join(_KIND.get(k, k.__name__) for k in kinds)
    return text + (" or null" if option.nullable else "")


def default_text(value: Any) -> str:
    """A default as a scenario would write it."""
    if value is None or isinstance(value, bool):
        return f"`{ {None: 'null', True: 'true', False: 'false'}[value] }`"
    return f"`{value}`"


def accepts_text(option: Option) -> str:
    """What a value must be, in the words the validator's error uses."""
    if option.choices is not None:
        return ", ".join(f"`{c}`" for c in option.choices)
    return str(getattr(option.check, "expects", "") or "")


def cell(text: str) -> str:
    """A table cell: pipes escaped, so a help text cannot break the row."""
    return text.replace("|", "\\|").replace("\n", " ")


def owners() -> list[tuple[str, Sequence[Option]]]:
    """(who owns it, its options), in the order the page lists them; a mode's inherited
    options (flannel takes docker's) are listed once, under the first mode declaring them."""
    found: list[tuple[str, Sequence[Option]]] = [("every test", GENERAL_OPTIONS)]
    found += [(f"tool `{name}`", tool.options) for name, tool in tools().items()]
    seen: dict[str, list[str]] = {}
    per_mode = modes.mode_options()
    for name, options in per_mode.items():
        for option in options:
            seen.setdefault(option.name, []).append(name)
    for name, options in per_mode.items():
        own = [o for o in options if seen[o.name][0] == name]
        if own:
            also = sorted({m for o in own for m in seen[o.name][1:]})
            label = f"mode `{name}`" + (f" (and {', '.join(also)})" if also else "")
            found.append((label, own))
    return found


def table(rows: Iterable[Sequence[str]], header: Sequence[str]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return out


def check_coverage() -> None:
    """Refuse to write a page that misses a key the code knows (or lists one it does not)."""
    missing = set(scenario.TOP_KEYS) ^ set(TOP)
    roles = {r for rs in modes.mode_roles().values() for r in rs}
    test_keys = set(validator.TEST_KEYS) | set(pairs.KEYS)
    unknown = (test_keys - set(TEST) - roles) | (set(TEST) - test_keys)
    if missing or unknown:
        raise SystemExit(f"gen_keys.py: describe or drop these keys: {sorted(missing | unknown)}")


def render() -> str:
    """The whole page."""
    check_coverage()
    roles = {r: m for m, rs in modes.mode_roles().items() for r in rs if r not in TEST}
    lines = [
        "# Every scenario key",
        "",
        "<!-- Generated by docs/gen_keys.py from netrun's own option declarations "
        "(make docs-keys); do not edit by hand. -->",
        "",
        "This page is generated from the declarations netrun validates scenarios with, so it",
        "lists exactly what a scenario accepts. [Scenarios](scenarios.md) explains how the",
        "keys combine.",
        "",
        "## The scenario file",
        "",
        *table(
            ((f"`{k}`", *TOP[k]) for k in scenario.TOP_KEYS), ("key", "type", "default", "meaning")
        ),
        "",
        "## A test's placement",
        "",
        "These keys say what runs where. Except `name` and `sweep`, each may also sit in",
        "`defaults` or be given with `-e KEY=VALUE`.",
        "",
        *table(
            [(f"`{k}`", *v) for k, v in TEST.items()]
            + [
                (f"`{r}`", "string", "(required)", f"role of mode `{m}`: as `server`")
                for r, m in roles.items()
            ],
            ("key", "type", "default", "meaning"),
        ),
        "",
        "## Options",
        "",
        "A test takes the options of every test, of its tool and of its mode; any other key",
        "is refused with one line that names the owner of the key. The value layers are:",
        "the default below < `defaults` < the test < `-e KEY=VALUE`. A key marked",
        "*inventory* may also be set per host as the inventory variable `netrun_<key>`",
        "(a value in the scenario or on the command line wins).",
        "",
    ]
    rows = []
    for owner, options in owners():
        for o in options:
            inventory = "yes" if o.from_inventory else ""
            rows.append(
                (
                    f"`{o.name}`",
                    kind_text(o),
                    default_text(o.default),
                    owner,
                    inventory,
                    accepts_text(o),
                    o.help,
                )
            )
    lines += table(rows, ("key", "type", "default", "owner", "inventory", "accepts", "meaning"))
    lines += metric_lines()
    return "\n".join(lines) + "\n"


def tolerance_text(metric: Metric) -> str:
    """A metric's default tolerance in words: relative, or absolute in its unit."""
    if metric.tolerance is None:
        return "not judged unless `tolerances:` names it"
    kind, value = parse_tolerance(metric.tolerance)
    if kind == "relative":
        return f"{value * 100:g}% worse"
    unit = metric.unit
    if unit == "%":
        unit = "percentage point" + ("" if value == 1 else "s")
    return f"{value:g} {unit} worse"


def metric_lines() -> list[str]:
    """The section listing every tool's metrics with the default tolerance a verdict uses."""
    rows = [
        (
            f"`{m.name}`",
            f"`{name}`",
            m.shown_unit or m.unit or "-",
            f"{m.better} is better",
            tolerance_text(m),
            f"{m.floor:g} {m.unit}" if m.floor else "-",
            "worst repeat" if m.name in WORST_REPEAT else "median",
            m.description,
        )
        for name, tool in tools().items()
        for m in tool.metrics
    ]
    return [
        "",
        "## Metrics and their default tolerances",
        "",
        "With a baseline (`--baseline`), every metric of a test is compared with the",
        "baseline's: a change for the worse beyond its tolerance is `regressed` (exit 3). A",
        "percentage is relative to the baseline's figure; a number is in the metric's unit",
        "(loss in percentage points: 0.2% -> 1.5% is 1.3 points). `tolerances: {METRIC: ...}`",
        "in a test or in `defaults` replaces a default (`[20%, 0.05]`: both, a change must",
        "exceed both; `null`: not judged); iperf3's `tolerance` (and",
        "`--tolerance`) sets its throughput's. Loss is judged on each side's worst repeat, so",
        "one repeat that lost far more than its siblings is not hidden by their median. A",
        "relative tolerance cannot judge a baseline of 0, so counts (retransmits, reordered",
        "datagrams) have absolute ones. A metric without a default (CPU use, the whole host's;",
        "figures that restate another: the sender's rate and pps the headline, iperf2's",
        "`lost` the loss, iperf3's TCP windows the path's bandwidth-delay product, ping's",
        "`rtt_p50_ms` and netperf's `latency_mean_us` the headline) is judged only when",
        "`tolerances:` names it. A change under a metric's floor (the tool's resolution:",
        "ping's times move by tens of microseconds with scheduling, netperf's histogram",
        "buckets are 10 us wide) is never judged, unless a tolerance names an amount of its",
        "own (`[20%, 0.01]`), which replaces the floor. Noise can widen a",
        "tolerance to at most 3 times: see [Nightly runs](nightly.md#baselines-and-verdicts).",
        "",
        *table(
            rows,
            (
                "metric",
                "tool",
                "unit",
                "direction",
                "default tolerance",
                "floor",
                "judged on",
                "meaning",
            ),
        ),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if the page is stale")
    args = ap.parse_args(argv)
    os.environ.pop(modes.EXTRA_ENV, None)  # the tests' extra modes are not netrun's
    text = render()
    if args.check:
        if PAGE.read_text() != text:
            print(f"{PAGE.relative_to(ROOT)} is stale: run make docs-keys", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text)
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
