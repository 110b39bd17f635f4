"""Where a UDP test's shortfall happened, from iperf3's figures and both ends' counters.

Three places, each with the evidence that names it:
- the sender did not send: its rate stayed below the offered one (its socket, its CPU or
  a shaper's back-pressure held it), so the figure is not what the test asked for;
- the receiver could not keep up: the receiving host counted the lost datagrams itself,
  as UDP receive-buffer errors (and other UDP input errors);
- the network or a queue dropped: a qdisc or a NIC on either end counted drops, or
  datagrams were sent and neither received nor counted by the receiving host (a switch,
  a firewall rule, a link's shaper elsewhere).
The counters are the whole host's (its network namespace's): other traffic there counts
too, which is why a share, not an exact match, names the receiver.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from netrun.results.flags import SENDER_SHARE

SENDER = "sender did not send"
NETWORK = "network or a queue dropped"
RECEIVER = "receiver could not keep up"
PLACES = (SENDER, NETWORK, RECEIVER)
#: The sender "did not send" below SENDER_SHARE of the offered rate: the threshold of
#: results.flags' sender-below-target, so the flag and the place always agree.
#: A place is named when it holds at least this share of the lost datagrams.
PART_SHARE = 0.1


def _count(entry: Mapping[str, Any] | None, key: str) -> int | None:
    value = entry.get(key) if isinstance(entry, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _total(*values: int | None) -> int:
    return sum(v for v in values if v)


def attribute(
    *,
    offered_bps: float | None,
    sender_bps: float | None,
    lost: int | None,
    sender: Mapping[str, Any] | None,
    receiver: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """``{places, place, why, ...}`` for one UDP run; ``sender``/``receiver`` are the two
    ends' counter deltas (netrun.hosts.counters.record), None when not read."""
    places: list[str] = []
    why: list[str] = []
    out: dict[str, Any] = {"lost_datagrams": lost}
    if offered_bps and sender_bps is not None and sender_bps < SENDER_SHARE * offered_bps:
        places.append(SENDER)
        why.append(f"sent {sender_bps / 1e6:.1f} of {offered_bps / 1e6:.1f} Mbit/s offered")
    if lost:
        rcvbuf = _count(receiver, "udp_rcvbuf_errors")
        in_errors = _count(receiver, "udp_in_errors")
        queues = {
            "sender qdisc": _count(sender, "qdisc_dropped"),
            "sender NIC tx": _count(sender, "nic_tx_dropped"),
            "receiver NIC rx": _count(receiver, "nic_rx_dropped"),
        }
        if rcvbuf is None and in_errors is None:
            why.append(f"{lost} datagrams lost; the receiver's counters were not read")
        else:
            # InErrors counts the receive-buffer errors too (the kernel bumps both)
            at_receiver = min(lost, max(rcvbuf or 0, in_errors or 0))
            on_path = lost - at_receiver
            dropped = _total(*queues.values())
            out.update(receiver_errors=at_receiver, queue_drops=dropped, unaccounted=on_path)
            ranked = sorted(((at_receiver, RECEIVER), (on_path, NETWORK)), reverse=True)
            for count, place in ranked:
                if count and count >= PART_SHARE * lost:
                    places.append(place)
            why.append(
                f"{lost} datagrams lost: {at_receiver} counted by the receiver "
                f"(receive-buffer {rcvbuf if rcvbuf is not None else '?'}), {on_path} on the way"
                + (
                    f" (queues dropped {dropped}: "
                    + ", ".join(f"{k} {v}" for k, v in queues.items() if v)
                    + ")"
                    if dropped
                    else ""
                )
            )
    out.update(places=places, place=places[0] if places else None, why="; ".join(why) or None)
    return out
