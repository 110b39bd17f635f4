"""``--check-only`` and ``--list-tests``: what a run will do, printed before anything runs.

Both connect to nothing. Under each test come its data addresses, resolved options, the
commands each host will run and the expected time (netrun.run.preview); at the end the
run's expected total (its rounds' when tests run in parallel).
"""

from __future__ import annotations

from typing import Any

from netrun.core.spec import DEFAULT_ROLES, TestSpec
from netrun.inventory.model import Inventory
from netrun.run import preview
from netrun.run.rounds import listing


def _allowed(req: Any) -> set[str] | None:
    inventory = req.inventory
    return {h.name for h in inventory.select(req.limit)} if req.limit else None


def _width(req: Any) -> int:
    return int(req.parallel or req.scenario.parallel)


def _between(test: TestSpec, inventory: Inventory) -> str:
    """Who the test runs between, each host with its SSH address: its roles, or a fan's
    flows at once (the fan host once, then every flow's other end) and its other roles."""

    def at(name: str) -> str:
        return f"{name} (ssh {inventory[name].address})"

    roles = test.hosts_by_role.items()
    if not test.flows:
        return ", ".join(f"{role} {at(host)}" for role, host in roles)
    many = len(test.flows) > 1
    what = f"{len(test.flows)} flows at once" if many else "1 flow"
    if test.pairs == "fanout":
        ends = ", ".join(at(f.server) for f in test.flows)
        what += f" from client {at(test.flows[0].client)} to server{'s' * many} {ends}"
    else:
        ends = ", ".join(at(f.client) for f in test.flows)
        what += f" into server {at(test.flows[0].server)} from client{'s' * many} {ends}"
    return what + "".join(f"; {r} {at(h)}" for r, h in roles if r not in DEFAULT_ROLES)


def check_report(req: Any) -> tuple[str, list[str]]:
    """--check-only: the tests as resolved against the inventory, with what each runs;
    and one line per test and rule that will refuse it when the run starts (the run's own
    rules, netrun.run.preview.rules): the CLI prints each as an error and exits 2."""
    scenario, inventory = req.scenario, req.inventory
    allowed = _allowed(req)
    sources = " ".join(f"-i {p}" for p in inventory.paths)
    lines: list[str] = []
    running = []
    refused: list[str] = []
    bad = 0
    for test in scenario.tests:
        skipped = allowed is not None and not set(test.hosts) <= allowed  # a fan's every flow's
        outside = "  [outside -l]" if skipped else ""
        where = _between(test, inventory)
        lines.append(f"  {test.name}: {test.mode}, {test.tool}, {where}{outside}")
        found = preview.preview(test, inventory)
        lines += found.lines()
        if not skipped:
            running.append(found.plan)
            refused += found.refused
            bad += bool(found.refused)
    lines.append(preview.total_line(running, _width(req)))
    n = len(scenario.tests)
    fit = f"{n - bad} of {n} tests fit" if bad else f"{n} tests fit"
    head = f"{scenario.path}: {fit} {sources}" + (f", {bad} will be refused" if bad else "")
    return "\n".join([f"{head}; nothing was contacted", *lines]), refused


def list_report(req: Any) -> str:
    """--list-tests: every test (client -> server) with what it runs, then the rounds."""
    scenario, inventory = req.scenario, req.inventory
    allowed = _allowed(req)
    width = _width(req)
    head = listing(scenario, sorted(allowed) if allowed is not None else None, width)
    # listing(): the header, one line per test in scenario order, then the rounds
    lines = head[:1]
    running = []
    for i, test in enumerate(scenario.tests, 1):
        lines.append(head[i])
        found = preview.preview(test, inventory)
        lines += found.lines()
        if allowed is None or set(test.hosts) <= allowed:
            running.append(found.plan)
    lines += head[1 + len(scenario.tests) :]
    lines.append(preview.total_line(running, width))
    return "\n".join(lines)
