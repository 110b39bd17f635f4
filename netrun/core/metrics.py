"""Metrics: what a tool measures, declared once, so every output can loop over them.

flent keeps each data series beside its metadata (unit, where it came from); netrun does the
same per tool: a ``Metric`` has a name, a unit, whether higher or lower is better and a
one-line description. A sample carries ``metrics: {name: value}``; None means the tool could
not know it (the reason sits in ``details.unavailable``), never 0. Runs saved before schema 2
have no ``metrics``: their iperf3 columns are read as the iperf3 metrics.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

BETTER = ("higher", "lower")
UNAVAILABLE = "unavailable"
PERCENT_RE = re.compile(r"\s*([0-9]{1,6}(?:\.[0-9]{1,6})?)\s*%\s*")
#: Values beyond this are not measurements (a hand-edited file): refuse rather than overflow.
MAX_VALUE = 1e18
#: Where a run's declaration of a metric keeps other tools' differing ones (``declare``).
BY_TOOL = "by_tool"


@dataclass(frozen=True)
class Metric:
    """One named series a tool measures; ``tolerance`` is the default allowed change in the
    worse direction ("5%" relative, or a number in the metric's unit), None: not compared
    unless the scenario sets one."""

    name: str
    unit: str
    better: str
    description: str
    tolerance: str | float | None = None
    #: A change smaller than this (in ``unit``) is never judged, whatever the tolerance: the
    #: tool's resolution on a quiet host (ping's timestamps move by tens of microseconds
    #: with scheduling; netperf's histogram buckets are 10 us wide).
    floor: float | None = None
    #: Shown as value / scale in ``shown_unit`` (bits/s as Mbit/s).
    scale: float = 1.0
    shown_unit: str = ""
    digits: int = 2

    def to_dict(self) -> dict[str, Any]:
        """The declaration as results.json keeps it (so a saved run renders on its own)."""
        return {
            "unit": self.unit,
            "better": self.better,
            "description": self.description,
            "tolerance": self.tolerance,
            "floor": self.floor,
            "scale": self.scale,
            "shown_unit": self.shown_unit or self.unit,
            "digits": self.digits,
        }

    @classmethod
    def from_dict(cls, name: str, data: Mapping[str, Any]) -> Metric:
        """A declaration read back from results.json; odd fields fall back to safe ones."""
        better = data.get("better") if data.get("better") in BETTER else "higher"
        scale: Any = data.get("scale")  # used only once ok_scale says it is a number
        ok_scale = isinstance(scale, int | float) and not isinstance(scale, bool)
        digits = data.get("digits")
        tolerance = data.get("tolerance")
        return cls(
            name=name,
            unit=str(data.get("unit") or ""),
            better=str(better),
            description=str(data.get("description") or ""),
            tolerance=tolerance if isinstance(tolerance, str | int | float) else None,
            floor=finite(data.get("floor")),
            scale=float(scale) if ok_scale and 0 < float(scale) < MAX_VALUE else 1.0,
            shown_unit=str(data.get("shown_unit") or data.get("unit") or ""),
            digits=digits if isinstance(digits, int) and 0 <= digits <= 6 else 2,
        )

    def show(self, value: float | None) -> str:
        """A value in the unit people read it in; a null is "unavailable", never 0."""
        if value is None:
            return UNAVAILABLE
        return f"{value / self.scale:.{self.digits}f}"

    @property
    def label(self) -> str:
        unit = self.shown_unit or self.unit
        return f"{self.name} ({unit})" if unit else self.name


#: The forms a tolerance takes, for error messages.
TOLERANCE_FORMS = (
    "use a percentage (20%), an amount in the metric's unit (0.5), both ([20%, 0.5]: a "
    "change must exceed both) or null (not judged)"
)


@dataclass(frozen=True)
class Limit:
    """How far a metric may move for the worse before it counts: a fraction of the
    baseline's figure, an amount in the metric's unit, or both (a change must exceed both)."""

    relative: float | None = None
    absolute: float | None = None

    def allowed(self, before: float) -> float | None:
        """The allowed change in the metric's unit against ``before``; None when only a
        relative limit is set and the baseline is 0 (nothing to take a share of)."""
        if self.relative is not None and before == 0 and not self.absolute:
            return None
        share = self.relative * abs(before) if self.relative is not None else 0.0
        return max(share, self.absolute or 0.0)

    def text(self, unit: str = "") -> str:
        """ "5%", "1 point", "20% and 0.05 ms": the limit as people write it."""
        parts = [f"{self.relative * 100:g}%"] if self.relative is not None else []
        if self.absolute is not None:
            word = ("point" if self.absolute == 1 else "points") if unit == "%" else unit
            parts.append(f"{self.absolute:g} {word}".rstrip())
        return " and ".join(parts) or "-"

    def floored(self, floor: float | None) -> Limit:
        """This limit with ``floor`` (a tool's resolution) as its absolute part when it has
        none: a tolerance that names an amount of its own ([20%, 0.01]) keeps it."""
        if not floor or self.absolute is not None:
            return self
        return Limit(self.relative, floor)

    @property
    def kind(self) -> tuple[str, float]:
        """("relative", 0.05) or ("absolute", 1.0): the older one-part form (the relative
        part where both are set)."""
        if self.relative is not None:
            return "relative", self.relative
        return "absolute", self.absolute or 0.0


def parse_tolerance(value: object) -> tuple[str, float]:
    """("relative", 0.2) for "20%", ("absolute", 0.5) for 0.5; ValueError otherwise."""
    if isinstance(value, str):
        match = PERCENT_RE.fullmatch(value)
        if match and float(match[1]) <= 1000:
            return "relative", float(match[1]) / 100
        raise ValueError(f"must be a percentage such as 20% or a number, got {value!r}")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"must be a percentage such as 20% or a number, got {value!r}")
    number = float(max(-MAX_VALUE, min(value, MAX_VALUE)))  # a 400-digit int overflows float()
    if not math.isfinite(number) or not 0 <= number < MAX_VALUE:
        raise ValueError(f"must be a percentage or a number >= 0, got {value!r}")
    return "absolute", number


def parse_limit(value: object) -> Limit | None:
    """A tolerance in any of its forms (TOLERANCE_FORMS) as a Limit; None for null (the
    metric is not judged); ValueError naming the forms otherwise."""
    if value is None:
        return None
    parts = value if isinstance(value, list | tuple) else [value]
    if not 1 <= len(parts) <= 2:
        raise ValueError(TOLERANCE_FORMS)
    found: dict[str, float] = {}
    for part in parts:
        try:
            kind, number = parse_tolerance(part)
        except ValueError:
            raise ValueError(TOLERANCE_FORMS) from None
        if kind in found:
            raise ValueError(TOLERANCE_FORMS)
        found[kind] = number
    return Limit(found.get("relative"), found.get("absolute"))


def tolerance_problem(value: object) -> str | None:
    """An Option.check for one tolerance value."""
    try:
        parse_limit(value)
    except ValueError as exc:
        return str(exc)
    return None


def finite(value: Any) -> float | None:
    """A number from untrusted input as a float, or None (bools, NaN, huge ints)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, int) and abs(value) > MAX_VALUE:
        return None
    number = float(value)
    return number if math.isfinite(number) and abs(number) <= MAX_VALUE else None


#: The iperf3 metrics, as schema 1 runs stored them in columns of their own: part of the
#: saved format, so declared here (the iperf3 tool declares these and may add more).
# fmt: off
SCHEMA1_METRICS: tuple[Metric, ...] = (
    Metric("throughput_bps", "bit/s", "higher", "receiver throughput (iperf3's receiver sum)",
           tolerance="5%", scale=1e6, shown_unit="Mbit/s", digits=1),
    Metric("sender_bps", "bit/s", "higher", "sender throughput (iperf3's sender sum)",
           scale=1e6, shown_unit="Mbit/s", digits=1),
    Metric("retransmits", "segments", "lower", "TCP segments the sender retransmitted",
           digits=0),
    Metric("cpu_client_pct", "%", "lower", "CPU use of the iperf3 client, whole host", digits=1),
    Metric("cpu_server_pct", "%", "lower", "CPU use of the iperf3 server, whole host", digits=1),
    Metric("jitter_ms", "ms", "lower", "UDP jitter the receiver saw (RFC 1889)", digits=3),
    Metric("lost_percent", "%", "lower", "UDP datagrams lost on the way", digits=2),
)
# fmt: on


def legacy() -> tuple[Metric, ...]:
    """The metrics of a schema 1 run (no ``metrics`` of its own)."""
    return SCHEMA1_METRICS


def declare(table: dict[str, Any], tool: str, metric: Metric) -> None:
    """Add ``tool``'s ``metric`` to a run's declarations (results.json ``metrics``). The
    first declaration of a name stands under the name; another tool's that differs (ping's
    ``rtt_max_ms`` judged at 50%, iperf3's TCP_INFO one not judged) is kept beside it in
    its ``by_tool``, so each tool's tests render with their own."""
    data = metric.to_dict()
    found = table.get(metric.name)
    if not isinstance(found, dict):
        table[metric.name] = data
    elif {k: v for k, v in found.items() if k != BY_TOOL} != data:
        found.setdefault(BY_TOOL, {}).setdefault(tool, data)


def declared(doc: Mapping[str, Any], tool: str | None = None) -> dict[str, Metric]:
    """The metrics a run declares (schema 2), else the iperf3 ones (schema 1), in order;
    with ``tool``, that tool's own where it declared a name another tool declared first."""
    found = doc.get("metrics")
    out: dict[str, Metric] = {}
    if isinstance(found, dict):
        for name, data in found.items():
            if isinstance(name, str) and isinstance(data, dict):
                tools = data.get(BY_TOOL)
                own = tools.get(tool) if tool and isinstance(tools, dict) else None
                out[name] = Metric.from_dict(name, own if isinstance(own, dict) else data)
    if not out:
        out = {m.name: m for m in legacy()}
    return out


def of_sample(sample: Mapping[str, Any]) -> dict[str, float | None]:
    """A sample's metric values: its ``metrics`` (schema 2), where a schema 1 field of the
    same name that is set wins (scripts edit those), else its schema 1 fields."""
    values = sample.get("metrics")
    if not isinstance(values, dict):
        values = {m.name: sample.get(m.name) for m in legacy()}
    out = {str(k): finite(v) for k, v in values.items()}
    for name in out:
        if (top := finite(sample.get(name))) is not None:
            out[name] = top
    return out


def used(doc: Mapping[str, Any], samples: Iterable[Mapping[str, Any]]) -> list[Metric]:
    """The declared metrics that at least one of ``samples`` carries, in declaration order."""
    names: set[str] = set()
    for sample in samples:
        names.update(k for k, v in of_sample(sample).items() if v is not None)
    return [m for name, m in declared(doc).items() if name in names]
