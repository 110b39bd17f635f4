"""The frozen result of reading a scenario: TestSpec (one test to run) and Scenario.

Kept apart from the file's validation (netrun.scenario.validator) and reading
(netrun.scenario.loader): most of netrun only carries these around, and each of the three stays one
noun.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from netrun.errors import did_you_mean

#: The tool of a test that names none (``tool:``; the tools are registered in netrun.tools).
DEFAULT_TOOL = "iperf3"
#: The roles of a mode that declares none: the two ends of one iperf3 test.
DEFAULT_ROLES = ("server", "client")
_EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True)
class Flow:
    """One flow of a test of several (``pairs: {fanin: HOST}``): a client and its server."""

    client: str
    server: str

    @property
    def label(self) -> str:
        return f"{self.client}->{self.server}"


@dataclass(frozen=True)
class TestSpec:
    """One test to run: placement, every option with defaults filled, what the user set."""

    __test__ = False  # not a pytest test class

    name: str
    mode: str
    server: str
    client: str
    index: int  # position in the file's tests list
    options: Mapping[str, Any]
    explicit: frozenset[str]  # options set by the test, defaults or -e
    base_name: str = ""  # the name in the file, without a sweep's [k=v,...] suffix
    swept: Mapping[str, Any] = field(
        default_factory=lambda: _EMPTY
    )  # this test's values from `sweep:`
    #: role -> host name for every role of the mode (server and client included); empty
    #: means just those two.
    roles: Mapping[str, str] = field(default_factory=lambda: _EMPTY)

    @property
    def hosts_by_role(self) -> Mapping[str, str]:
        """Every role's host, server and client first."""
        return self.roles or MappingProxyType({"server": self.server, "client": self.client})

    @property
    def hosts(self) -> tuple[str, ...]:
        """The distinct hosts this test holds, in role order, then its flows' (what it
        connects and locks)."""
        flows = (h for flow in self.flows for h in (flow.client, flow.server))
        return tuple(dict.fromkeys((*self.hosts_by_role.values(), *flows)))

    tool: str = DEFAULT_TOOL  # what measures: iperf3, ping, ... (netrun.tools)
    #: A generated pair's matrix (its entry's name and sweep label), kind and tournament
    #: round (netrun.scenario.pairs); "" for a test that names its hosts.
    matrix: str = ""
    pairs: str = ""
    slot: int = 0
    #: The flows of a many-into-one test (``pairs: {fanin: HOST}``, netrun.run.flows), each
    #: measured at once with the others; empty for a test of one flow (its server, client).
    flows: tuple[Flow, ...] = ()
    #: A flow of such a test (netrun.run.plan.flow_specs): every flow of that test, so
    #: what the flows share is set up once for all (mode turn's relay, allowed to reach
    #: each flow's server); empty for any other test.
    fan: tuple[Flow, ...] = ()

    def value(self, name: str) -> Any:
        """One option's merged value; an unknown name raises KeyError with a hint."""
        if name not in self.options:
            raise KeyError(
                f"no option {name!r} in test {self.name!r}" + did_you_mean(name, self.options)
            )
        return self.options[name]

    duration = property(lambda self: self.value("duration"))
    protocol = property(lambda self: self.value("protocol"))
    streams = property(lambda self: self.value("streams"))
    reverse = property(lambda self: self.value("reverse"))
    omit = property(lambda self: self.value("omit"))
    bitrate = property(lambda self: self.value("bitrate"))
    length = property(lambda self: self.value("length"))
    repeat = property(lambda self: self.value("repeat"))
    port = property(lambda self: self.value("port"))
    connect_timeout = property(lambda self: self.value("connect_timeout"))
    window = property(lambda self: self.value("window"))
    timeout = property(lambda self: self.value("timeout"))

    @property
    def tag(self) -> str:
        """Names the test's files and containers on a host; the generated pairs of one entry
        run at once, and a lab's hosts share /tmp, so each pair has its own."""
        return f"t{self.index}" + (f"p{zlib.crc32(self.name.encode()):08x}" if self.matrix else "")

    @property
    def deadline(self) -> float:
        """Seconds one run may take: ``timeout``, else warm-up + traffic + generous slack."""
        if self.timeout is not None:
            return float(self.timeout)
        get = self.options.get
        return float(get("omit", 0) + get("duration", 10) + 2 * get("connect_timeout", 5) + 30)


@dataclass(frozen=True)
class Scenario:
    """A validated scenario file: its tests in order, sweeps expanded."""

    name: str
    path: Path
    description: str | None
    tests: tuple[TestSpec, ...]
    defaults: Mapping[str, Any]
    baseline: str | None = None
    #: Tests that may run at once; never two on one host (1: one after another, the default).
    parallel: int = 1
    #: Hosts connected, probed and swept at once; None: ``-f`` or Ansible's default, 5.
    forks: int | None = None
