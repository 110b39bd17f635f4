"""A test bound once: its spec, its tool, its mode class and every option it takes.

A TestSpec names its tool and mode; the run looks both up here, once per test, as it
starts (``bind_all``), and hands the bound test on: the fleet's probe starts, the needs, the
runner's mode, progress lines and measurement read the tool and the mode from it instead of
looking either up by name again. The mode gets the merged option table with it, so
``Mode.value`` does not rebuild it at every read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from netrun.core.options import GENERAL_OPTIONS, Option
from netrun.core.spec import TestSpec
from netrun.hosts.host import Host
from netrun.modes import get_mode
from netrun.modes.base import Mode, RunContext
from netrun.tools import get_tool
from netrun.tools.base import Tool
from netrun.tools.load.tool import with_load


@dataclass(frozen=True)
class BoundTest:
    """One test with its tool and mode class resolved, and its merged option table."""

    spec: TestSpec
    tool: Tool
    mode: type[Mode]
    #: Every option a test of this tool in this mode takes: the general ones, the tool's,
    #: the mode's (what netrun.tools.option_table builds by name).
    options: tuple[Option, ...]

    @property
    def name(self) -> str:
        return self.spec.name

    def start(self, server: Host, client: Host, ctx: RunContext, hosts: Mapping[str, Host]) -> Mode:
        """The test's mode, placed on its hosts (nothing runs until its ``setup``)."""
        return self.mode(self.spec, server, client, ctx, hosts, table=self.options)


def bind(spec: TestSpec) -> BoundTest:
    """Look a test's tool and mode up by name; KeyError when either is not registered
    (a validated scenario names only registered ones)."""
    tool = with_load(get_tool(spec.tool), spec.options)  # load: its idle/loaded form
    mode = get_mode(spec.mode)
    return BoundTest(spec, tool, mode, (*GENERAL_OPTIONS, *tool.options, *mode.options))


def bind_all(tests: Iterable[TestSpec]) -> dict[str, BoundTest]:
    """Test name -> its bound test, each looked up once."""
    return {t.name: bind(t) for t in tests}
