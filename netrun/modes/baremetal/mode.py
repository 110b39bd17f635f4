"""Bare metal: the tool straight on the two hosts, over their data addresses.

This is the physical reference every other mode is compared with. The mode only places
the ends (Mode.place: each end is its host itself, netrun.tools.ends.HostEnd) and says
which round-trip savers it allows; the tool measures through them, iperf3 with those
savers riding on its commands (netrun.tools.iperf3.onhost), and builds the starts the
run sends ahead (Tool.server_ahead, through Mode.probe_starts and Mode.start_ahead).
"""

from __future__ import annotations

from netrun.modes.base import Mode
from netrun.tools.savers.model import Saver, Savers


class BareMetal(Mode):
    """The server end on the server host's data IP, the client end on the client host."""

    name = "baremetal"
    options = ()
    has_start_line = True
    #: Its first server started in the probe, each next one while the test before runs,
    #: its clients armed before their servers, each host swept by its last client or server.
    savers = Savers.of(Saver.PROBE_START, Saver.ARMED_CLIENT, Saver.START_AHEAD, Saver.EARLY_SWEEP)


MODE = BareMetal
