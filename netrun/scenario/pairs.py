"""Generated pairs: ``hosts: PATTERN`` with ``pairs: mesh | mesh-once | ring | star | between``,
or one test of many flows at once: ``{fanin: HOST}``, ``{fanout: HOST}``.

A nightly mesh of 16 nodes is 240 tests; nobody should write them by hand. A test that gives
``hosts`` (an Ansible host pattern, as ``-l`` takes) and ``pairs`` expands here into one
test per (client, server) pair, named ``NAME[client->server]``. Each pair also gets its
``slot``: the round of a round-robin tournament (the circle method) it belongs to, so the
round planner (netrun.run.rounds) can run an N-host mesh-once in N-1 rounds (N even) or N (odd).

``hosts`` and ``pairs`` layer like any key: defaults < test < ``-e`` (netrun.scenario.
generated, which also narrows a test's pairs by ``-e server=HOST`` and ``-e client=HOST``).

``fanin`` and ``fanout`` do not expand: they make one test, ``NAME[3->delta]``, whose
flows (every other host of ``hosts`` into HOST, or HOST into each) run at the same time
(netrun.run.flows), so its hosts are held together. How many of the other hosts a fan
takes (``clients: N``) is netrun.scenario.fanwidth's.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from netrun.core.spec import Flow
from netrun.errors import InputError

KINDS = ("mesh", "mesh-once", "ring", "star", "between", "fanin", "fanout")
#: The kinds that make one test of several flows at once, not one test per pair.
FLOW_KINDS = ("fanin", "fanout")
#: Roles one host plays for every flow of a fan test (mode turn's relay: one coturn,
#: allowed to reach every flow's server); a mode with another extra role is refused.
SHARED_ROLES = ("relay",)
#: Test keys of a generated test (instead of the server and client roles).
KEYS = ("hosts", "pairs")
#: Most tests one generated entry may expand into (a 64-node ordered mesh is 4032).
MAX_PAIRS = 5000

Select = Callable[[str], list[str]]


@dataclass(frozen=True)
class Pair:
    """One generated (client, server) pair and its tournament round."""

    client: str
    server: str
    slot: int
    #: A fan-in or fan-out's flows, all in this one test (client and server: the first's).
    flows: tuple[Flow, ...] = ()
    kind: str = ""

    @property
    def label(self) -> str:
        if self.kind == "fanin":
            return f"{len(self.flows)}->{self.server}"
        if self.kind == "fanout":
            return f"{self.client}->{len(self.flows)}"
        return f"{self.client}->{self.server}"


@dataclass(frozen=True)
class PairSpec:
    """A checked ``pairs:`` value: its kind and the host patterns it names (star, between)."""

    kind: str
    star: str | None = None  # also fanin's and fanout's host
    between: tuple[str, str] | None = None


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def parse(raw: Any) -> PairSpec | str:
    """``pairs:`` as written; a string is the one-line problem."""
    usage = (
        "use mesh, mesh-once, ring, {star: HOST}, {between: [GROUP_A, GROUP_B]},"
        " {fanin: HOST} or {fanout: HOST}"
    )
    if isinstance(raw, str) and raw in ("mesh", "mesh-once", "ring"):
        return PairSpec(raw)
    if raw in ("star", "between", *FLOW_KINDS):
        return f"pairs: {raw} needs its hosts: {usage}"
    if isinstance(raw, dict) and len(raw) == 1:
        ((key, value),) = raw.items()
        if key in ("star", *FLOW_KINDS):
            if isinstance(value, str) and value:
                return PairSpec(str(key), star=value)
            return f"pairs: {key} must name one host, got {_show(value)}"
        if key == "between":
            ok = isinstance(value, list) and len(value) == 2
            if ok and all(isinstance(v, str) and v for v in value):
                return PairSpec("between", between=(value[0], value[1]))
            return f"pairs: between must be a list of two host patterns, got {_show(value)}"
    return f"pairs: {_show(raw)} is not a kind of pairs; {usage}"


def generate(pattern: str, spec: PairSpec, select: Select) -> list[Pair] | str:
    """The pairs of ``spec`` over the hosts ``pattern`` selects (inventory order), in
    scenario order (client by client); a string is the one-line problem.

    ``select`` resolves a host pattern to host names and raises InputError (with the
    reason) when it matches nothing.
    """

    try:
        hosts = select(pattern)
    except InputError as exc:
        return f"hosts: {exc}"
    if spec.kind == "between":
        assert spec.between is not None
        sides: list[list[str]] = []
        for side in spec.between:
            try:
                found = select(side)
            except InputError as exc:
                return f"pairs: between: {exc}"
            chosen = [h for h in found if h in hosts]
            if not chosen:
                return (
                    f"pairs: between: {side!r} has no host within hosts {pattern!r}"
                    f" (it names {', '.join(found[:5])})"
                )
            sides.append(chosen)
        pairs = between(sides[0], sides[1])
    elif spec.kind in ("star", *FLOW_KINDS):
        centre = _centre(spec, pattern, hosts, select)
        if centre.startswith("pairs: "):  # the problem
            return centre
        pairs = star(hosts, centre) if spec.kind == "star" else fan(hosts, centre, spec.kind)
    else:
        pairs = {"mesh": mesh, "mesh-once": mesh_once, "ring": ring}[spec.kind](hosts)
    if not pairs:
        return (
            f"hosts {pattern!r} selects {len(hosts)} host(s) ({', '.join(hosts)}):"
            f" pairs: {spec.kind} needs at least two"
        )
    if len(pairs) > MAX_PAIRS:
        return (
            f"pairs: {spec.kind} of {len(hosts)} hosts is {len(pairs)} tests (at most {MAX_PAIRS})"
        )
    return pairs


def _centre(spec: PairSpec, pattern: str, hosts: list[str], select: Select) -> str:
    """The one host of ``hosts`` a star, fanin or fanout names; or the problem, which
    starts with "pairs: "."""
    assert spec.star is not None
    if spec.star in hosts:
        return spec.star
    try:
        found = select(spec.star)
    except InputError as exc:
        return f"pairs: {spec.kind}: {exc}"
    inside = [h for h in found if h in hosts]
    if len(inside) != 1:
        why = "is not" if not inside else f"names {len(inside)} hosts"
        return (
            f"pairs: {spec.kind} host {spec.star!r} {why} within hosts {pattern!r}"
            f" ({', '.join(hosts[:8])}{', ...' if len(hosts) > 8 else ''});"
            " name one host of the pattern"
        )
    return inside[0]


def fan(hosts: Sequence[str], centre: str, kind: str) -> list[Pair]:
    """One test of every other host into ``centre`` at once (fanin), or ``centre`` into each
    (fanout); none when there is no other host."""
    others = [h for h in hosts if h != centre]
    if not others:
        return []
    if kind == "fanin":
        flows = tuple(Flow(h, centre) for h in others)
    else:
        flows = tuple(Flow(centre, h) for h in others)
    return [Pair(flows[0].client, flows[0].server, 0, flows=flows, kind=kind)]


# -- the tournament ------------------------------------------------------------------------
def circle_rounds(hosts: Sequence[str]) -> dict[frozenset[str], tuple[int, bool]]:
    """Round-robin tournament by the circle method: each unordered pair's round, and
    whether the first host listed plays "home" (for ordered meshes, the reverse leg is
    the same round plus N-1).

    N hosts (N even) play N-1 rounds of N/2 disjoint pairs; with N odd a phantom joins
    and whoever meets it sits out, N rounds.
    """
    ring_: list[str | None] = list(hosts)
    if len(ring_) % 2:
        ring_.append(None)
    n = len(ring_)
    out: dict[frozenset[str], tuple[int, bool]] = {}
    order = {h: i for i, h in enumerate(hosts)}
    for rnd in range(n - 1):
        for i in range(n // 2):
            a, b = ring_[i], ring_[n - 1 - i]
            if a is not None and b is not None:
                out[frozenset((a, b))] = (rnd, order[a] < order[b])
        ring_ = [ring_[0], ring_[-1], *ring_[1:-1]]  # fix the first, rotate the rest
    return out


def mesh_once(hosts: Sequence[str]) -> list[Pair]:
    """Every unordered pair once: the earlier host (inventory order) is the client."""
    rounds = circle_rounds(hosts)
    return [
        Pair(a, b, rounds[frozenset((a, b))][0])
        for i, a in enumerate(hosts)
        for b in hosts[i + 1 :]
    ]


def mesh(hosts: Sequence[str]) -> list[Pair]:
    """Every ordered pair: each unordered pair's two legs are N-1 rounds apart."""
    rounds = circle_rounds(hosts)
    legs = len(hosts) - 1 + len(hosts) % 2
    out = []
    for a in hosts:
        for b in hosts:
            if a != b:
                rnd, first_home = rounds[frozenset((a, b))]
                home = (hosts.index(a) < hosts.index(b)) == first_home
                out.append(Pair(a, b, rnd if home else rnd + legs))
    return out


def ring(hosts: Sequence[str]) -> list[Pair]:
    """Each host to the next, the last to the first: 2 rounds (N even) or 3 (N odd)."""
    n = len(hosts)
    if n < 2:
        return []
    if n == 2:
        return [Pair(hosts[0], hosts[1], 0)]
    slot = [i % 2 for i in range(n)]
    if n % 2:
        slot[-1] = 2
    return [Pair(hosts[i], hosts[(i + 1) % n], slot[i]) for i in range(n)]


def star(hosts: Sequence[str], centre: str) -> list[Pair]:
    """Every other host as client against ``centre``: one pair per round."""
    others = [h for h in hosts if h != centre]
    return [Pair(h, centre, i) for i, h in enumerate(others)]


def between(clients: Sequence[str], servers: Sequence[str]) -> list[Pair]:
    """Every host of the first side against every host of the second (a host on both sides
    is not paired with itself); a latin square puts them in max(|A|, |B|) rounds."""
    width = max(len(clients), len(servers))
    return [
        Pair(c, s, (i + j) % width)
        for i, c in enumerate(clients)
        for j, s in enumerate(servers)
        if c != s
    ]


# -- the scenario's side -------------------------------------------------------------------
USAGE = "a test gives either server and client, or hosts: PATTERN with pairs: KIND"


def flow_problem(
    pair: Pair, tool: str, fan: bool, roles: Mapping[str, str], relays: Sequence[str] = ()
) -> str | None:
    """Why a fanin/fanout cannot run with this tool or mode, if it cannot: ``fan``, whether
    the tool sums its flows (netrun.tools.base.Tool.fan); ``roles``, the mode's other roles
    and their hosts, which serve every flow (turn's relay: ``relays`` names such roles)."""
    if not pair.flows:
        return None
    others = [r for r in roles if r not in relays]
    if others:
        return (
            f"pairs: {pair.kind} runs its flows between two roles, server and client;"
            f" this mode also needs {', '.join(others)}: use pairs: star instead"
        )
    if not fan:
        return (
            f"pairs: {pair.kind} sums each flow's receiver rate; tool {tool!r} has none:"
            " use tool: iperf3 or iperf2, or a pairs kind that runs one test per pair (star)"
        )
    ends = {h for flow in pair.flows for h in (flow.client, flow.server)}
    for role, host in roles.items():
        if host in ends:
            return (
                f"pairs: {pair.kind}: {role} host {host!r} is also a flow's host; leave it"
                f" out of hosts: (the {role} serves every flow)"
            )
    return None


def from_test(raw: dict[str, Any], select: Select) -> list[Pair] | str:
    """The pairs of one test entry with ``hosts`` and ``pairs``; a string is the problem."""
    if "hosts" not in raw or "pairs" not in raw:
        missing = "pairs" if "hosts" in raw else "hosts"
        return f"missing key {missing!r}: {USAGE}"
    pattern = raw["hosts"]
    if not isinstance(pattern, str) or not pattern.strip():
        return f"hosts must be a host pattern such as 'all' or 'rack1:&nodes', got {_show(pattern)}"
    spec = parse(raw["pairs"])
    if isinstance(spec, str):
        return spec
    return generate(pattern, spec, select)


def simple_select(hosts: Sequence[str] | Any) -> Select:
    """Pattern matching without an inventory (unit tests, --check-only of a bare host list):
    comma- or colon-separated names and globs."""
    names = list(hosts or ())

    def select(pattern: str) -> list[str]:
        found: dict[str, None] = {}
        for part in pattern.replace(":", ",").split(","):
            part = part.strip()
            matched = [h for h in names if part == "all" or fnmatch.fnmatchcase(h, part)]
            if not matched:
                raise InputError(f"host pattern '{part}' matches nothing")
            found.update(dict.fromkeys(matched))
        return list(found)

    return select
