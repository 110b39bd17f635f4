"""One sample of results.json: a measurement (or a failure) with everything that proves it.

Built for the runner (netrun.run.runner), which adds it to the results in scenario order,
from the test's plan (netrun.run.plan: its tool's metrics, protocol and name, never
looked up by name); with the run's exit code rule, which reads the samples.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from netrun.core.linerate import Shaper, ceiling_of, line_rate_mbps, shaper_of
from netrun.core.mtuplan import frame_mtu
from netrun.results import flags
from netrun.results.store import utcnow
from netrun.tools.base import SampleFigures
from netrun.tools.facts import HostFacts

if TYPE_CHECKING:
    from netrun.core.measurement import Measurement
    from netrun.core.spec import TestSpec
    from netrun.inventory.model import Inventory
    from netrun.modes.base import Mode
    from netrun.run.plan import TestPlan


def build_sample(
    plan: TestPlan,
    repeat: int,
    m: Measurement | None,
    facts: Mapping[str, Any],
    inventory: Inventory,
    *,
    error: str | None = None,
    mode: Mode | None = None,
    raw: str | None = None,
    started: str | None = None,
    extra: Mapping[str, Any] | None = None,
    contexts: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One results.json sample: what was measured (or why not), with its proof (raw
    output, NIC facts, line rate and goodput ceiling, flags); figures a tool cannot
    know are null with a reason (details.unavailable). ``extra`` joins its details (what
    a failed fan repeat stopped); ``contexts``: results.json's ``hosts`` (each host's
    context: its data NIC's qdisc, whose shaping rate can be the ceiling's)."""
    test, tool = plan.spec, plan.tool  # tool: its load: form (idle/loaded metrics)
    nic = {side: nic_dict(facts.get(name)) for side, name in sides(test)}
    client_h = inventory.get(test.client)
    server_h = inventory.get(test.server)
    speed = line_rate_mbps(
        client_h.link_speed_mbps or nic["client"]["speed_mbps"],
        server_h.link_speed_mbps or nic["server"]["speed_mbps"],
    )
    if test.flows:  # many into one: the fan-in (fan-out) host's NIC is the bottleneck
        side = "client" if test.pairs == "fanout" else "server"
        centre = client_h if side == "client" else server_h
        speed = line_rate_mbps(centre.link_speed_mbps or nic[side]["speed_mbps"])
    details = dict(mode.details) if mode else {}
    if m:  # what the test ran at: the probe's MTU is the one before mtu: set it
        nic = {side: at_test(nic[side], name, details.get("mtu")) for side, name in sides(test)}
    mtus = [v["mtu"] for v in nic.values() if v["mtu"]]
    if frame_mtu(details.get("mtu")):  # the MTU the test ran at (mtu:)
        mtus = [frame_mtu(details.get("mtu"))]
    details.update(m.details if m else {})  # this repeat's own (path bytes, verdict)
    details.update(extra or {})
    inner = details.get("overlay_mtu")
    protocol = tool.protocol_for(test.options)
    # a result that fills the schema 1 figures itself (iperf3's): its own, not the metrics'
    r = m.result if m and isinstance(m.result, SampleFigures) else None
    ceiling = None  # a goodput ceiling is about TCP/UDP payload, not ICMP echoes
    # details.off_link: the mode knows its bytes never crossed the hosts' data links (two
    # pods on one node), so the links' ceiling does not bound them: none is claimed
    if protocol in ("tcp", "udp") and not details.get("off_link"):
        mtu = min(mtus) if mtus else None
        limits = shapers(test, contexts or {})
        ceiling = ceiling_of(test.options, r, speed, mtu, inner, protocol, limits)
    declared = (*tool.metrics, *(tool.fan.metrics if test.flows and tool.fan else ()))
    metrics = {x.name: (m.metrics.get(x.name) if m else None) for x in declared}
    top = top_level(r, metrics, tool.top_level)
    if m:
        why = {k: v for k, v in m.unavailable.items() if metrics.get(k) is None}
        missing = {k: f"not reported by {tool.name}" for k, v in metrics.items() if v is None}
        if why or missing:
            details["unavailable"] = {**missing, **why, **details.get("unavailable", {})}
    rec: dict[str, Any] = {
        "name": test.name,
        "mode": test.mode,
        "tool": tool.name,
        "server": test.server,
        "client": test.client,
        "hosts": dict(test.hosts_by_role),
        "protocol": protocol,
        "repeat": repeat,
        "status": "ok" if m else "failed",
        "error": None if m else (error or "failed"),
        "metrics": metrics,
        **top,
        "lost_percent": metrics.get("lost_percent"),
        "lost_packets": r.lost_packets if r else None,
        "packets": r.packets if r else None,
        "nic": nic,
        "iperf3_version": {
            side: getattr(facts.get(name), "iperf3_version", None)
            for side, name in (("client", test.client), ("server", test.server))
        },
        "tool_version": tool_version(test, r, facts),
        "line_rate_mbps": speed,
        "goodput_ceiling_mbps": ceiling.mbps if ceiling else None,
        "ceiling_basis": ceiling.basis if ceiling else None,
        "ceiling_slack_mbps": ceiling.slack_mbps if ceiling else None,
        "raw": raw,
        "started": started,
        "finished": utcnow(),
        "options": dict(test.options),
        "details": details,
        "intervals": r.series() if r else [],
    }
    if test.flows:  # several flows at once (netrun.run.flows): who sent to whom
        rec["flows"] = [[f.client, f.server] for f in test.flows]
    if test.matrix:  # a generated pair: the report draws its matrix (netrun.report.plots.matrix)
        rec["matrix"] = {"id": test.matrix, "pairs": test.pairs}
    for key in details.get("unavailable") or {}:  # a figure the tool cannot know: null
        if key in rec:
            rec[key] = None
    rec["direction"] = flags.direction(rec)
    rec["flags"] = flags.of_sample(rec)
    return rec


#: The schema 1 figures a sample carries at its top level (besides ``lost_percent``, every
#: tool's own metric of that name), in results.json's order.
TOP_LEVEL = ("throughput_bps", "sender_bps", "retransmits", "cpu_client_pct",
             "cpu_server_pct", "jitter_ms")  # fmt: skip


def top_level(
    r: SampleFigures | None, metrics: Mapping[str, float | None], names: tuple[str, ...]
) -> dict[str, float | None]:
    """The sample's top-level figures: a result's own where it fills them (SampleFigures:
    iperf3's), else the tool's metrics of those names it declares to mean the same
    (Tool.top_level), else None: a figure of another side or kind never fills one
    (netperf's throughput is not a sender_bps)."""
    if r is not None:
        own = r.top_level()
        return {name: own.get(name) for name in TOP_LEVEL}
    return {name: metrics.get(name) if name in names else None for name in TOP_LEVEL}


def tool_version(test: TestSpec, r: SampleFigures | None, facts: Mapping[str, Any]) -> str | None:
    """The tool release that measured: its result's own (SampleFigures.version: iperf3's
    JSON start.version), else the client's as the probe read it (HostFacts.version: iperf3
    -v); None where the probe reads none (history.baseline compares it across runs)."""
    if r is not None and r.version:
        return r.version
    found = facts.get(test.client)
    return found.version(test.tool) if isinstance(found, HostFacts) else None


def shapers(test: TestSpec, contexts: Mapping[str, Any]) -> list[Shaper | None]:
    """The rate-limiting qdisc on the egress of each sending end's data NIC, one per
    direction the data flows (the client; -R: the server; bidir: both), read from the
    hosts' contexts; [] for a fan-in (many senders: the receiving NIC's line rate bounds
    it, netrun.core.linerate)."""
    if test.flows and test.pairs != "fanout":
        return []
    if test.options.get("bidir"):
        ends = [("client", test.client), ("server", test.server)]
    else:
        ends = (
            [("server", test.server)] if test.options.get("reverse") else [("client", test.client)]
        )
    found: list[Shaper | None] = []
    for side, name in ends:
        host = contexts.get(name)
        ctx = host.get("context") if isinstance(host, Mapping) else None
        ctx = ctx if isinstance(ctx, Mapping) else {}
        where = f"{name}'s {ctx.get('nic') or 'data NIC'} egress (the {side}, sending)"
        found.append(shaper_of(ctx.get("qdisc"), ctx.get("qdisc_classes"), where))
    return found


def nic_dict(found: Any) -> dict[str, Any]:
    """The results.json view of one host's data NIC (all None when it was never probed):
    ``mtu`` and ``mtu_at_probe`` are the probe's until ``at_test`` says otherwise."""
    nic = getattr(found, "nic", None)
    out = {key: getattr(nic, key, None) for key in ("iface", "speed_mbps", "mtu", "driver")}
    return {**out, "mtu_at_probe": out["mtu"]}


def sides(test: TestSpec) -> tuple[tuple[str, str], ...]:
    """(side, host name) of the two ends a sample names."""
    return (("client", test.client), ("server", test.server))


def at_test(nic: dict[str, Any], host: str, mtu: Any) -> dict[str, Any]:
    """``nic`` as the test ran: ``mtu`` is the one ``mtu:`` set on that host's data NIC
    (netrun.run.mtu: ``details.mtu``), ``mtu_at_probe`` what the probe read before."""
    original = mtu.get("original") if isinstance(mtu, dict) else None
    changed = isinstance(original, dict) and nic.get("iface") in (original.get(host) or {})
    if not (changed and isinstance(mtu.get("underlay"), int)):
        return nic
    return {**nic, "mtu": mtu["underlay"]}


def not_accelerated(sample: dict[str, Any]) -> bool:
    """A sample of a mode that must accelerate (FreeFlow) whose bytes did not bypass."""
    details = sample.get("details")
    return isinstance(details, dict) and details.get("accelerated") is False


def stand_in(sample: dict[str, Any]) -> bool:
    """A sample measured through the lab's declared stand-in router (details.standin)."""
    details = sample.get("details")
    return isinstance(details, dict) and bool(details.get("standin"))


def exit_code(doc: dict[str, Any]) -> int:
    """0 when every test passed; 1 when any failed, a FreeFlow test was not accelerated,
    or nothing ran because of host errors.

    A declared stand-in router is not expected to accelerate: its rows are flagged
    "not accelerated" in every report, but they do not fail the run (the demo lab has
    no real FreeFlow unless it was given the source)."""
    tests = doc.get("tests", [])
    if any(t["status"] != "ok" for t in tests):
        return 1
    if any(not_accelerated(t) and not stand_in(t) for t in tests):
        return 1
    if not tests and doc.get("errors"):
        return 1
    return 0
