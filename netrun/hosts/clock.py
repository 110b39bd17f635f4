"""A host's clock offset from the controller, with its uncertainty, for one-way latency.

iperf2's latency is the receiver's clock minus the sender's timestamp, so it is only as
good as the two clocks' agreement. netrun reads a host's time over several round trips and
uses the midpoint method on the sample with the smallest round trip: the host read its clock
somewhere between send and receive, so offset = remote - (t_send + t_recv) / 2, within
+- rtt / 2. chrony's or systemd-timesyncd's own view is recorded next to it where present.
Everything here is pure: callers run ``read_command()`` / ``sync_command()`` on the host and
hand the timings and text back.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from netrun.core import numeric


@dataclass(frozen=True)
class Sample:
    """One round trip: controller time before, the host's reading, controller time after."""

    t_send: float
    remote: float
    t_recv: float

    @property
    def rtt(self) -> float:
        return self.t_recv - self.t_send


@dataclass(frozen=True)
class ClockEstimate:
    """How far a host's clock is ahead of the controller's (seconds), and how sure we are."""

    offset_s: float | None
    uncertainty_s: float | None
    samples: int
    rtt_s: float | None
    shared_clock: bool = False  # the host is this machine (a lab namespace): offset is 0
    sync: Mapping[str, object] = field(default_factory=dict)  # chrony/timesyncd state
    reason: str | None = None  # why offset is None


def read_command() -> list[str]:
    """Print the host's clock with nanoseconds (GNU date; busybox prints literal %N)."""
    return ["date", "+%s.%N"]


def sync_command() -> str:
    """A shell snippet printing chrony's and timesyncd's state, whichever the host has."""
    return (
        "command -v chronyc >/dev/null && chronyc -n tracking 2>/dev/null; "
        "command -v timedatectl >/dev/null && timedatectl show-timesync 2>/dev/null; true"
    )


def parse_reading(text: str) -> float | None:
    """The host's time from ``read_command``'s output, or None if it is not a plain number."""
    match = re.fullmatch(r"\s*(\d{1,12}\.\d{1,9})\s*", text)
    return numeric.finite(float(match.group(1))) if match else None


def estimate(samples: Iterable[Sample], *, shared_clock: bool = False) -> ClockEstimate:
    """Offset and uncertainty from the sample with the smallest round trip."""
    good = [
        s
        for s in samples
        if all(numeric.finite(v) is not None for v in (s.t_send, s.remote, s.t_recv))
        and s.t_recv >= s.t_send
    ]
    if shared_clock:
        return ClockEstimate(0.0, 0.0, len(good), None, shared_clock=True)
    if not good:
        return ClockEstimate(None, None, 0, None, reason="no usable reading of the host's clock")
    best = min(good, key=lambda s: s.rtt)
    offset = best.remote - (best.t_send + best.t_recv) / 2
    return ClockEstimate(offset, best.rtt / 2, len(good), best.rtt)


def latency_reliable(latency_ms: float | None, *uncertainties_s: float | None) -> str | None:
    """Why a one-way latency cannot be trusted, or None when it can.

    The clocks' combined uncertainty must be small against the latency (under a tenth).
    """
    if latency_ms is None:
        return "no latency measured"
    if latency_ms < 0:
        return "negative latency: the clocks disagree"
    if any(u is None for u in uncertainties_s):
        return "a clock offset is unknown"
    bound_ms = 1000 * math.fsum(u for u in uncertainties_s if u is not None)
    if bound_ms > 0.1 * latency_ms:
        return f"clock uncertainty +-{bound_ms:.3g} ms is not small against {latency_ms:.3g} ms"
    return None


def corrected_latency_ms(
    latency_ms: float, sender_offset_s: float, receiver_offset_s: float
) -> float:
    """A one-way latency with both clocks' offsets from the controller taken out.

    The receiver stamps arrival on its clock and the sender's stamp is on the sender's, so
    the measured value is the true one plus (receiver offset - sender offset).
    """
    return latency_ms - 1000.0 * (receiver_offset_s - sender_offset_s)


def parse_chrony(text: str) -> dict[str, object]:
    """Reference, offset and error bound from ``chronyc -n tracking``, if it printed any."""
    fields = dict(
        (k.strip(), v.strip()) for k, _, v in (ln.partition(":") for ln in text.splitlines()) if _
    )
    out: dict[str, object] = {}
    if "Reference ID" in fields:
        out["reference"] = fields["Reference ID"]
    if m := re.match(r"([\d.]+) seconds (fast|slow)", fields.get("System time", "")):
        value = numeric.finite(float(m.group(1)))
        if value is not None:
            out["offset_s"] = value if m.group(2) == "fast" else -value
    if "Leap status" in fields:
        out["synchronised"] = fields["Leap status"] == "Normal"
    for key, name in (("Root delay", "root_delay_s"), ("Root dispersion", "root_dispersion_s")):
        if m := re.match(r"([\d.]+) seconds", fields.get(key, "")):
            out[name] = numeric.finite(float(m.group(1)))
    if "root_delay_s" in out and "root_dispersion_s" in out:
        delay, dispersion = out["root_delay_s"], out["root_dispersion_s"]
        if isinstance(delay, float) and isinstance(dispersion, float):
            out["error_bound_s"] = delay / 2 + dispersion  # chrony's documented bound
    return out


def parse_timesyncd(text: str) -> dict[str, object]:
    """Server and last offset from ``timedatectl show-timesync``, if it printed any."""
    fields = dict(ln.split("=", 1) for ln in text.splitlines() if "=" in ln)
    out: dict[str, object] = {}
    if fields.get("ServerAddress"):
        out["server"] = fields["ServerAddress"]
    if m := re.search(r"Offset=([+-]?\d+(?:\.\d+)?)(us|ms|s)\b", fields.get("NTPMessage", "")):
        scale = {"us": 1e-6, "ms": 1e-3, "s": 1.0}[m.group(2)]
        out["offset_s"] = float(m.group(1)) * scale
    return out


def parse_sync(text: str) -> dict[str, object]:
    """chrony's state under "chrony", timesyncd's under "timesyncd"; empty when neither."""
    out: dict[str, object] = {}
    chrony = parse_chrony(text)
    if chrony:
        out["chrony"] = chrony
    timesyncd = parse_timesyncd(text)
    if timesyncd:
        out["timesyncd"] = timesyncd
    return out
