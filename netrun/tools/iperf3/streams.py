"""Each stream's share of a ``-P N`` test, and how evenly the streams shared the path.

iperf3's ``end.streams[i].receiver`` (TCP) holds each stream's receiver figures, exchanged at
the end like the sums. Jain's fairness index (netrun.core.numeric.jain) of their rates is 1.0
when every stream got the same and 1/N when one took it all. UDP's per-stream entries carry
the sender's rate beside the loss, not the receiver's: no per-stream receiver figure there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from netrun.core.numeric import finite


def receiver_rates(end: Mapping[str, Any], protocol: str) -> tuple[float, ...]:
    """Each TCP stream's receiver rate (bit/s), in stream order; () when any is missing."""
    if protocol != "tcp":
        return ()
    streams = end.get("streams")
    if not isinstance(streams, list) or len(streams) < 2:
        return ()
    rates = []
    for stream in streams:
        receiver = stream.get("receiver") if isinstance(stream, Mapping) else None
        bps = finite(receiver.get("bits_per_second")) if isinstance(receiver, Mapping) else None
        if bps is None:
            return ()
        rates.append(bps)
    return tuple(rates)
