"""Prometheus names for the metrics tools declare: base units, one meaning per name.

Prometheus wants base units in the name (seconds, bytes, ratios; not ms, bit/s or percent)
and one meaning per metric name. A tool's metric becomes ``netrun_<tool>_<what>_<unit>``:
the tool is in the name because two tools' metrics of one name are not one quantity
(iperf3's ``rtt_max_ms`` is the sender's smoothed TCP RTT, ping's the longest echo), and
the value is converted to the base unit (``throughput_bps`` 941e6 bit/s becomes
``netrun_iperf3_throughput_bytes_per_second`` 117.6e6). docs/user-guide/nightly.md maps the
old names to the new ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from netrun.core.metrics import Metric

#: A declared unit -> (the name's unit suffix, the factor to the base unit).
UNITS: dict[str, tuple[str, float]] = {
    "bit/s": ("bytes_per_second", 1 / 8),
    "bits/s": ("bytes_per_second", 1 / 8),
    "ms": ("seconds", 1e-3),
    "us": ("seconds", 1e-6),
    "s": ("seconds", 1.0),
    "%": ("ratio", 1e-2),
    "bytes": ("bytes", 1.0),
    "s/Gbit": ("seconds_per_byte", 8e-9),
    "1/s": ("per_second", 1.0),
    "packets/s": ("packets_per_second", 1.0),
    "packets": ("packets", 1.0),
    "segments": ("segments", 1.0),
    "": ("", 1.0),
}
#: Unit words in a metric's own name, dropped before the base unit is added.
UNIT_WORDS = re.compile(r"_(?:ms|us|pct|percent|bps|bytes|s_per_gbit|per_s)(?=_|$)")


@dataclass(frozen=True)
class Exported:
    """How one tool's metric is exported: its name, the factor to base units, its HELP."""

    name: str
    factor: float
    help: str


def _clean(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_]+", "_", text).strip("_").lower()


def exported(tool: str, metric: Metric) -> Exported:
    """The Prometheus name, factor and HELP text of ``tool``'s ``metric``."""
    suffix, factor = UNITS.get(metric.unit, (_clean(metric.unit), 1.0))
    stem = UNIT_WORDS.sub("", metric.name)
    parts = [p for p in ("netrun", _clean(tool), _clean(stem), suffix) if p]
    unit = "a ratio (1 is 100%)" if suffix == "ratio" else suffix.replace("_", " ") or "no unit"
    help_text = (
        f"{tool}: median {metric.description} of the test's ok repeats, in {unit} "
        f"({metric.better} is better; netrun's {metric.name}, in {metric.unit or 'no unit'})"
    )
    return Exported("_".join(parts), factor, help_text.replace("\\", "\\\\").replace("\n", " "))
