"""Tools netrun drives on hosts: each module builds a command and parses its output.

A tool never runs anything itself; the caller joins the argv with ``shlex.join`` (or sends a
script made here) through ``Host.run`` and hands the text back to the tool's parser. The
measuring tools a test may pick with ``tool:`` are registered here: a new one is a module
that defines ``TOOL`` (see tools/base.py) plus one entry in ``_MODULES``.

May import: netrun.cleanup and below; never netrun.modes (a tool sees the mode that
placed it as a tools.base.Placement).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import TYPE_CHECKING

from netrun.core.options import GENERAL_OPTIONS, Option

if TYPE_CHECKING:
    from netrun.tools.base import Tool

#: tool name -> module that defines ``TOOL``.
_MODULES: dict[str, str] = {
    "iperf3": "netrun.tools.iperf3.tool",
    "iperf2": "netrun.tools.iperf2.tool",
    "ping": "netrun.tools.ping.tool",
    "netperf": "netrun.tools.netperf.tool",
}


def get_tool(name: str) -> Tool:
    """The Tool for a name; KeyError when there is none."""
    tool: Tool = importlib.import_module(_MODULES[name]).TOOL
    return tool


def option_table(tool: str, mode_options: Iterable[Option] = ()) -> tuple[Option, ...]:
    """Every option a test of this tool takes: the general ones, the tool's, the mode's."""
    return (*GENERAL_OPTIONS, *get_tool(tool).options, *mode_options)


def tools() -> dict[str, Tool]:
    """Every registered tool by name."""
    return {name: get_tool(name) for name in _MODULES}
