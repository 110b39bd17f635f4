"""One rule for every judged metric, and the cause a verdict names.

The rule, for each metric a test is judged on (its tool's default tolerance, or the
scenario's ``tolerances:``):

1. ``now`` and ``before`` are the medians of the two sides' repeats (a WORST_REPEAT metric,
   loss: each side's worst repeat). A change smaller than the tolerance, or than the
   tool's floor (Metric.floor: its resolution), is ``ok``.
2. Noise can widen the tolerance, never beyond WIDEN_MAX times it: the two sides' 95%
   confidence intervals (their half-widths added: the change must take the intervals
   apart), the run-to-run noise (NOISE_SIGMAS standard deviations of the medians of the
   last stored runs a baseline could be), and a test CPU-bound on either side, or whose
   host's hypervisor took its CPU (the CPU may have moved the figure: the full WIDEN_MAX).
   A change within the widened tolerance is ``noisy``, and the verdict names what widened
   it.
3. A change beyond the widened tolerance is ``regressed`` (or ``improved``) whatever the
   noise says: a link halved on a loaded machine is a regression.

The cause names where the change came from, from the samples' own evidence: ``host`` (the
hosts' context changed since the baseline: kernel, sysctls, qdisc, MTU...), ``sender`` (a
UDP sender, open loop, that itself sent most of the drop less, or no longer offered the
asked rate), ``receiver`` (UDP loss all counted by the receiving host as receive-buffer
errors, none on the way), else ``network`` (the path).
Which causes page (exit 3) is the caller's choice (DEFAULT_PAGE_ON).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from netrun.core.metrics import Limit, Metric
from netrun.history.baseline import WORST_REPEAT, worst
from netrun.results import flags
from netrun.results.stats import ok_values, summarize

#: Noise widens a tolerance at most this many times (5% -> 15% for throughput).
WIDEN_MAX = 3.0
#: Every cause a verdict can name, with the words reports use.
CAUSES = {
    "network": "the network path",
    "sender": "the sender",
    "receiver": "the receiver's CPU or buffers",
    "host": "a host context change",
}
#: The causes whose regressions exit 3 unless --page-on says otherwise: the network path
#: and a changed host (a qdisc, an MTU, a kernel); not a busy sender or receiver, whose
#: figure moved with its CPU or buffers (still ``regressed``, named, in every report).
DEFAULT_PAGE_ON = ("network", "host")
LOSS_METRICS = frozenset({"lost_percent", "lost"})


@dataclass(frozen=True)
class Finding:
    """One metric judged: its verdict (ok, noisy, regressed, improved), both sides' figures
    (in the metric's unit), the tolerance as text and what noise widened it to."""

    metric: str
    verdict: str
    before: float
    after: float
    limit: str
    noise: str = ""
    worst_repeat: bool = False

    @property
    def change(self) -> float:
        return self.after - self.before


def worse(metric: Metric, change: float) -> bool:
    """Whether ``change`` is for the worse of ``metric`` (its declared direction)."""
    return change < 0 if metric.better == "higher" else change > 0


def sides(
    metric: Metric, values: Sequence[float], earlier: Sequence[float]
) -> tuple[float, float, bool]:
    """(now, before, on the worst repeat): the medians, or for a WORST_REPEAT metric each
    side's worst repeat."""
    if metric.name in WORST_REPEAT:
        return worst(values, metric.better), worst(earlier, metric.better), True
    return statistics.median(values), statistics.median(earlier), False


def _half_width(values: Sequence[float]) -> float | None:
    found = summarize(list(values))
    if found is None or found.n < 2 or found.ci_low is None or found.ci_high is None:
        return None
    return (found.ci_high - found.ci_low) / 2


def _amount(metric: Metric, amount: float, before: float, limit: Limit) -> str:
    """An allowed change as people read it: % of the baseline for a relative limit."""
    if limit.relative is not None and before:
        return f"{amount / abs(before) * 100:.1f}%"
    unit = "points" if metric.unit == "%" else (metric.shown_unit or metric.unit)
    return f"{metric.show(amount)} {unit}".rstrip()


def judge(
    metric: Metric,
    values: Sequence[float],
    earlier: Sequence[float],
    limit: Limit,
    spread: tuple[float, int] | None = None,
    cpu: Sequence[str] = (),
) -> Finding | None:
    """The verdict on one metric by the rule above; None when it cannot be judged (no
    figure on a side, or a relative limit against a baseline of 0).

    ``spread``: (run-to-run noise in the metric's unit, runs it came from); ``cpu``: what
    the CPUs did that may have moved the figure (cpu_reasons' phrases)."""
    if not values or not earlier:
        return None
    limit = limit.floored(metric.floor)
    now, before, on_worst = sides(metric, values, earlier)
    allowed = limit.allowed(before)
    if allowed is None:
        return None
    text = limit.text(metric.shown_unit if metric.unit == "%" else metric.unit)
    if metric.unit == "%" and limit.absolute is not None:
        text = limit.text("%")
    change = now - before
    base = Finding(metric.name, "ok", before, now, text, worst_repeat=on_worst)
    if abs(change) <= allowed:
        return base
    cap = WIDEN_MAX * allowed
    widened, why = allowed, []
    if not on_worst:
        mine, theirs = _half_width(values), _half_width(earlier)
        if mine is not None and theirs is not None and mine + theirs > allowed:
            widened = max(widened, mine + theirs)
            why.append("the 95% confidence intervals overlap")
    if spread is not None and spread[0] > allowed:
        widened = max(widened, spread[0])
        why.append(f"run-to-run noise of the last {spread[1]} runs")
    if cpu:
        widened = cap
        why.extend(cpu)
    widened = min(widened, cap)
    noise = ""
    if why:
        noise = (
            f"{', '.join(why)}: tolerance {_amount(metric, allowed, before, limit)} "
            f"widened to {_amount(metric, widened, before, limit)} (at most {WIDEN_MAX:g}x)"
        )
    if abs(change) <= widened:
        return Finding(metric.name, "noisy", before, now, text, noise, on_worst)
    verdict = "regressed" if worse(metric, change) else "improved"
    return Finding(metric.name, verdict, before, now, text, noise, on_worst)


#: How schema 1 worded the iperf3 limits (kept: people grep nightly logs for them).
WORDS = {
    "throughput_bps": ("throughput", ""),
    "lost_percent": ("UDP loss", "points"),
    "jitter_ms": ("jitter", "ms"),
    "retransmits": ("retransmits", ""),
}
FORMATS = {"lost_percent": "{:.2f}", "jitter_ms": "{:.3f}", "retransmits": "{:g}"}


def _shower(metric: Metric) -> Callable[[float], str]:
    fmt = FORMATS.get(metric.name)
    return fmt.format if fmt else metric.show


def headline_text(metric: Metric, found: Finding, pct: float | None) -> str:
    """ "throughput 190.1 vs 401.2 Mbit/s (-52.6%, tolerance 5%)"."""
    label = WORDS["throughput_bps"][0] if metric.name == "throughput_bps" else metric.name
    unit = metric.shown_unit or metric.unit
    shown = f"{label} {metric.show(found.after)} vs {metric.show(found.before)} {unit}".rstrip()
    if pct is None:
        return shown
    return f"{shown} ({pct:+.1f}%, tolerance {found.limit})"


def breach_text(
    metric: Metric, found: Finding, cur: Sequence[dict[str, Any]], words: Mapping[str, Any]
) -> str:
    """ "UDP loss rose by 6.60 points (0.20 -> 6.80), limit 1 point"."""
    label, unit = words.get(metric.name, (metric.name, metric.shown_unit or metric.unit))
    show = _shower(metric)
    verb = "rose" if found.change > 0 else "fell"
    if found.limit.split(" and ")[0].endswith("%") and found.before:
        size = f"{abs(found.change) / abs(found.before) * 100:.1f}%"
    else:
        size = " ".join(x for x in (show(abs(found.change)), unit) if x)
    text = (
        f"{label} {verb} by {size} ({show(found.before)} -> {show(found.after)}), "
        f"limit {found.limit}"
    )
    values = ok_values(cur, metric.name)
    if found.worst_repeat and len(values) > 1:  # the repeat a median would have hidden
        text += f", worst repeat: {_repeat_of(cur, metric.name, found.after)} of {len(values)}"
    return text


def _repeat_of(samples: Sequence[dict[str, Any]], name: str, value: float) -> str:
    """The repeat number of the ok sample whose ``name`` is ``value`` (else its place)."""
    for place, sample in enumerate(samples, start=1):
        if sample.get("status") == "ok" and ok_values([sample], name) == [value]:
            return str(sample.get("repeat") or place)
    return "?"


#: The flags that say a side's CPU may have moved its figure, and how a verdict says so.
CPU_FLAGS = {"cpu-bound": "cpu-bound", "cpu-stolen": "CPU stolen by the hypervisor"}


def cpu_reasons(cur: Sequence[Mapping[str, Any]], base: Sequence[Mapping[str, Any]]) -> list[str]:
    """What the CPUs did on each side that may have moved the figure, as a verdict says
    it ("cpu-bound in this run and the baseline", "CPU stolen by the hypervisor in this
    run"): the cpu-bound and cpu-stolen flags."""
    found = {side: set(flags.of_test(s)) if s else set() for side, s in
             (("this run", cur), ("the baseline", base))}  # fmt: skip
    out = []
    for flag, words in CPU_FLAGS.items():
        sides = [side for side, names in found.items() if flag in names]
        if sides:
            out.append(f"{words} in {' and '.join(sides)}")
    return out


def _median(samples: Sequence[Mapping[str, Any]], name: str) -> float | None:
    values = ok_values([dict(s) for s in samples], name)
    return statistics.median(values) if values else None


def _sender_drop(
    metric: str, cur: Sequence[Mapping[str, Any]], base: Sequence[Mapping[str, Any]]
) -> str | None:
    """Why a UDP test's lower throughput is the sender's: its sender (open loop: the path
    cannot slow it) sent at least half of the drop less. None when it did not."""
    udp = any(flags.offered_bps(s) for s in cur)
    if metric != "throughput_bps" or not udp:
        return None
    got = [_median(side, name) for side in (cur, base) for name in (metric, "sender_bps")]
    if any(v is None for v in got):
        return None
    now, sent_now, before, sent_before = (float(v or 0.0) for v in got)
    drop, sent_drop = before - now, sent_before - sent_now
    if drop <= 0 or sent_drop < 0.5 * drop:
        return None
    return (
        f"the sender sent {sent_before / 1e6:.1f} -> {sent_now / 1e6:.1f} Mbit/s: "
        f"{sent_drop / 1e6:.1f} of the {drop / 1e6:.1f} Mbit/s drop never left it"
    )


def cause(
    metric: str,
    cur: Sequence[Mapping[str, Any]],
    base: Sequence[Mapping[str, Any]],
    context_note: str = "",
) -> tuple[str, str]:
    """(cause, why) of a change of ``metric`` (see the module docstring): a changed host
    first (a qdisc, an MTU: the change is the setup's), then the sender's or the
    receiver's own evidence, else the network path."""
    now, before = set(flags.of_test(cur)), set(flags.of_test(base))
    if context_note:
        return "host", context_note.removeprefix("; ")
    if (why := _sender_drop(metric, cur, base)) is not None:
        return "sender", why
    if "sender-below-target" in now and "sender-below-target" not in before:
        return "sender", "the sender no longer sent the offered rate"
    lossy = metric in LOSS_METRICS or metric == "throughput_bps"
    if lossy and "receiver-overrun" in now and "dropped-on-path" not in now:
        lines = flags.loss_notes(cur)
        return "receiver", (
            "the receiving host counted the lost datagrams as receive-buffer errors, "
            "none lost on the way" + (f" ({lines[-1]})" if lines else "")
        )
    return "network", "no host-side cause found: the path between the hosts"
