"""A fan-in's (or fan-out's) figures across its repeats: the aggregate, each flow's share.

A test of several flows (``pairs: {fanin: HOST}``) keeps each repeat's flows in its
sample's ``details.flows`` (netrun.run.flows). Reports and the fan-in plot read them
through here, from results.json alone: the median aggregate and fairness of the passing
repeats, each flow's mean receiver rate and its share of the flows' summed means, and the
bottleneck host's line rate and goodput ceiling the aggregate is held against. A flow's
figure is a mean, not a median: where flows share a queue unfairly, which flow takes the
link changes from repeat to repeat, and the flows' medians (9, 11 and 26 Mbit/s of a
188 Mbit/s incast on the lab) then add up to a quarter of the aggregate; their means add
up to the mean aggregate, so the shares sum to 100% and the stacked bar is the sum.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from netrun.core.numeric import finite


@dataclass(frozen=True)
class Share:
    """One flow over the repeats: its mean receiver rate and share of the flows' sum."""

    client: str
    server: str
    mbps: float | None
    pct_of_aggregate: float | None
    raw: tuple[str, ...] = ()  # each repeat's raw iperf3 output (its proof)

    @property
    def label(self) -> str:
        return f"{self.client}→{self.server}"


@dataclass(frozen=True)
class FanIn:
    """One test of several flows: what its host took in (sent), and how evenly."""

    test: str
    mode: str
    kind: str  # fanin | fanout
    host: str
    protocol: str
    repeats: int
    aggregate_mbps: float | None
    fairness: float | None
    line_rate_mbps: float | None
    ceiling_mbps: float | None
    shares: tuple[Share, ...] = field(default_factory=tuple)

    @property
    def pct_of_ceiling(self) -> float | None:
        if self.aggregate_mbps is None or not self.ceiling_mbps:
            return None
        return 100 * self.aggregate_mbps / self.ceiling_mbps

    def to_dict(self) -> dict[str, Any]:
        return {
            "test": self.test,
            "mode": self.mode,
            "kind": self.kind,
            "host": self.host,
            "protocol": self.protocol,
            "repeats": self.repeats,
            "aggregate_mbps": self.aggregate_mbps,
            "fairness_jain": self.fairness,
            "line_rate_mbps": self.line_rate_mbps,
            "goodput_ceiling_mbps": self.ceiling_mbps,
            "pct_of_ceiling": self.pct_of_ceiling,
            "flows": [
                {"client": s.client, "server": s.server, "mbps": s.mbps,
                 "pct_of_aggregate": s.pct_of_aggregate, "raw": list(s.raw)}
                for s in self.shares
            ],
        }  # fmt: skip


def flow_pairs(sample: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """Each flow's (client, server) of a sample, in the order it ran them: a fan's flows
    (``flows``), else the sample's own pair."""
    flows = sample.get("flows")
    found = tuple(
        (str(f[0]), str(f[1]))
        for f in (flows if isinstance(flows, list) else [])
        if isinstance(f, list | tuple) and len(f) == 2
    )
    return found or ((str(sample.get("client")), str(sample.get("server"))),)


def ends(sample: Mapping[str, Any]) -> tuple[str, str]:
    """(clients, servers) naming every flow's end, each host once: ("alpha,bravo,charlie",
    "delta") for a 3-client fan-in, never its first flow's ("alpha", "delta")."""
    pairs = flow_pairs(sample)
    clients = dict.fromkeys(c for c, _ in pairs)
    servers = dict.fromkeys(s for _, s in pairs)
    return ",".join(clients), ",".join(servers)


def pair_label(sample: Mapping[str, Any]) -> str:
    """client→server naming every flow: "alpha,bravo,charlie→delta" for a fan-in,
    "delta→alpha,bravo" for a fan-out; flows sharing no end are listed one by one."""
    clients, servers = ends(sample)
    if "," in clients and "," in servers:
        return ", ".join(f"{c}→{s}" for c, s in flow_pairs(sample))
    return f"{clients}→{servers}"


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _flows(sample: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    details = sample.get("details")
    found = details.get("flows") if isinstance(details, Mapping) else None
    return [f for f in found if isinstance(f, Mapping)] if isinstance(found, list) else []


def fanins(doc: Mapping[str, Any]) -> list[FanIn]:
    """Each test of several flows in the run, in scenario order (none: an empty list)."""
    by_test: dict[str, list[Mapping[str, Any]]] = {}
    for sample in doc.get("tests") or []:
        if isinstance(sample, Mapping) and isinstance(sample.get("flows"), list):
            by_test.setdefault(str(sample.get("name")), []).append(sample)
    return [_fanin(name, samples) for name, samples in by_test.items()]


def _fanin(name: str, samples: list[Mapping[str, Any]]) -> FanIn:
    ok = [s for s in samples if s.get("status") == "ok"]
    first = samples[0]
    ends = [f for f in first.get("flows") or [] if isinstance(f, list) and len(f) == 2]
    metrics: list[Mapping[str, Any]] = [
        m if isinstance(m := s.get("metrics"), Mapping) else {} for s in ok
    ]
    aggregate = [v / 1e6 for m in metrics if (v := finite(m.get("aggregate_bps"))) is not None]
    fair = [v for m in metrics if (v := finite(m.get("fairness_jain"))) is not None]
    per: dict[tuple[str, str], list[float]] = {}
    raws: dict[tuple[str, str], list[str]] = {}
    for sample in ok:
        for flow in _flows(sample):
            key = (str(flow.get("client")), str(flow.get("server")))
            if (bps := finite(flow.get("throughput_bps"))) is not None:
                per.setdefault(key, []).append(bps / 1e6)
            if isinstance(flow.get("raw"), str):
                raws.setdefault(key, []).append(flow["raw"])
    total = _median(aggregate)
    means = {k: statistics.fmean(v) for k, v in per.items() if v}
    summed = sum(means.values())
    shares = []
    for client, server in ends:
        key = (str(client), str(server))
        mbps = means.get(key)
        pct = 100 * mbps / summed if mbps is not None and summed else None
        shares.append(Share(key[0], key[1], mbps, pct, tuple(raws.get(key, []))))
    details = first.get("details") if isinstance(first.get("details"), Mapping) else {}
    fan = details.get("fan") if isinstance(details, Mapping) else None
    fan = fan if isinstance(fan, Mapping) else {}
    clients = {c for c, _ in ends}
    kind = str(fan.get("kind") or ("fanout" if len(clients) == 1 else "fanin"))
    host = str(
        fan.get("host") or (first.get("client") if kind == "fanout" else first.get("server"))
    )
    ceilings = [v for s in ok if (v := finite(s.get("goodput_ceiling_mbps"))) is not None]
    return FanIn(
        test=name,
        mode=str(first.get("mode")),
        kind=kind,
        host=host,
        protocol=str(first.get("protocol")),
        repeats=len(ok),
        aggregate_mbps=total,
        fairness=_median(fair),
        line_rate_mbps=finite(first.get("line_rate_mbps")),
        ceiling_mbps=_median(ceilings),
        shares=tuple(shares),
    )


# -- a sweep of the fan's width (``sweep: {clients: [1, 2, 3]}``) ---------------------------
#: A fan test's name: its entry, the pair label (``3->delta`` or ``delta->3``), any suffix.
_LABEL = re.compile(r"^(?P<base>.*)\[(?P<a>[^\[\]]+)->(?P<b>[^\[\]]+)\](?P<rest>.*)$")


@dataclass(frozen=True)
class FanSweep:
    """One fan test run at several widths: each count's FanIn, fewest clients first."""

    name: str  # the tests' common name, the count written N: ``incast[N->delta]``
    kind: str
    host: str
    mode: str
    protocol: str
    points: tuple[tuple[int, FanIn], ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "host": self.host,
            "mode": self.mode,
            "protocol": self.protocol,
            "by_clients": [
                {"clients": n, "test": f.test, "aggregate_mbps": f.aggregate_mbps,
                 "fairness_jain": f.fairness, "goodput_ceiling_mbps": f.ceiling_mbps,
                 "pct_of_ceiling": f.pct_of_ceiling, "repeats": f.repeats}
                for n, f in self.points
            ],
        }  # fmt: skip


def _count_name(found: FanIn) -> str | None:
    """The test's name with its count written N; None when the name has no fan label."""
    match = _LABEL.match(found.test)
    if match is None:
        return None
    a, b = match["a"], match["b"]
    if found.kind == "fanin" and a.isdigit() and b == found.host:
        label = f"N->{b}"
    elif found.kind == "fanout" and b.isdigit() and a == found.host:
        label = f"{a}->N"
    else:
        return None
    return f"{match['base']}[{label}]{match['rest']}"


def sweeps(doc: Mapping[str, Any]) -> list[FanSweep]:
    """Each fan test the run measured at two or more widths (its other keys alike)."""
    groups: dict[tuple[str, str, str, str], list[FanIn]] = {}
    for found in fanins(doc):
        name = _count_name(found)
        if name is not None:
            groups.setdefault((name, found.kind, found.mode, found.protocol), []).append(found)
    out = []
    for (name, kind, mode, protocol), widths in groups.items():
        points = {len(f.shares): f for f in widths}
        if len(points) >= 2:
            ordered = tuple(sorted(points.items(), key=lambda point: point[0]))
            out.append(FanSweep(name, kind, ordered[0][1].host, mode, protocol, ordered))
    return out
