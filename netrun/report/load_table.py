"""Latency under load side by side: each ``load:`` test's idle and loaded latency, what the
load added at the median and the p99, and the throughput the load reached meanwhile.

A loaded test's metrics are its tool's with ``_idle`` and ``_loaded`` forms
(netrun.tools.load.tool); which of them are the median and p99, in which unit, is the
tool's word (Tool.latency). A tool without percentiles (iperf2) shows the mean it names
instead, marked so. Every figure is the median over the test's ok repeats.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

from netrun.report.summary import group_samples
from netrun.results import stats
from netrun.tools import form
from netrun.tools.base import Latency

ADDED = ("latency_added_p50_ms", "latency_added_p99_ms")
HEADERS = ["test", "mode", "tool", "load", "idle p50 ms", "loaded p50 ms", "added p50 ms",
           "idle p99 ms", "loaded p99 ms", "added p99 ms", "load Mbit/s", "n"]  # fmt: skip


@dataclass(frozen=True)
class Loaded:
    """One load test's medians over its ok repeats (ms, bits/s; None where unknown)."""

    test: str
    mode: str
    tool: str
    load: str
    idle_p50_ms: float | None
    loaded_p50_ms: float | None
    added_p50_ms: float | None
    idle_p99_ms: float | None
    loaded_p99_ms: float | None
    added_p99_ms: float | None
    load_bps: float | None
    n: int
    #: "p50" the tool's medians, "mean" a tool without percentiles (iperf2).
    basis: str = "p50"
    #: A histogram's figures (netperf): each one's widest bucket in ms, by field name
    #: ("idle_p50_ms"); an added figure is known to the wider of its two phases' buckets.
    buckets_ms: dict[str, float] = field(default_factory=dict)

    def width(self, name: str) -> float | None:
        """The bucket a figure is known to: its own, or an added one's wider phase's."""
        if name.startswith("added_"):
            tail = name.removeprefix("added_")
            found = [self.buckets_ms.get(f"{w}_{tail}") for w in ("idle", "loaded")]
            known = [f for f in found if f is not None]
            return max(known) if known else None
        return self.buckets_ms.get(name)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _median(samples: list[dict[str, Any]], name: str | None, scale: float = 1.0) -> float | None:
    if name is None:
        return None
    found = stats.summarize(stats.ok_values(samples, name))
    return None if found is None else found.median * scale


def _bucket_ms(
    samples: list[dict[str, Any]], metric: str | None, which: str, scale: float
) -> float | None:
    """The widest histogram bucket of a phase's figure over the ok repeats, in ms (the
    phase's ``details.<phase>.bucket_us``: netperf); None for an exact figure."""
    widths = []
    for s in samples:
        details: dict[str, Any] = s["details"] if isinstance(s.get("details"), dict) else {}
        part: dict[str, Any] = details[which] if isinstance(details.get(which), dict) else {}
        buckets = part["bucket_us"] if isinstance(part.get("bucket_us"), dict) else {}
        edges = buckets.get(metric) if metric else None
        pair = edges if isinstance(edges, list) and len(edges) == 2 else None
        if s.get("status") == "ok" and pair and all(isinstance(e, int | float) for e in pair):
            widths += [(pair[1] - pair[0]) * scale] if pair[1] > pair[0] else []
    return max(widths) if widths else None


def _phase(
    samples: list[dict[str, Any]], metric: str | None, which: str, scale: float, bucketed: bool
) -> float | None:
    """The median of ``<metric>_idle`` or ``_loaded`` in ms; of a histogram's figures the
    lower middle one (a bucket's edge: the mean of two would be finer than the buckets)."""
    if not bucketed or metric is None:
        return _median(samples, f"{metric}_{which}" if metric else None, scale)
    values = stats.ok_values(samples, f"{metric}_{which}")
    return statistics.median_low(values) * scale if values else None


def _load_text(sample: dict[str, Any]) -> str:
    load = ((sample.get("details") or {}).get("load")) or {}
    if not load:
        return "-"
    rate = f" @{load['bitrate']}" if load.get("bitrate") is not None else ""
    return f"{load.get('streams')}x {load.get('protocol')} {load.get('direction')}{rate}"


def _latency(sample: dict[str, Any]) -> Latency:
    """The latency metrics of the tool ``sample`` measured with (Tool.latency); none for
    a tool this netrun does not know."""
    try:
        return form.of_sample(sample).latency or Latency(None, None)
    except KeyError:
        return Latency(None, None)


def loaded(doc: dict[str, Any]) -> list[Loaded]:
    """Every test of the run that ran with ``load:``, in the run's order."""
    out = []
    for name, samples in group_samples(doc.get("tests", [])).items():
        if not any(ADDED[0] in (s.get("metrics") or {}) for s in samples):
            continue
        first = samples[0]
        tool = str(first.get("tool") or "")
        latency = _latency(first)
        p50, p99, scale = latency.p50, latency.p99, latency.per_ms
        basis = "p50"
        if p50 is None and latency.mean is not None:  # its mean stands in, said so
            p50, scale, basis = latency.mean, 1.0, "mean"
        ok = [s for s in samples if s.get("status") == "ok"]
        with_load = next((s for s in ok), first)

        buckets = {
            f"{w}_{q}_ms": found
            for q, metric in (("p50", p50), ("p99", p99))
            for w in ("idle", "loaded")
            if (found := _bucket_ms(samples, metric, w, scale)) is not None
        }
        phase = {
            f"{w}_{q}": _phase(samples, metric, w, scale, f"{w}_{q}_ms" in buckets)
            for q, metric in (("p50", p50), ("p99", p99))
            for w in ("idle", "loaded")
        }
        idle50, loaded50 = phase["idle_p50"], phase["loaded_p50"]
        added50 = _median(samples, ADDED[0])
        if added50 is None and idle50 is not None and loaded50 is not None:
            added50 = loaded50 - idle50  # a mean's difference (iperf2)
        out.append(
            Loaded(
                test=name, mode=str(first.get("mode")), tool=tool, load=_load_text(with_load),
                idle_p50_ms=idle50, loaded_p50_ms=loaded50, added_p50_ms=added50,
                idle_p99_ms=phase["idle_p99"], loaded_p99_ms=phase["loaded_p99"],
                added_p99_ms=_median(samples, ADDED[1]),
                load_bps=_median(samples, "load_throughput_bps"), n=len(ok), basis=basis,
                buckets_ms=buckets,
            )
        )  # fmt: skip
    return out


def _cell(value: float | None, digits: int = 3, mean: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}" + (" (mean)" if mean else "")


def _digits(width_ms: float) -> int:
    """Decimals that show a figure no finer than a bucket this wide (0.01 ms: 2; 1 ms: 0;
    10 ms: -1, to the ten)."""
    return -math.floor(math.log10(width_ms) + 1e-9)


def _fig(r: Loaded, name: str, mean: bool = False) -> str:
    """A figure of the row at its precision: a histogram's to its bucket; an added one to
    the wider of its two buckets, with that width (±), as loaded - idle is known no finer."""
    value, width = getattr(r, name), r.width(name)
    if value is None or width is None:
        return _cell(value, mean=mean)
    digits = _digits(width)
    shown = _cell(round(value, digits), max(0, digits), mean)
    return f"{shown} ±{width:g}" if name.startswith("added_") else shown


def bucket_note(doc: dict[str, Any]) -> str:
    """One line naming the histogram buckets the table's figures are read to ("" when no
    row has any): netperf's percentiles are each the low edge of a bucket."""
    parts = []
    for r in loaded(doc):
        if not r.buckets_ms:
            continue
        said = ", ".join(
            f"{q} {_ms(r.width(f'idle_{q}_ms'))}→{_ms(r.width(f'loaded_{q}_ms'))}"
            for q in ("p50", "p99")
        )
        parts.append(f"{r.test} {said}")
    if not parts:
        return ""
    return (
        "buckets (idle→loaded, ms): " + "; ".join(parts) + ": each netperf percentile is its "
        "histogram bucket's low edge, shown to the bucket; added ± the wider bucket"
    )


def _ms(width: float | None) -> str:
    return "-" if width is None else f"{width:g}"


def rows(doc: dict[str, Any]) -> list[list[str]]:
    """The table's rows (HEADERS), one per load test; [] when the run has none. A load that
    ran both ways says so: its Mbit/s is the sum of two directions, not one link's."""
    out = []
    groups = group_samples(doc.get("tests", []))
    for r in loaded(doc):
        mean = r.basis == "mean"
        mbps = None if r.load_bps is None else r.load_bps / 1e6
        halves = load_cell(groups[r.test])
        both = f" (sum of {halves})" if "+" in halves else ""
        out.append([
            r.test, r.mode, r.tool, r.load, _fig(r, "idle_p50_ms", mean),
            _fig(r, "loaded_p50_ms", mean), _fig(r, "added_p50_ms", mean),
            _fig(r, "idle_p99_ms"), _fig(r, "loaded_p99_ms"), _fig(r, "added_p99_ms"),
            _cell(mbps, 1) + both, str(r.n),
        ])  # fmt: skip
    return out


TITLE = "latency under load (median of the ok repeats; added = loaded - idle)"


def title(doc: dict[str, Any], head: str = TITLE) -> str:
    """The table's title, and the line naming its histogram buckets when it has any."""
    note = bucket_note(doc)
    return f"{head}\n{note}" if note else head


#: The one-screen report's columns: idle beside loaded for the median and the p99, the
#: probes each phase's percentiles come from, and the load in each direction it ran.
BRIEF_HEADERS = ["test", "mode", "probe", "load", "p50 ms idle→loaded", "added p50",
                 "p99 ms idle→loaded", "added p99", "samples", "load Mbit/s c→s + s→c"]  # fmt: skip


def _count(samples: list[dict[str, Any]], phase: str) -> str:
    found = []
    for s in samples:
        details: dict[str, Any] = s["details"] if isinstance(s.get("details"), dict) else {}
        part: dict[str, Any] = details[phase] if isinstance(details.get(phase), dict) else {}
        value = part.get("samples", part.get("rtt_count"))
        if s.get("status") == "ok" and isinstance(value, int | float):
            found.append(float(value))
    return "-" if not found else f"{statistics.median(found):.0f}"


def load_cell(samples: list[dict[str, Any]]) -> str:
    """The load's throughput: client→server + server→client when it ran both ways (iperf3
    --bidir: the sum of two directions is no single link's figure), else its one way's."""
    halves: list[list[float]] = [[], []]
    for s in samples:
        load = ((s.get("details") or {}).get("load")) or {}
        both = load.get("bidir_bps") if s.get("status") == "ok" else None
        if isinstance(both, list) and len(both) == 2 and None not in both:
            halves[0].append(float(both[0]))
            halves[1].append(float(both[1]))
    if halves[0]:
        up, down = (statistics.median(h) / 1e6 for h in halves)
        return f"{up:.1f} + {down:.1f}"
    total = _median(samples, "load_throughput_bps")
    if total is None:
        return "-"
    load = ((samples[0].get("details") or {}).get("load")) or {}
    return f"{total / 1e6:.1f} s→c" if load.get("direction") == "down" else f"{total / 1e6:.1f} c→s"


def _load_words(sample: dict[str, Any]) -> str:
    load = ((sample.get("details") or {}).get("load")) or {}
    if not load:
        return "-"
    streams = load.get("streams")
    many = f"{streams}+{streams}" if load.get("direction") == "both" else f"{streams}"
    way = "" if load.get("direction") == "both" else f" {load.get('direction')}"
    rate = f" @{load['bitrate']}/stream" if load.get("bitrate") is not None else ""
    return f"{many} {load.get('protocol')}{way}{rate}"


def _pair(r: Loaded, q: str, mean: bool) -> str:
    if getattr(r, f"idle_{q}_ms") is None and getattr(r, f"loaded_{q}_ms") is None:
        return "-"
    return f"{_fig(r, f'idle_{q}_ms')}→{_fig(r, f'loaded_{q}_ms')}" + (" (mean)" if mean else "")


def _added(r: Loaded, q: str) -> str:
    return "-" if getattr(r, f"added_{q}_ms") is None else f"+{_fig(r, f'added_{q}_ms')}"


def brief_rows(doc: dict[str, Any]) -> list[list[str]]:
    """The one-screen report's rows (BRIEF_HEADERS), one per load test."""
    groups = group_samples(doc.get("tests", []))
    out = []
    for r in loaded(doc):
        samples = groups[r.test]
        first = next((s for s in samples if s.get("status") == "ok"), samples[0])
        probe = f"{r.tool} {first.get('client')}→{first.get('server')}"
        out.append([
            r.test, r.mode, probe, _load_words(first), _pair(r, "p50", r.basis == "mean"),
            _added(r, "p50"), _pair(r, "p99", False), _added(r, "p99"),
            f"{_count(samples, 'idle')}/{_count(samples, 'loaded')}", load_cell(samples),
        ])  # fmt: skip
    return out


BRIEF_TITLE = (
    "latency under load (medians of the ok repeats; added = loaded - idle; samples: probes "
    "idle/loaded; c→s + s→c: the load's two directions, not one link's)"
)
