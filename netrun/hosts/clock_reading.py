"""Reading hosts' clocks over SSH for one-way latency: the offsets, and whether to trust it.

hosts/clock.py holds the arithmetic; this module runs its commands on the hosts. A host whose
kernel boot id is the controller's is this very machine (a lab namespace, or localhost):
it shares the controller's clock, so its offset is 0 by construction, and the report says
so rather than quoting a midpoint estimate. Five round trips per host, once per test.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from netrun.hosts import clock, proc

if TYPE_CHECKING:
    from netrun.hosts.host import Host

READS = 5


def samples(host: Host, reads: int = READS) -> list[clock.Sample]:
    """Up to ``reads`` readings of the host's clock, each between the controller's time
    sent and received (a failed or unreadable one is left out)."""
    found = []
    for _ in range(reads):
        t_send = time.time()
        res = host.run(clock.read_command(), timeout=15, check=False)
        t_recv = time.time()
        remote = clock.parse_reading(res.stdout) if res.ok else None
        if remote is not None:
            found.append(clock.Sample(t_send, remote, t_recv))
    return found


def read_host(host: Host) -> dict[str, Any]:
    """``details.clock[host]``: offset, uncertainty, shared clock, chrony/timesyncd state."""
    readings = samples(host)
    state = host.run(f"{proc.READ_BOOT_ID}; {clock.sync_command()}", timeout=15, check=False)
    lines = state.stdout.splitlines()
    boot_id = lines[0].strip() if lines else ""
    shared = bool(boot_id) and boot_id == proc.boot_id()
    est = clock.estimate(readings, shared_clock=shared)
    out: dict[str, Any] = {
        "offset_ms": None if est.offset_s is None else round(est.offset_s * 1000, 4),
        "uncertainty_ms": None if est.uncertainty_s is None else round(est.uncertainty_s * 1000, 4),
        "samples": est.samples,
        "shared_clock": est.shared_clock,
        "sync": clock.parse_sync("\n".join(lines[1:])),
    }
    if shared:
        out["note"] = "same kernel as the controller (a lab namespace): one clock, offset 0"
    if est.reason:
        out["reason"] = est.reason
    return out


def latency_verdict(
    latency_ms: float | None, sender: dict[str, Any], receiver: dict[str, Any]
) -> str | None:
    """Why the one-way latency cannot be trusted (``details.latency_unreliable``), or None."""

    def seconds(entry: dict[str, Any]) -> float | None:
        value = entry.get("uncertainty_ms")
        return None if value is None else float(value) / 1000

    return clock.latency_reliable(latency_ms, seconds(sender), seconds(receiver))


def corrected_ms(
    latency_ms: float | None, sender: dict[str, Any], receiver: dict[str, Any]
) -> float | None:
    """The latency with both clocks' estimated offsets taken out; None where that is moot
    (one shared clock) or impossible (an offset unknown)."""
    if latency_ms is None or (sender.get("shared_clock") and receiver.get("shared_clock")):
        return None
    offsets = sender.get("offset_ms"), receiver.get("offset_ms")
    if offsets[0] is None or offsets[1] is None:
        return None
    value = clock.corrected_latency_ms(latency_ms, offsets[0] / 1000, offsets[1] / 1000)
    return round(value, 4)
