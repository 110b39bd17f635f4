"""What a tool declares to run a test of several flows at once (a fan-in, a fan-out).

A test of ``pairs: {fanin: HOST}`` measures each flow with its tool over the same window
(netrun.run.flows); its sample is the flows' sum, and each flow's own figures stay in
``details.flows``. Only the tool knows how its results add up (iperf3's rates and
retransmits, iperf2's datagram counts and latencies), so a tool that can be summed gives
a ``Fan``: the metrics the sum adds to its own, each flow's record, and the sum. A tool
without one (ping, netperf) is refused at validation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from netrun.core.metrics import Metric
from netrun.core.numeric import jain

if TYPE_CHECKING:
    from netrun.core.measurement import Measurement

#: The flows' receiver rates summed; every tool's fan declares it.
AGGREGATE = Metric(
    "aggregate_bps", "bit/s", "higher", "the flows' receiver rates summed: what a fan-in "
    "host took in (a fan-out host sent) at once", tolerance="5%", scale=1e6,
    shown_unit="Mbit/s", digits=1,
)  # fmt: skip
#: Jain's index of the flows' receiver rates, for a tool whose own metrics lack one
#: (iperf3 declares fairness_jain of its streams; of a fan test's flows it is the same).
FAIRNESS = Metric(
    "fairness_jain", "", "higher", "Jain's fairness index of the flows' receiver rates: 1 "
    "when each got the same, 1/N when one took all", tolerance=0.05, digits=3,
)  # fmt: skip

#: (client, server, the flow's measurement, its raw file) -> its ``details.flows`` record.
Record = Callable[[str, str, "Measurement", "str | None"], dict[str, Any]]
#: (each flow's measurement, the test's options) -> the sum: its result, metrics
#: (AGGREGATE's and fairness_jain included), why each null one is, its own details.
Combine = Callable[[Sequence["Measurement"], Mapping[str, Any]], "Measurement"]


@dataclass(frozen=True)
class Fan:
    """How a tool's flows of one test add up."""

    #: Metrics the sum has beyond the tool's own (declared in results.json's metrics).
    metrics: tuple[Metric, ...]
    record: Record
    combine: Combine


def fairness(rates: Sequence[float | int | None]) -> float | None:
    """Jain's index of the flows' receiver rates (None when any flow's is unknown)."""
    if any(v is None for v in rates):
        return None
    return jain([float(v) for v in rates if v is not None])


def total(values: Sequence[float | int | None]) -> Any:
    """The sum, or None when any is unknown (a partial sum is not the aggregate)."""
    if any(v is None for v in values):
        return None
    return sum(v for v in values if v is not None)
