"""The tool a test measures with: its registered tool in the form its options ask for.

``load:`` on a latency test makes the idle-then-loaded form of its tool
(netrun.tools.load.tool.with_load: the loaded metrics, the load's preview and time). The
modes and the run take a test's tool from here, so they import no tool's package
(tests/unit/test_architecture.py); so do the history and the reports, for the tool a
saved sample measured with. A form another option asks for is one more step here.

May import: netrun.tools' packages and the layers below tools.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from netrun.tools import get_tool
from netrun.tools.base import Tool
from netrun.tools.load.tool import with_load


def of(tool: Tool, options: Mapping[str, Any]) -> Tool:
    """``tool`` itself, or the form ``options`` ask for (``load:``: idle, then loaded)."""
    return with_load(tool, options)


def of_sample(sample: Mapping[str, Any]) -> Tool:
    """The tool a saved sample measured with, in the form its options asked for (a
    ``load:`` test's: idle and loaded metrics), so a verdict, a diff or a trend reads the
    metrics it has; KeyError for a tool this netrun does not know."""
    options = sample.get("options")
    tool = get_tool(str(sample.get("tool") or "iperf3"))
    return of(tool, options if isinstance(options, Mapping) else {})
