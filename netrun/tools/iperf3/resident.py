"""iperf3 against a server its end keeps for the whole test (End.resident: a container's
PID 1, started by the mode with ``server``'s argv), the client run each repeat.

The mode runs the repeat's client (Placement.resident_client: in the container docker
keeps, its command armed ahead and the end's counters riding on it) from the argv
``client`` builds, towards the fixed port of ``server`` (Tool.resident_port: the
container's network namespace is the test's own); the mode's proof goes around it
(Placement.proving). Here: the argvs, and the parsed run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from netrun.core.measurement import Measurement
from netrun.tools.iperf3 import measure as iperf3_measure
from netrun.tools.iperf3 import parse as iperf3_parse
from netrun.tools.iperf3.result import Iperf3Error

if TYPE_CHECKING:
    from netrun.tools.base import Placement

#: The port the resident ``iperf3 -s`` listens on at its end (Tool.resident_port).
PORT = 5201
#: What ``iperf3 -s`` prints when it is ready for a test: once at start, then after each
#: test it served (Tool.resident_ready, Tool.resident_served).
LISTENING = "Server listening"
#: Options that shape only each repeat's client (its argv: ``client``) or how the test is
#: judged, never the resident server (Tool.client_only); the port is the server's, but
#: it listens on PORT whatever the test's.
CLIENT_ONLY = frozenset(
    {
        "duration", "protocol", "streams", "reverse", "bidir", "omit", "bitrate", "length",
        "connect_timeout", "window", "busy_retries", "busy_backoff", "tolerance",
        "loss_tolerance", "jitter_tolerance", "retransmits_tolerance",
    }
)  # fmt: skip


def server(port: int) -> list[str]:
    """The resident server (Tool.resident): the image's ``iperf3 -s`` on PORT, whatever
    the test's port, flushing each line (its LISTENING says a test ended)."""
    return ["iperf3", "-s", "-p", str(PORT), "--forceflush"]


def client(mode: Placement, address: str, port: int) -> list[str]:
    """One repeat's client towards ``address:port`` (Tool.resident_client): the client
    end's iperf3 (the image's), not wrapped: the mode runs it at its end."""
    return iperf3_measure.client_argv(mode, address, port)


def measure(mode: Placement, repeat: int) -> Measurement:
    """One repeat: the client the mode runs (its stdout, else its stderr, kept raw),
    parsed; an iperf3 error is the client host's."""
    res = mode.resident_client(repeat)
    out = res.stdout if res.stdout.strip() else res.stderr
    try:
        result = iperf3_parse.parse(res.stdout, res.exited, stderr=res.stderr)
    except Iperf3Error as exc:
        raise exc.on(mode.client.name) from None
    details = {"warnings": list(result.warnings)} if result.warnings else {}
    return Measurement(out, result, details)
