"""A mode that exists only in the tests: proof that a mode is its own package plus one
registry line (netrun.modes._MODULES), and that every tool runs in it unchanged.

Its ends are "boxes" on the hosts (as a container or a pod would be): each argv runs as
``box exec ROLE ARGV``, a peer dials the box's own address, not the host's, and it
declares that it cannot carry UDP."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from netrun.core.programs import Program
from netrun.modes.base import Mode
from netrun.tools.ends import Cannot, End, HostEnd

#: role -> the box's address on its network.
ADDRESSES = {"server": "10.99.0.2", "client": "10.99.0.3"}


class BoxEnd(HostEnd):
    """An end in a box on its host."""

    def wrap(self, argv: Sequence[str]) -> list[str]:
        return ["box", "exec", self.role, *argv]


class Boxed(Mode):
    name = "boxed"
    needs: ClassVar[Mapping[str, tuple[str, ...]]] = {"server": ("box",), "client": ("box",)}
    installs = (Program("box", "netrun_box", "box-engine", "box-engine"),)
    cannot = (Cannot("test {test}: mode {mode} carries no UDP", options={"protocol": "udp"}),)

    def place(self, role: str) -> End:
        end = BoxEnd(self, role, self.hosts[role], ADDRESSES[role])
        end.bind = ADDRESSES[role]
        return end


MODE = Boxed
