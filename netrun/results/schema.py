"""The shape of results.json, checked when a saved run is read back.

``netrun report``, ``history import``, ``--baseline FILE`` and ``--resume`` read files that
may have been edited by hand, cut short or replaced. The renderers trust the shape netrun
writes; ``check`` makes that trust safe: every field they read has the type they expect
(absent optional fields are filled with null), and anything else is one NetrunError line
naming the file and the field, instead of a traceback deep inside a renderer.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from netrun.core import numeric
from netrun.errors import NetrunError
from netrun.results.context import FIELDS as CONTEXT_FIELDS
from netrun.results.context import GROUPS as CONTEXT_GROUPS

Check = Callable[[Any], bool]


def _text(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _number(value: Any) -> bool:
    # JSON lets NaN, infinities and 400-digit integers through; renderers need floats
    return value is None or numeric.is_number(value)


def _texts(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _interval(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 3 and all(_number(v) for v in value)


#: ``mtu``: what the test ran at (``mtu:``, else the probe's); ``mtu_at_probe``: the
#: probe's (absent in results of versions before it).
NIC: dict[str, Check] = {
    "iface": _text,
    "speed_mbps": _number,
    "mtu": _number,
    "mtu_at_probe": _number,
    "driver": _text,
}
TOP: dict[str, Check] = {
    "run_id": _text,
    "started": _text,
    "finished": _text,
    "netrun_version": _text,
    "status": _text,
    "run_dir": _text,
    "errors": _texts,
    "not_run": _texts,
    "planned": _texts,
    "skipped": _texts,
}
REQUIRED = ("name", "status", "mode", "server", "client", "protocol")
SAMPLE: dict[str, Check] = {
    "error": _text,
    "raw": _text,
    "started": _text,
    "finished": _text,
    "tool_version": _text,
    **{
        key: _number
        for key in (
            "throughput_bps sender_bps retransmits cpu_client_pct cpu_server_pct jitter_ms "
            "lost_percent lost_packets packets line_rate_mbps goodput_ceiling_mbps "
            "ceiling_slack_mbps"
        ).split()
    },
}
TOLERANCES: dict[str, Check] = {
    "tolerance": _text,
    "loss_tolerance": _number,
    "jitter_tolerance": _number,
    "retransmits_tolerance": _number,
}
VERDICT: dict[str, Check] = {
    "delta_pct": _number,
    "detail": _text,
    **dict.fromkeys(("metric", "limit", "cause"), _text),
    **dict.fromkeys(("before", "after", "again"), _number),
}


class _Problems:
    def __init__(self) -> None:
        self.found: list[str] = []

    def fields(self, where: str, data: dict[str, Any], checks: dict[str, Check]) -> None:
        for key, ok in checks.items():
            if key in data and not ok(data[key]):
                self.bad(f"{where}{key}", data[key])

    def bad(self, where: str, value: Any) -> None:
        shown = repr(value)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        self.found.append(f"{where} has the wrong type ({shown})")


def check(doc: dict[str, Any], path: Path) -> dict[str, Any]:
    """``doc`` with absent optional sample fields set to null; NetrunError if a field that is
    there has a type netrun never writes."""
    p = _Problems()
    if not isinstance(doc.get("scenario"), str):
        p.bad("scenario", doc.get("scenario"))
    p.fields("", doc, TOP)
    hosts = doc.get("hosts")
    if hosts is not None and not isinstance(hosts, dict):
        p.bad("hosts", hosts)
    for name, facts in (hosts if isinstance(hosts, dict) else {}).items():
        if facts is not None and not isinstance(facts, dict):
            p.bad(f"hosts.{name}", facts)
        elif facts:
            p.fields(f"hosts.{name}.", facts, {"kernel": _text, "iperf3_version": _text})
            _nic(p, f"hosts.{name}.nic", facts.get("nic"))
            _context(p, f"hosts.{name}.context", facts.get("context"))
    declared = doc.get("metrics")
    if declared is not None and not (
        isinstance(declared, dict) and all(isinstance(v, dict) for v in declared.values())
    ):
        p.bad("metrics", declared)
    baseline = doc.get("baseline")
    if baseline is not None and not isinstance(baseline, dict):
        p.bad("baseline", baseline)
    elif baseline:
        verdicts = baseline.get("verdicts") or []
        if not isinstance(verdicts, list):
            p.bad("baseline.verdicts", verdicts)
        for i, v in enumerate(verdicts if isinstance(verdicts, list) else []):
            where = f"baseline.verdicts[{i}]"
            if not isinstance(v, dict) or not all(
                isinstance(v.get(k), str) for k in ("test", "verdict")
            ):
                p.bad(where, v)
            else:
                p.fields(where + ".", v, VERDICT)
    tests = doc.get("tests")
    if not isinstance(tests, list):
        p.bad("tests", tests)
        tests = []
    for i, sample in enumerate(tests):
        _sample(p, f"tests[{i}]", sample)
    if p.found:
        more = f" (and {len(p.found) - 1} more)" if len(p.found) > 1 else ""
        raise NetrunError(
            f"{path}: {p.found[0]}{more}; not a results.json as netrun writes it"
            " (restore the file or run the scenario again)"
        )
    return doc


def _nic(p: _Problems, where: str, nic: Any) -> None:
    if nic is not None and not isinstance(nic, dict):
        p.bad(where, nic)
    elif nic:
        p.fields(where + ".", nic, NIC)


def _context(p: _Problems, where: str, context: Any) -> None:
    """A host's context (netrun.results.context; absent in runs before it): scalars are text
    or numbers, each group a mapping of text (None where the host could not tell)."""
    if context is None:
        return
    if not isinstance(context, dict):
        p.bad(where, context)
        return
    p.fields(where + ".", context, {k: _scalar for k in CONTEXT_FIELDS})
    for group in (*CONTEXT_GROUPS, "unavailable"):
        entries = context.get(group)
        if entries is not None and not (
            isinstance(entries, dict) and all(_text(v) for v in entries.values())
        ):
            p.bad(f"{where}.{group}", entries)


def _scalar(value: Any) -> bool:
    return _text(value) or _number(value)


def _sample(p: _Problems, where: str, sample: Any) -> None:
    if not isinstance(sample, dict):
        p.bad(where, sample)
        return
    for key in REQUIRED:
        if not isinstance(sample.get(key), str):
            p.bad(f"{where}.{key}", sample.get(key))
    repeat = sample.setdefault("repeat", 1)
    if isinstance(repeat, bool) or not isinstance(repeat, int) or not 1 <= repeat <= 10**9:
        p.bad(f"{where}.repeat", repeat)
    for key in SAMPLE:
        sample.setdefault(key, None)
    p.fields(where + ".", sample, SAMPLE)
    for key in ("options", "details", "nic", "iperf3_version"):
        value = sample.setdefault(key, {})
        if not isinstance(value, dict):
            p.bad(f"{where}.{key}", value)
    if isinstance(sample["options"], dict):
        p.fields(f"{where}.options.", sample["options"], TOLERANCES)
    if isinstance(sample["nic"], dict):
        for side, nic in sample["nic"].items():
            _nic(p, f"{where}.nic.{side}", nic)
    if isinstance(sample["details"], dict):
        ids = sample["details"].get("image_ids")
        if ids is not None and not (
            isinstance(ids, dict) and all(isinstance(v, dict) for v in ids.values())
        ):
            p.bad(f"{where}.details.image_ids", ids)
    values = sample.get("metrics")
    if values is not None and not (
        isinstance(values, dict)
        and all(isinstance(k, str) and _number(v) for k, v in values.items())
    ):
        p.bad(f"{where}.metrics", values)
    if not _text(sample.get("tool")):
        p.bad(f"{where}.tool", sample.get("tool"))
    intervals = sample.setdefault("intervals", [])
    if not isinstance(intervals, list) or not all(_interval(i) for i in intervals):
        p.bad(f"{where}.intervals", intervals)
