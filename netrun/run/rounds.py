"""Rounds: which tests of a parallel run go together, no host in two tests of a round.

A greedy start-when-free scheduler runs a mesh in scenario order badly (alpha's seven tests
queue behind each other). Planning first, like a round-robin tournament, gives the bound:
an N-host mesh-once in N-1 rounds (N even) or N (odd), an ordered mesh in twice that.
Generated pairs carry their tournament round (netrun.scenario.pairs); every test then goes into the
first round where all its hosts are free (first-fit), in that order. The scheduler runs the
tests in round order and never lets a later test overtake an earlier one on a host, so the
plan holds even when one test of a round runs late.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from netrun.core.spec import Scenario, TestSpec

DEFAULT_ROLES = ("server", "client")


def plan_order(tests: Sequence[TestSpec]) -> list[TestSpec]:
    """Scenario order, but each run of consecutive tests of one matrix by tournament round."""
    out: list[TestSpec] = []
    block: list[TestSpec] = []
    for test in tests:
        if block and test.matrix != block[0].matrix:
            out += sorted(block, key=lambda t: t.slot) if block[0].matrix else block
            block = []
        block.append(test)
    out += sorted(block, key=lambda t: t.slot) if block and block[0].matrix else block
    return out


def plan(tests: Sequence[TestSpec], width: int) -> list[list[TestSpec]]:
    """The rounds of a run of up to ``width`` tests at once (width 1: one test a round)."""
    if width <= 1:
        return [[t] for t in tests]
    rounds: list[list[TestSpec]] = []
    used: list[set[str]] = []
    for test in plan_order(tests):
        hosts = set(test.hosts)
        for i, busy in enumerate(used):
            if not hosts & busy and len(rounds[i]) < width:
                rounds[i].append(test)
                busy |= hosts
                break
        else:
            rounds.append([test])
            used.append(hosts)
    return rounds


def listing(scenario: Scenario, allowed: Collection[str] | None, width: int) -> list[str]:
    """--list-tests: every test (client -> server), then the rounds of those within -l
    (``allowed``: its hosts); built from the files alone, nothing is contacted."""
    tests = [t for t in scenario.tests if allowed is None or set(t.hosts) <= set(allowed)]
    lines = [f"{scenario.path}: {len(scenario.tests)} tests; nothing was contacted"]
    for test in scenario.tests:
        extra = "".join(f", {r} {h}" for r, h in test.roles.items() if r not in DEFAULT_ROLES)
        skipped = "  [outside -l]" if test not in tests else ""
        where = f"{test.client} -> {test.server}"
        if test.flows:  # several flows at once (netrun.run.flows); ``clients: 1``: one
            many = f"{len(test.flows)} flows at once" if len(test.flows) > 1 else "1 flow"
            where = f"{many}: " + ", ".join(f.label for f in test.flows)
        lines.append(f"  {test.name}: {test.mode}, {where}{extra}{skipped}")
    rounds = plan(tests, width)
    if width <= 1:
        lines.append(f"{len(tests)} tests run one after another (parallel is off)")
        return lines
    lines.append(f"{len(tests)} tests in {len(rounds)} rounds, at most {width} at once:")
    for i, tests_ in enumerate(rounds, 1):
        lines.append(f"  round {i}: " + ", ".join(t.name for t in tests_))
    return lines
