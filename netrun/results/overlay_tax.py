"""The overlay tax, decomposed: why a mode's throughput is below bare metal's on one pair.

"96.5% of bare metal" ends the comparison where a lab engineer's question starts. For each
test of a container or overlay mode with a bare-metal test of the same pair, protocol,
direction and sizes, the gap is split into what the saved samples can show:

- framing: the two goodput ceilings' ratio (an overlay's smaller MTU and its encapsulation
  headers cost the same share of every frame); a mode whose bytes left the overlay (FreeFlow,
  accelerated) pays bare metal's framing;
- CPU: the cost per transferred gigabit against bare metal's and whether a core saturated
  (``cpu_s_per_gbit_*`` and ``busiest_core_pct_*`` where the samples carry them, else the
  tool's own process CPU, which misses softirq work on other cores: said so);
- retransmits against bare metal's;
- the bytes the overlay added on the wire (the path counters: NIC bytes per test byte);
- what is left unexplained.

Only framing is computed from a model; CPU and retransmits take the rest of the gap only
when their evidence says they limited the test, otherwise they are shown as evidence with no
share. Every line carries the figures it stands on. Computed from saved samples, so an old
run gets its breakdown too; nothing here is measured.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from netrun.core.numeric import finite
from netrun.results.fanin import flow_pairs, pair_label
from netrun.results.flags import CORE_SATURATED_PCT
from netrun.results.stats import samples_by_test

BARE = "baremetal"
#: How sentences name the reference: bare metal, or a mode's own bare side.
BARE_WORDS = "bare metal"
#: Options two tests must share to be compared (the mode's own options may differ).
SHAPE = ("protocol", "streams", "reverse", "bidir", "bitrate", "length", "window", "mtu")
#: A mode's CPU cost per Gbit this many times bare metal's is "more CPU per byte".
COSTLIER = 1.10
#: Retransmits this many times bare metal's (and at least MIN_RETRANSMITS) are "more".
MORE_RETRANSMITS = 2.0
MIN_RETRANSMITS = 100
#: A gap below this share of bare metal's figure is noise, not a tax to explain.
NOISE = 0.005


@dataclass(frozen=True)
class Part:
    """One line of a breakdown: a cause, the Mbit/s of the gap it takes (None: evidence
    only, not shown to limit the test), and the figures it stands on."""

    cause: str
    mbps: float | None
    evidence: str


@dataclass(frozen=True)
class Breakdown:
    """A mode's test against the bare-metal test it is compared with."""

    test: str
    mode: str
    bare_test: str
    pair: str
    protocol: str
    bare_mbps: float
    mode_mbps: float
    parts: tuple[Part, ...] = field(default_factory=tuple)
    #: What the reference test measured: bare metal, or a mode's own bare side (its
    #: ``details.bare_side`` after a colon: "the nodes' own network"), as sentences say it.
    reference: str = BARE_WORDS

    @property
    def gap_mbps(self) -> float:
        return self.bare_mbps - self.mode_mbps

    @property
    def gap_pct(self) -> float:
        return 100 * self.gap_mbps / self.bare_mbps

    @property
    def gap_words(self) -> str:
        """The gap as a reader takes it: a negative one is this mode above bare metal."""
        if self.gap_mbps < 0:
            return f"{-self.gap_mbps:.1f} Mbit/s ({-self.gap_pct:.1f}%) above {self.reference}"
        return f"gap {self.gap_mbps:.1f} Mbit/s ({self.gap_pct:.1f}%)"

    def to_dict(self) -> dict[str, Any]:
        """The JSON view (reports and exporters read this, not the dataclass)."""
        return {
            "test": self.test, "mode": self.mode, "bare_test": self.bare_test,
            "pair": self.pair, "protocol": self.protocol, "bare_mbps": self.bare_mbps,
            "mode_mbps": self.mode_mbps, "gap_mbps": self.gap_mbps, "gap_pct": self.gap_pct,
            "reference": self.reference,
            "parts": [{"cause": p.cause, "mbps": p.mbps, "evidence": p.evidence}
                      for p in self.parts],
        }  # fmt: skip


def _ok(samples: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [s for s in samples if s.get("status") == "ok"]


def _median(values: Iterable[Any]) -> float | None:
    known = [v for v in (finite(x) for x in values) if v is not None]
    return statistics.median(known) if known else None


def _metric(samples: Sequence[Mapping[str, Any]], name: str) -> float | None:
    """A figure's median over samples: a declared metric, else the sample's own field."""
    values = []
    for s in samples:
        metrics = s.get("metrics")
        value = metrics.get(name) if isinstance(metrics, Mapping) else None
        values.append(value if value is not None else s.get(name))
    return _median(values)


def _details(sample: Mapping[str, Any]) -> Mapping[str, Any]:
    details = sample.get("details")
    return details if isinstance(details, Mapping) else {}


def _shape(sample: Mapping[str, Any]) -> tuple[Any, ...]:
    options = sample.get("options")
    opts = options if isinstance(options, Mapping) else {}
    protocol = sample.get("protocol") or opts.get("protocol")
    # every flow, so a 3-client fan-in meets bare metal's 3-client one, not its 1-client one
    return (tuple(sorted(flow_pairs(sample))), sample.get("tool") or "iperf3",
            protocol, *(repr(opts.get(k)) for k in SHAPE[1:]))  # fmt: skip


def _accelerated(samples: Sequence[Mapping[str, Any]]) -> bool:
    return bool(samples) and all(_details(s).get("accelerated") is True for s in samples)


def _framing(
    bare: Sequence[Mapping[str, Any]],
    mode: Sequence[Mapping[str, Any]],
    bare_mbps: float,
    ref: str = BARE_WORDS,
) -> Part:
    cb = _median(s.get("goodput_ceiling_mbps") for s in bare)
    cm = _median(s.get("goodput_ceiling_mbps") for s in mode)
    if _accelerated(mode) and cb:
        return Part("framing", 0.0, f"the test's bytes left the overlay (path counters): "
                    f"{ref}'s framing, ceiling {cb:.1f} Mbit/s")  # fmt: skip
    if not cb or not cm:
        missing = f"{ref}'s" if not cb else "this mode's"
        return Part("framing", None, f"unavailable: no goodput ceiling for {missing} test "
                    "(the NIC's speed or MTU was not read)")  # fmt: skip
    mtus = sorted({str(_details(s).get("overlay_mtu")) for s in mode} - {"None"})
    inner = f" (overlay MTU {', '.join(mtus)})" if mtus else ""
    share = max(0.0, 1 - cm / cb)
    return Part("framing", bare_mbps * share, f"ceilings {cm:.1f} vs {ref}'s {cb:.1f} "
                f"Mbit/s{inner}: {100 * share:.1f}% of every frame")  # fmt: skip


def _cpu_figures(samples: Sequence[Mapping[str, Any]]) -> dict[str, float | None]:
    names = [f"{kind}_{end}" for kind in ("cpu_s_per_gbit", "busiest_core_pct", "softirq_pct")
             for end in ("client", "server")]  # fmt: skip
    return {n: _metric(samples, n) for n in (*names, "cpu_client_pct", "cpu_server_pct")}


def _busiest(fig: Mapping[str, float | None]) -> tuple[str, float] | None:
    ends = [(end, fig[f"busiest_core_pct_{end}"]) for end in ("client", "server")]
    known = [(end, v) for end, v in ends if v is not None]
    return max(known, key=lambda e: e[1]) if known else None


def _role(samples: Sequence[Mapping[str, Any]], end: str) -> str:
    """What an end did in the test: the sender, the receiver, or both (bidir)."""
    found = samples[0].get("options") if samples else None
    options: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    if options.get("bidir"):
        return "sending and receiving"
    sender = "server" if options.get("reverse") else "client"
    return "the sender" if end == sender else "the receiver"


def _where(samples: Sequence[Mapping[str, Any]], busy: tuple[str, float]) -> str:
    end, pct = busy
    return f"{pct:.0f}% on the {end}, {_role(samples, end)}"


def _saturation(
    bare: Sequence[Mapping[str, Any]],
    mode: Sequence[Mapping[str, Any]],
    busy_b: tuple[str, float] | None,
    busy_m: tuple[str, float],
    ref: str = BARE_WORDS,
) -> tuple[bool, str]:
    """(only this mode saturated a core, the sentence naming which side did, with its end
    and role): a core saturated on both sides cannot explain a gap between them."""
    sat_m = busy_m[1] >= CORE_SATURATED_PCT
    sat_b = busy_b is not None and busy_b[1] >= CORE_SATURATED_PCT
    mine = f"this mode's busiest core {_where(mode, busy_m)}"
    if busy_b is None:
        theirs = f"{ref}'s per-core CPU unavailable"
    else:
        theirs = f"{ref}'s busiest {_where(bare, busy_b)}"
    if sat_m and sat_b:
        return False, f"a core saturated on both sides: {mine}, {theirs}"
    if sat_m:
        return True, f"a core saturated in this mode only: {mine} ({theirs})"
    if sat_b:
        return False, f"a core saturated in {ref} only: {theirs} ({mine})"
    return False, f"no core saturated on either side: {mine} ({theirs})"


def _cpu(
    bare: Sequence[Mapping[str, Any]],
    mode: Sequence[Mapping[str, Any]],
    rest: float,
    *,
    share: bool = True,
    ref: str = BARE_WORDS,
) -> Part:
    """The CPU line; with ``share`` False evidence only (a gap within noise, or negative)."""
    fb, fm = _cpu_figures(bare), _cpu_figures(mode)
    busy_m, busy_b = _busiest(fm), _busiest(fb)
    processes = _procs(mode)
    named = f"; the mode's processes (CPU-s per test): {processes}" if processes else ""
    if busy_m is None:
        procs = [f"{end} {fm[f'cpu_{end}_pct']:.0f}%" for end in ("client", "server")
                 if fm[f"cpu_{end}_pct"] is not None]  # fmt: skip
        seen = f" (the tool's own process: {', '.join(procs)})" if procs else ""
        return Part(
            "cpu",
            None,
            "unavailable: no per-core CPU readings in these samples"
            f"{seen}; softirq work on other cores is not in a process's figure{named}",
        )
    costs = []
    for end in ("client", "server"):
        m, b = fm[f"cpu_s_per_gbit_{end}"], fb[f"cpu_s_per_gbit_{end}"]
        if m is not None and b:
            costs.append(f"{end} {m:.2f} vs {b:.2f} CPU-s/Gbit ({m / b:.2f}x)")
    softirq = [f"{end} {fm[f'softirq_pct_{end}']:.0f}%" for end in ("client", "server")
               if fm[f"softirq_pct_{end}"] is not None]  # fmt: skip
    saturated, said = _saturation(bare, mode, busy_b, busy_m, ref)
    evidence = "; ".join([said, *costs, *([f"softirq {', '.join(softirq)}"] if softirq else [])])
    evidence += named
    if any(_details(s).get("cpu_shared_kernel") for s in mode):
        evidence += "; both ends share one kernel: these are the machine's cores"
    if saturated and share:
        return Part("cpu", max(rest, 0.0), evidence)
    return Part("cpu", None, evidence)


def _procs(samples: Sequence[Mapping[str, Any]]) -> str:
    """Each end's processes the mode runs beside the tool (a container's PID 1 and its
    runtime shim, FreeFlow's router: read per sample, details.counters.<end>.procs), their
    median CPU-seconds: split by end even where the ends share a kernel. The figures are
    /proc/PID/stat's clock ticks: 0.00 is under a hundredth of a second."""
    said = []
    for end in ("client", "server"):
        names: dict[str, list[float]] = {}
        for s in samples:
            counters = _details(s).get("counters")
            entry = counters.get(end) if isinstance(counters, Mapping) else None
            found = entry.get("procs") if isinstance(entry, Mapping) else None
            for name, seconds in (found or {}).items():
                if isinstance(seconds, int | float):
                    names.setdefault(name, []).append(float(seconds))
        for name, values in names.items():
            said.append(f"{end} {name} {statistics.median(values):.2f}")
    return ", ".join(said)


def _retransmits(
    bare: Sequence[Mapping[str, Any]],
    mode: Sequence[Mapping[str, Any]],
    rest: float,
    ref: str = BARE_WORDS,
) -> Part:
    rm, rb = _metric(mode, "retransmits"), _metric(bare, "retransmits")
    if rm is None:
        return Part("retransmits", None, "unavailable: not reported for this mode's test")
    base = f"{rm:.0f} vs {ref}'s {rb:.0f}" if rb is not None else f"{rm:.0f}"
    more = rm >= MIN_RETRANSMITS and (rb is None or rm >= MORE_RETRANSMITS * max(rb, 1))
    if more and rest > 0:
        return Part("retransmits", rest, f"{base} retransmitted segments")
    return Part("retransmits", None, f"{base} retransmitted segments")


def _wire(mode: Sequence[Mapping[str, Any]]) -> Part:
    ratios: list[float] = []
    for s in mode:
        path = _details(s).get("path_bytes")
        bps, seconds = finite(s.get("throughput_bps")), _seconds(s)
        if not isinstance(path, Mapping) or not bps or not seconds:
            continue
        found = s.get("options")
        options: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        if options.get("bidir"):
            continue  # both ends send: no one sender's NIC to read
        sender = "server" if options.get("reverse") else "client"
        nic = (path.get(sender) or {}).get("host_nic") or {}
        sent = finite(nic.get("tx_bytes"))
        if sent:
            ratios.append(sent / (bps * seconds / 8))
    if not ratios:
        return Part("wire bytes", None, "unavailable: no path byte counters for this mode")
    ratio = statistics.median(ratios)
    return Part("wire bytes", None, f"the sender's NIC counted {ratio:.3f} bytes per payload "
                "byte (with segmentation offload a counter sees one header per large segment, "
                "so it undercounts what the wire carried; the cost is in framing)")  # fmt: skip


def _seconds(sample: Mapping[str, Any]) -> float | None:
    options = sample.get("options")
    duration = options.get("duration") if isinstance(options, Mapping) else None
    return finite(duration)


def _no_tax(found: Breakdown) -> str:
    """The ``none`` line: within noise of the reference, or above it (a negative gap, said
    as such: a mode faster than bare metal is a finding, not a tax of zero)."""
    ref = found.reference
    if abs(found.gap_mbps) <= NOISE * found.bare_mbps:
        return f"within {100 * NOISE:.1f}% of {ref}: no tax to explain"
    return (
        f"{-found.gap_mbps:.1f} Mbit/s ({-found.gap_pct:.1f}%) above {ref}: no tax to "
        f"explain; a mode faster than {ref} on the same path is worth a look ({ref}'s "
        "test held back, or this mode's bytes took a shorter path: loopback?)"
    )


def breakdown(
    bare: Sequence[Mapping[str, Any]], mode: Sequence[Mapping[str, Any]], ref: str = BARE_WORDS
) -> Breakdown | None:
    """One mode test against its reference test (bare metal's, or ``ref``'s: a mode's own
    bare side); None when either has no passing sample."""
    ok_b, ok_m = _ok(bare), _ok(mode)
    tb, tm = _metric(ok_b, "throughput_bps"), _metric(ok_m, "throughput_bps")
    if not tb or tm is None:
        return None
    bare_mbps, mode_mbps = tb / 1e6, tm / 1e6
    first = ok_m[0]
    out = Breakdown(str(first.get("name")), str(first.get("mode")), str(ok_b[0].get("name")),
                    pair_label(first), str(first.get("protocol")), bare_mbps,
                    mode_mbps, reference=ref)  # fmt: skip
    gap = out.gap_mbps
    framing = _framing(ok_b, ok_m, bare_mbps, ref)
    if gap <= NOISE * bare_mbps:
        # no tax, but the evidence still says why (FreeFlow: bare metal's framing, and
        # what its router cost; a mode above bare metal: which side's core saturated)
        none = Part("none", None, _no_tax(out))
        evidence = (
            Part(framing.cause, None, framing.evidence),
            _cpu(ok_b, ok_m, 0.0, share=False, ref=ref),
        )
        return Breakdown(**{**out.__dict__, "parts": (none, *evidence)})
    taken = min(framing.mbps or 0.0, gap)
    framing = Part(framing.cause, taken if framing.mbps is not None else None, framing.evidence)
    cpu = _cpu(ok_b, ok_m, gap - taken, ref=ref)
    taken += cpu.mbps or 0.0
    retr = _retransmits(ok_b, ok_m, gap - taken, ref)
    taken += retr.mbps or 0.0
    left = Part("unexplained", max(gap - taken, 0.0), "the gap the lines above do not account for")
    parts = (framing, cpu, retr, _wire(ok_m), left)
    return Breakdown(**{**out.__dict__, "parts": parts})


def _reference(side: Sequence[Mapping[str, Any]]) -> str:
    """How sentences name a mode's own bare side: its ``details.bare_side`` after a colon
    ("hostNetwork pods: the nodes' own network" -> "the nodes' own network")."""
    said = str(_details(side[0]).get("bare_side") or "") if side else ""
    return said.split(":")[-1].strip() or BARE_WORDS


def breakdowns(doc: Mapping[str, Any]) -> list[Breakdown]:
    """Every non-bare test of a run that has a bare-metal test of the same shape. A
    mode's own bare side (``details.bare_side``: kubernetes' hostNetwork pods, the nodes'
    own network) is its tests' reference before bare metal's."""
    tests = samples_by_test(dict(doc))
    bare: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    sides: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for samples in tests.values():
        if samples and samples[0].get("mode") == BARE:
            bare.setdefault(_shape(samples[0]), samples)
        elif samples and _details(samples[0]).get("bare_side"):
            sides.setdefault((samples[0].get("mode"), *_shape(samples[0])), samples)
    out = []
    for samples in tests.values():
        if not samples or samples[0].get("mode") in (BARE, None):
            continue
        shape = _shape(samples[0])
        own = sides.get((samples[0].get("mode"), *shape))
        mine = own is not None and own is not samples
        ref = own if mine else bare.get(shape)
        words = _reference(own) if own is not None and mine else BARE_WORDS
        found = breakdown(ref, samples, words) if ref else None
        if found is not None:
            out.append(found)
    return out
