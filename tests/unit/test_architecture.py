"""What the layers promise beyond their imports (those are .importlinter's): a mode places
the ends and a tool measures, so neither a mode nor the run branches on a tool's name, and
no tool is found on a mode by a ``measure_<tool>``-style hook."""

from __future__ import annotations

import re
from pathlib import Path

import netrun

ROOT = Path(netrun.__file__).parent
#: ``tool == "iperf3"``, ``test.tool != 'netperf'``, ``tool in ("iperf2", ...)``.
TOOL_BRANCH = re.compile(r"""\btool\s*(==|!=|\bin\b|\bnot in\b)\s*[("'\[{]""")
#: A tool looked up on a mode by name.
HOOK = re.compile(r"""getattr\(\s*mode\s*,\s*["'](measure_|load_flow)""")


def sources(*packages: str) -> list[Path]:
    return sorted(p for pkg in packages for p in (ROOT / pkg).rglob("*.py"))


def offending(pattern: re.Pattern[str], files: list[Path]) -> list[str]:
    return [
        f"{path.relative_to(ROOT.parent)}:{n}: {line.strip()}"
        for path in files
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line) and not line.lstrip().startswith("#")
    ]


def test_no_mode_and_no_run_step_branches_on_a_tools_name() -> None:
    """What differs by tool is the tool's declaration (netrun.tools.base.Tool: resident,
    starts_ahead, preview...), read by whoever needs it."""
    assert offending(TOOL_BRANCH, sources("modes", "run")) == []


def test_no_tool_reaches_a_mode_through_a_named_hook() -> None:
    assert offending(HOOK, sources("tools")) == []


def test_the_patterns_catch_what_they_are_for() -> None:
    assert TOOL_BRANCH.search('if self.test.tool == "iperf2":')
    assert TOOL_BRANCH.search("if test.tool != 'iperf3':")
    assert TOOL_BRANCH.search('if tool in ("iperf2", "netperf"):')
    assert not TOOL_BRANCH.search("tool = get_tool(test.tool)")
    assert not TOOL_BRANCH.search("if self.tool is not None and tool != self.tool:")
    assert HOOK.search('own = getattr(mode, "measure_netperf", None)')
