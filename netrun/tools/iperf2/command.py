"""iperf2's commands: the UDP server with the enhanced (latency) report and the client at a
fixed packet rate, and the bitrates ``-b`` takes.

Functions are pure: callers send the argv (``shlex.join``) through ``Host.run``; the
output is read by netrun.tools.iperf2.parse.
"""

from __future__ import annotations

import math
import re

_RATE = re.compile(r"^(\d+(?:\.\d+)?)([kKmMgG]?)(pps)?$")


def check_bitrate(bitrate: str | int | float) -> str:
    """``bitrate`` as iperf's ``-b`` takes it (``800000``, ``8M``, ``1000pps``), or ValueError."""
    text = str(bitrate).strip()
    match = _RATE.match(text)
    if not match or float(match.group(1)) <= 0 or not math.isfinite(float(match.group(1))):
        raise ValueError(
            f"bitrate {text!r}: use bits/s like 800000 or 8M, or packets/s like 1000pps"
        )
    return text


def packets_per_second(bitrate: str | int | float, length: int) -> float:
    """The packet rate a ``bitrate`` asks for with ``length``-byte datagrams."""
    match = _RATE.match(check_bitrate(bitrate))
    assert match is not None
    value = float(match.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[match.group(2).lower()]
    return value if match.group(3) else value / (8 * length)


#: What the server prints once it listens (its first line), and only then.
LISTENING = "Server listening"


def server_command(port: int, bind: str | None = None, *, interval: int = 1) -> list[str]:
    """The UDP server with the enhanced (latency) report, one line per ``interval`` s."""
    argv = ["iperf", "-s", "-u", "-e", "-i", str(interval), "-p", str(port)]
    return [*argv, "-B", bind] if bind else argv


def client_command(
    address: str,
    *,
    length: int,
    bitrate: str | int | float,
    duration: float,
    port: int | None = None,
    streams: int = 1,
    trip_times: bool = True,
) -> list[str]:
    """The UDP client at a fixed rate; ``--trip-times`` makes the server's latency one-way."""
    if not 16 <= length <= 65507:
        raise ValueError(f"length {length}: a UDP datagram of 16..65507 bytes")
    if not 0 < duration <= 86400:
        raise ValueError(f"duration {duration}: 0 < seconds <= 86400")
    argv = ["iperf", "-c", address, "-u", "-l", str(length), "-b", check_bitrate(bitrate)]
    argv += ["-t", f"{duration:g}", "-e"]
    if trip_times:
        argv.append("--trip-times")
    if port is not None:
        argv += ["-p", str(port)]
    if streams > 1:
        argv += ["-P", str(streams)]
    return argv
