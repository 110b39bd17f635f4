"""What each round-trip saver does, and which of them a mode allows.

A mode declares the savers it allows once (``Mode.savers``); the run takes a saver only
where every test's mode allows it (netrun.tools.savers.choice), and a mode's own code asks
``allows`` before it takes one. A mode that allows none measures every tool through the
ends it places alone (kubernetes, TURN).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Saver(enum.Enum):
    """One round trip a run saves, by what rides on which command."""

    #: The run's first test's server (bare metal) or containers start in the script its
    #: hosts' probes send anyway (netrun.tools.savers.prestart).
    PROBE_START = "start the server with the probe"
    #: The client's command starts before its server is up and waits on its stdin for
    #: what it needs (a port, an address): its login overlaps the server's start.
    ARMED_CLIENT = "start the client before its server"
    #: Each next test's server and client start while this test's client runs
    #: (netrun.tools.savers.pipeline).
    START_AHEAD = "start the next server while this test runs"
    #: A host's last measurement ends with the host's sweep, so the run's final sweep has
    #: nothing left to send there (netrun.tools.savers.sweep).
    EARLY_SWEEP = "sweep after the client"
    #: A test's containers stay for the next test of the same pair and mode
    #: (netrun.modes.docker.savers.keep).
    KEEP_CONTAINERS = "keep a container across tests"
    #: The server end's reading after the test rides on a command sent as the client
    #: starts (netrun.modes.docker.savers.serverend).
    SERVER_WAIT = "read the server end in a command sent with the client"


@dataclass(frozen=True)
class Savers:
    """The savers a mode allows, and those it allows in sequential runs only (docker's
    early sweep, which rides on its armed container clients)."""

    allowed: frozenset[Saver] = frozenset()
    sequential_only: frozenset[Saver] = frozenset()

    @classmethod
    def of(cls, *allowed: Saver, sequential_only: tuple[Saver, ...] = ()) -> Savers:
        return cls(frozenset(allowed), frozenset(sequential_only))

    def allows(self, saver: Saver, *, sequential: bool = True) -> bool:
        """Whether a run (sequential or not) may take ``saver`` for this mode."""
        if saver in self.sequential_only:
            return sequential
        return saver in self.allowed

    def __bool__(self) -> bool:
        return bool(self.allowed or self.sequential_only)


#: A mode that saves no round trip: every tool measures through its placed ends alone.
NONE = Savers()
