"""A three-role mode used only by the tests: iperf3 from client to server, while the relay
host's data NIC runs at a lowered MTU for the test (a change with an undo record).

It proves that a third role is connected, probed, locked, journaled, swept and reported,
and that a change which is not a container is undone after a SIGKILL. Loaded through
NETRUN_EXTRA_MODES=trio=trio_mode.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import ClassVar

from netrun.errors import ModeError
from netrun.modes.baremetal.mode import BareMetal

#: The relay's MTU during a trio test.
TRIO_MTU = 1280


class Trio(BareMetal):
    name = "trio"
    roles = ("server", "client", "relay")
    needs: ClassVar[Mapping[str, tuple[str, ...]]] = {
        "server": ("iperf3",),
        "client": ("iperf3",),
        "relay": ("ip",),
    }

    def setup(self) -> None:
        relay = self.hosts["relay"]
        nic = getattr(self.ctx.known.facts.get(relay.name), "nic", None)
        if nic is None or not nic.iface:
            raise ModeError(f"{relay.name}: the data NIC is unknown")
        # The MTU now, not the probe's: the run's start-up sweep may have restored it since.
        res = relay.run(["cat", f"/sys/class/net/{nic.iface}/mtu"], timeout=10)
        mtu = int(res.stdout.strip())
        dev = shlex.quote(nic.iface)
        self.change(
            relay,
            f"ip link set dev {dev} mtu {TRIO_MTU}",
            f"ip link set dev {dev} mtu {mtu}",
            what=f"MTU of {nic.iface} back to {mtu}",
            sudo=True,
        )
        self.details["relay_mtu"] = TRIO_MTU


MODE = Trio
