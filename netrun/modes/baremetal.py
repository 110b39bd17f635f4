"""Bare metal: iperf3 straight on the two hosts, over their data addresses.

This is the physical reference every other mode is compared with.
"""

from __future__ import annotations

import time

from netrun.endpoints import Iperf3Server, run_client
from netrun.modes.base import Measurement, Mode
from netrun.tools import iperf3

#: Waits before retrying a client that found the server busy (seconds).
BUSY_BACKOFF = (0.5, 1.0, 2.0)


def client_argv(mode: Mode, server_ip: str, port: int) -> list[str]:
    """The iperf3 client command for a test, shared by every mode that runs iperf3."""
    t = mode.test
    return iperf3.client_command(
        server_ip,
        port,
        duration=t.duration,
        protocol=t.protocol,
        streams=t.streams,
        reverse=t.reverse,
        omit=t.omit,
        bitrate=t.bitrate,
        length=t.length,
        window=t.value("window"),
        connect_timeout_ms=int(float(t.value("connect_timeout")) * 1000),
        binary=mode.ctx.iperf3(mode.client),
    )


def test_deadline(mode: Mode) -> float:
    """How long a client run may take before netrun gives up on it (TestSpec.deadline)."""
    return float(mode.test.deadline)


class BareMetal(Mode):
    """iperf3 server on the server host's data IP, client on the client host."""

    name = "baremetal"
    options = ()

    def measure(self, repeat: int) -> Measurement:
        tag = f"t{self.test.index}r{repeat}"
        last: iperf3.Iperf3Error | None = None
        for wait in (*BUSY_BACKOFF, None):
            with Iperf3Server(
                self.server,
                bind_ip=self.server.data_ip,
                workdir=self.ctx.workdir(self.server),
                tag=tag,
                binary=self.ctx.iperf3(self.server),
                port=self.test.value("port"),
            ) as server:
                assert server.port is not None
                self.details["server_port"] = server.port
                out, status = run_client(
                    self.client,
                    client_argv(self, self.server.data_ip, server.port),
                    workdir=self.ctx.workdir(self.client),
                    tag=tag,
                    timeout=test_deadline(self),
                )
                try:
                    return Measurement(out, iperf3.parse(out, status), dict(self.details))
                except iperf3.Iperf3Error as exc:
                    if exc.kind != "busy" or wait is None:
                        raise
                    last = exc
            time.sleep(wait)
        assert last is not None
        raise last


MODE = BareMetal
