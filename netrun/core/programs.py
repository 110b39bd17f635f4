"""A program netrun runs on hosts, declared by the tool or mode that runs it.

The run checks each host has the programs its tests need before anything starts
(netrun.run.needs); a missing one gets one line naming the package that brings it and
the inventory variable that points at another path. The tool or mode that runs the
program says so beside its other declarations (``Tool.installs``, ``Mode.installs``),
so a new tool or mode adds its programs in its own package.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Program:
    """One program: its name on the hosts, the inventory variable that overrides its
    path (``netrun_iperf3``; None: none), the packages that bring it, and the arguments
    that make it print its version (the host context and ``netrun check`` read it)."""

    name: str
    var: str | None
    debian: str
    rhel: str
    version_flag: str = "--version"
