"""A generated test among the scenario's layers: whether an entry generates pairs, its
``hosts`` and ``pairs`` after defaults < test < ``-e``, and ``-e server=``/``client=``.

``hosts`` and ``pairs`` layer like any key. ``-e server=HOST`` and ``-e client=HOST``
cannot replace a role a generated test does not have; they narrow its pairs to those with
that host on that side (``-e server=delta``: every pair into delta). What pairs a kind
makes is netrun.scenario.pairs'.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from netrun.core.options import show
from netrun.scenario.pairs import FLOW_KINDS, KEYS, Pair, parse


def kind_of(raw: dict[str, Any]) -> str:
    """The kind a (checked) test entry's ``pairs:`` names."""
    value: Any = raw.get("pairs")  # a checked entry's: a kind, or a mapping of one kind
    return value if isinstance(value, str) else str(next(iter(value)))


def is_fan(raw: Mapping[str, Any]) -> bool:
    """Whether a layered entry (entry) is a fanin or fanout."""
    spec = parse(raw.get("pairs"))
    return not isinstance(spec, str) and spec.kind in FLOW_KINDS


#: The roles a generated test's pairs stand for; ``-e`` narrows by them.
ENDS = ("server", "client")


def layer_problem(key: str, value: Any) -> str | None:
    """``hosts``/``pairs`` in ``defaults`` or ``-e``: the one-line problem, if any."""
    if key == "hosts" and not (isinstance(value, str) and value.strip()):
        return f"hosts must be a host pattern such as 'all' or 'rack1:&nodes', got {show(value)}"
    if key == "pairs":
        spec = parse(value)
        return spec if isinstance(spec, str) else None
    return None


def is_generated(
    raw: Mapping[str, Any], defaults: Mapping[str, Any], overrides: Mapping[str, Any]
) -> bool:
    """A test generates pairs when it gives hosts or pairs itself, or when it names no role
    and neither do the defaults, while the defaults or -e give hosts or pairs (a scenario
    of meshes that differ only in their options)."""
    if any(k in raw for k in KEYS):
        return True
    if any(k in raw or k in defaults for k in ENDS):
        return False
    return any(k in layer for layer in (defaults, overrides) for k in KEYS)


def entry(
    raw: Mapping[str, Any], defaults: Mapping[str, Any], overrides: Mapping[str, Any]
) -> dict[str, Any]:
    """The test's ``hosts`` and ``pairs`` after the layers: defaults < test < -e."""
    out: dict[str, Any] = {}
    for layer in (defaults, raw, overrides):
        out.update((k, layer[k]) for k in KEYS if k in layer)
    return out


def narrow(found: list[Pair], ends: Mapping[str, str], name: str) -> list[Pair] | str:
    """The pairs with each host ``ends`` names on its side (``-e server=``/``client=``);
    a string is the problem, naming the hosts that side has."""
    kept = found
    for role, host in ends.items():
        sides = list(dict.fromkeys(getattr(f, role) for p in kept for f in p.flows or (p,)))
        kept = [q for p in kept if (q := _narrowed(p, role, host)) is not None]
        if not kept:
            return (
                f"-e {role}={host}: none of the pairs {name!r} generates has {role} {host}"
                f" (its {role}s: {', '.join(sides[:8])}{', ...' if len(sides) > 8 else ''});"
                f" -e {role} narrows generated pairs to that {role}: name one of them,"
                " or use -l to narrow by hosts"
            )
    return kept


def _narrowed(pair: Pair, role: str, host: str) -> Pair | None:
    """``pair`` with only its flows that have ``host`` as ``role``; None when none has."""
    if not pair.flows:
        return pair if getattr(pair, role) == host else None
    flows = tuple(f for f in pair.flows if getattr(f, role) == host)
    if not flows:
        return None
    return Pair(flows[0].client, flows[0].server, pair.slot, flows=flows, kind=pair.kind)


NOT_GENERATED = (
    "no test of this scenario generates pairs (hosts: + pairs:); -e hosts/pairs re-target"
    " generated tests only: give the tests server and client, or -l to narrow by hosts"
)


def unused(overrides: Mapping[str, Any], specs: Sequence[Any], problems: list[str]) -> list[str]:
    """``-e hosts``/``-e pairs`` keys that no test took (no test is generated)."""
    if problems or any(getattr(t, "pairs", "") for t in specs):
        return []
    return [k for k in KEYS if k in overrides]
