"""``--check-only`` and ``--list-tests``: what a run will do, printed before anything runs.

Both connect to nothing. Under each test come its data addresses, resolved options, the
commands each host will run and the expected time (netrun.run.preview); at the end the
run's expected total (its rounds' when tests run in parallel).
"""

from __future__ import annotations

from typing import Any

from netrun.run import preview
from netrun.run.rounds import listing


def _allowed(req: Any) -> set[str] | None:
    inventory = req.inventory
    return {h.name for h in inventory.select(req.limit)} if req.limit else None


def _width(req: Any) -> int:
    return int(req.parallel or req.scenario.parallel)


def check_report(req: Any) -> str:
    """--check-only: the tests as resolved against the inventory, with what each runs."""
    scenario, inventory = req.scenario, req.inventory
    allowed = _allowed(req)
    sources = " ".join(f"-i {p}" for p in inventory.paths)
    lines = [f"{scenario.path}: {len(scenario.tests)} tests fit {sources}; nothing was contacted"]
    running = []
    for test in scenario.tests:
        hosts = {role: inventory[name] for role, name in test.hosts_by_role.items()}
        skipped = allowed is not None and not {h.name for h in hosts.values()} <= allowed
        roles = ", ".join(f"{r} {h.name} (ssh {h.address})" for r, h in hosts.items())
        outside = "  [outside -l]" if skipped else ""
        lines.append(f"  {test.name}: {test.mode}, {test.tool}, {roles}{outside}")
        lines += preview.preview(test, inventory).lines()
        if not skipped:
            running.append(test)
    lines.append(preview.total_line(running, _width(req)))
    return "\n".join(lines)


def list_report(req: Any) -> str:
    """--list-tests: every test (client -> server) with what it runs, then the rounds."""
    scenario, inventory = req.scenario, req.inventory
    allowed = _allowed(req)
    width = _width(req)
    head = listing(scenario, sorted(allowed) if allowed is not None else None, width)
    # listing(): the header, one line per test in scenario order, then the rounds
    lines = head[:1]
    for i, test in enumerate(scenario.tests, 1):
        lines.append(head[i])
        lines += preview.preview(test, inventory).lines()
    lines += head[1 + len(scenario.tests) :]
    running = [t for t in scenario.tests if allowed is None or set(t.hosts) <= allowed]
    lines.append(preview.total_line(running, width))
    return "\n".join(lines)
