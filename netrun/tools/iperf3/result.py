"""What one iperf3 run measured, and how it failed: the types the parser returns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from netrun.errors import ToolError

PROTOCOLS = ("tcp", "udp")

#: Error kinds ``Iperf3Error.kind`` takes.
KINDS = (
    "busy", "setup-lost", "refused", "unreachable", "timeout", "error", "bad-output",
    "no-output", "missing",
)  # fmt: skip


class Iperf3Error(ToolError):
    """iperf3 failed or printed output that cannot be trusted; ``kind`` says which way."""

    def __init__(self, kind: str, message: str, output: str = "") -> None:
        self.kind = kind
        self.message = message
        #: For a server that could not start: each taken port and its holder, if known.
        self.busy: dict[int, str | None] = {}
        super().__init__(message, output)

    def on(self, host: str) -> Iperf3Error:
        """The same error, its message starting with the host it happened on."""
        if self.message.startswith(f"{host}: "):
            return self
        err = Iperf3Error(self.kind, f"{host}: {self.message}", self.output)
        err.busy = self.busy
        return err


@dataclass(frozen=True)
class Interval:
    """One reporting interval of the whole test (the sum over streams)."""

    start: float
    end: float
    bits_per_second: float
    retransmits: int | None = None
    jitter_ms: float | None = None
    lost_percent: float | None = None


@dataclass(frozen=True)
class Iperf3Result:
    """What one iperf3 client run measured; the sender is the server when ``reverse``."""

    protocol: str
    version: str | None
    duration: float
    streams: int
    reverse: bool
    sender_bps: float
    #: None when this iperf3 version does not report it (``unavailable`` says why):
    #: never the sender's figure in its place
    receiver_bps: float | None
    bytes_sent: int
    bytes_received: int | None
    retransmits: int | None
    cpu_client_pct: float | None
    cpu_server_pct: float | None
    jitter_ms: float | None
    lost_packets: int | None
    packets: int | None
    lost_percent: float | None
    intervals: tuple[Interval, ...]
    warnings: tuple[str, ...]
    server_output: str | None = None
    #: the connection's MSS (start.tcp_mss, else tcp_mss_default) and the datagram or
    #: buffer length (test_start.blksize): what the test's own ceiling is computed from
    tcp_mss: int | None = None
    blksize: int | None = None
    #: --bidir: (client-to-server, server-to-client) receiver rates; the sums above hold both
    bidir_bps: tuple[float, float] | None = None
    #: metric -> why this run's iperf3 version does not report it (netrun.tools.iperf3.versions)
    unavailable: Mapping[str, str] = field(default_factory=dict)
    #: Whose series ``intervals`` is: "receiver" (the server's, from --get-server-output,
    #: or a reversed test's client), "sender" (the client's of a forward test without
    #: the server's output) or "both" (--bidir sums both directions).
    intervals_of: str = "sender"
    #: The test's -b per stream as iperf3 read it (test_start.target_bitrate), bit/s.
    target_bps: float | None = None
    #: Each stream's receiver rate of a -P N TCP test (netrun.tools.iperf3.streams).
    stream_bps: tuple[float, ...] = ()
    #: The sender's TCP internals, metric -> value (netrun.tools.iperf3.tcpinfo; the
    #: missing ones' reasons are in ``unavailable``), and whose: "client" or "server".
    tcp_info: Mapping[str, float] = field(default_factory=dict)
    tcp_info_of: str | None = None

    def top_level(self) -> dict[str, float | None]:
        """Its figures of a sample's top level (netrun.tools.base.SampleFigures):
        ``throughput_bps`` is the receiver's rate."""
        return {
            "throughput_bps": self.receiver_bps, "sender_bps": self.sender_bps,
            "retransmits": self.retransmits, "cpu_client_pct": self.cpu_client_pct,
            "cpu_server_pct": self.cpu_server_pct, "jitter_ms": self.jitter_ms,
        }  # fmt: skip

    def series(self) -> list[list[float]]:
        """``[start, end, bits/s]`` of each interval, as results.json keeps them."""
        return [[i.start, i.end, i.bits_per_second] for i in self.intervals]

    @property
    def sender(self) -> str:
        """Which end sent the data: "server" for a reversed (-R) test, else "client"."""
        return "server" if self.reverse else "client"

    @property
    def sender_cpu_pct(self) -> float | None:
        return self.cpu_server_pct if self.reverse else self.cpu_client_pct

    @property
    def receiver_cpu_pct(self) -> float | None:
        return self.cpu_client_pct if self.reverse else self.cpu_server_pct
