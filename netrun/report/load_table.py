"""Latency under load side by side: each ``load:`` test's idle and loaded latency, what the
load added at the median and the p99, and the throughput the load reached meanwhile.

A loaded test's metrics are its tool's with ``_idle`` and ``_loaded`` forms
(netrun.tools.load.tool); which of them are the median and p99, in which unit, is
netrun.tools.load.spec.LATENCY's. A tool without percentiles (iperf2) shows its mean
instead, marked so. Every figure is the median over the test's ok repeats.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from typing import Any

from netrun.report.summary import group_samples
from netrun.results import stats
from netrun.tools.load.spec import LATENCY

ADDED = ("latency_added_p50_ms", "latency_added_p99_ms")
HEADERS = ["test", "mode", "tool", "load", "idle p50 ms", "loaded p50 ms", "added p50 ms",
           "idle p99 ms", "loaded p99 ms", "added p99 ms", "load Mbit/s", "n"]  # fmt: skip
#: A tool without percentiles: its mean stands in, said so in the cell.
MEANS = {"iperf2": ("latency_avg_ms", 1.0)}


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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _median(samples: list[dict[str, Any]], name: str | None, scale: float = 1.0) -> float | None:
    if name is None:
        return None
    found = stats.summarize(stats.ok_values(samples, name))
    return None if found is None else found.median * scale


def _phase(
    samples: list[dict[str, Any]], metric: str | None, which: str, scale: float
) -> float | None:
    """The median of ``<metric>_idle`` or ``_loaded`` in ms."""
    return _median(samples, f"{metric}_{which}" if metric else None, scale)


def _load_text(sample: dict[str, Any]) -> str:
    load = ((sample.get("details") or {}).get("load")) or {}
    if not load:
        return "-"
    rate = f" @{load['bitrate']}" if load.get("bitrate") is not None else ""
    return f"{load.get('streams')}x {load.get('protocol')} {load.get('direction')}{rate}"


def loaded(doc: dict[str, Any]) -> list[Loaded]:
    """Every test of the run that ran with ``load:``, in the run's order."""
    out = []
    for name, samples in group_samples(doc.get("tests", [])).items():
        if not any(ADDED[0] in (s.get("metrics") or {}) for s in samples):
            continue
        first = samples[0]
        tool = str(first.get("tool") or "")
        p50, p99, scale = LATENCY.get(tool, (None, None, 1.0))
        basis = "p50"
        if p50 is None and tool in MEANS:
            (p50, scale), basis = MEANS[tool], "mean"
        ok = [s for s in samples if s.get("status") == "ok"]
        with_load = next((s for s in ok), first)

        idle50, loaded50 = (_phase(samples, p50, w, scale) for w in ("idle", "loaded"))
        added50 = _median(samples, ADDED[0])
        if added50 is None and idle50 is not None and loaded50 is not None:
            added50 = loaded50 - idle50  # a mean's difference (iperf2)
        out.append(
            Loaded(
                test=name, mode=str(first.get("mode")), tool=tool, load=_load_text(with_load),
                idle_p50_ms=idle50, loaded_p50_ms=loaded50, added_p50_ms=added50,
                idle_p99_ms=_phase(samples, p99, "idle", scale),
                loaded_p99_ms=_phase(samples, p99, "loaded", scale),
                added_p99_ms=_median(samples, ADDED[1]),
                load_bps=_median(samples, "load_throughput_bps"), n=len(ok), basis=basis,
            )
        )  # fmt: skip
    return out


def _cell(value: float | None, digits: int = 3, mean: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}" + (" (mean)" if mean else "")


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
            r.test, r.mode, r.tool, r.load, _cell(r.idle_p50_ms, mean=mean),
            _cell(r.loaded_p50_ms, mean=mean), _cell(r.added_p50_ms, mean=mean),
            _cell(r.idle_p99_ms), _cell(r.loaded_p99_ms), _cell(r.added_p99_ms),
            _cell(mbps, 1) + both, str(r.n),
        ])  # fmt: skip
    return out


TITLE = "latency under load (median of the ok repeats; added = loaded - idle)"


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


def _pair(idle: float | None, loaded: float | None, mean: bool) -> str:
    if idle is None and loaded is None:
        return "-"
    return f"{_cell(idle)}→{_cell(loaded)}" + (" (mean)" if mean else "")


def brief_rows(doc: dict[str, Any]) -> list[list[str]]:
    """The one-screen report's rows (BRIEF_HEADERS), one per load test."""
    groups = group_samples(doc.get("tests", []))
    out = []
    for r in loaded(doc):
        samples = groups[r.test]
        first = next((s for s in samples if s.get("status") == "ok"), samples[0])
        probe = f"{r.tool} {first.get('client')}→{first.get('server')}"
        added99 = "-" if r.added_p99_ms is None else f"+{_cell(r.added_p99_ms)}"
        out.append([
            r.test, r.mode, probe, _load_words(first),
            _pair(r.idle_p50_ms, r.loaded_p50_ms, r.basis == "mean"),
            "-" if r.added_p50_ms is None else f"+{_cell(r.added_p50_ms)}",
            _pair(r.idle_p99_ms, r.loaded_p99_ms, False), added99,
            f"{_count(samples, 'idle')}/{_count(samples, 'loaded')}", load_cell(samples),
        ])  # fmt: skip
    return out


BRIEF_TITLE = (
    "latency under load (medians of the ok repeats; added = loaded - idle; samples: probes "
    "idle/loaded; c→s + s→c: the load's two directions, not one link's)"
)
