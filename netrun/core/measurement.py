"""One run of a tool as a mode saw it: what tools return and samples are built from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Measurement:
    """One run of a tool as a mode saw it: the raw output, what it parsed to, its metrics."""

    raw: str
    #: The tool's parsed result (an Iperf3Result, a PingResult...).
    result: Any
    details: dict[str, Any] = field(default_factory=dict)
    #: The tool's declared metrics for this run (None: unavailable, see ``unavailable``).
    metrics: dict[str, float | None] = field(default_factory=dict)
    #: Metric name -> why it is null.
    unavailable: dict[str, str] = field(default_factory=dict)
