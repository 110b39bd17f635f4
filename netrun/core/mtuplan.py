"""The MTU plan of a run: what MTUs each test wants, and in which order tests run so that a
sweep sets each value once for all the tests that use it.

Changing a link's MTU flaps it (and, on real NICs, resets the ring); a sweep that went
1500, 9000, 1500, 9000 across its bare-metal and container tests would do that between
every test. So tests are grouped by the MTU they want, in the order each value first
appears, and a host's MTU is restored only after the last test in a row that wants it.
Pure functions: the run's MTU changes themselves are in netrun.run.mtu.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from netrun.core.spec import TestSpec

#: What VXLAN adds to every packet (outer IPv4 20, UDP 8, VXLAN 8, inner Ethernet 14):
#: Flannel's own default is the host MTU minus this.
VXLAN_OVERHEAD = 50


@dataclass(frozen=True)
class MtuWant:
    """The MTUs one test runs at.

    ``underlay``: the data NIC of every role's host; ``overlay``: the overlay (VXLAN)
    device, None where the mode has none; ``containers``: the containers' interfaces and
    bridge, None outside container modes.
    """

    underlay: int
    overlay: int | None = None
    containers: int | None = None

    @property
    def host_key(self) -> tuple[int, int | None]:
        """What stays set on a host between tests (the containers' MTU is per test)."""
        return (self.underlay, self.overlay)

    def text(self) -> str:
        """``9000/8950`` (underlay/overlay), or ``9000`` without an overlay."""
        inner = self.overlay or self.containers
        if inner and inner != self.underlay:
            return f"{self.underlay}/{inner}"
        return str(self.underlay)


#: mode name -> (has an overlay device, runs in containers)
ModeKind = Callable[[str], tuple[bool, bool]]
T = TypeVar("T")


def wanted(test: TestSpec, kind: ModeKind) -> MtuWant | None:
    """The test's MTUs, or None when it sets none (``mtu:`` absent)."""
    mtu = test.options.get("mtu")
    if mtu is None:
        return None
    overlay_device, containers = kind(test.mode)
    given = test.options.get("overlay_mtu")
    overlay = (given or int(mtu) - VXLAN_OVERHEAD) if overlay_device else None
    inner = overlay if overlay_device else given or int(mtu)
    return MtuWant(int(mtu), overlay, inner if containers else None)


def overlay_problem(test: TestSpec, w: MtuWant | None) -> str | None:
    """Why the test's ``overlay_mtu`` cannot be set on its ``mtu:`` (VXLAN adds
    VXLAN_OVERHEAD bytes), or None: one rule for the run (netrun.run.mtu) and
    ``--check-only`` (netrun.run.preview), which refuses it before anything connects."""
    if w is None or not w.overlay or w.overlay <= w.underlay - VXLAN_OVERHEAD:
        return None
    return (
        f"test {test.name}: overlay_mtu {w.overlay} does not fit a VXLAN overlay on "
        f"MTU {w.underlay}: VXLAN adds {VXLAN_OVERHEAD} bytes, so at most "
        f"{w.underlay - VXLAN_OVERHEAD}"
    )


def order(tests: Sequence[T], wants: Sequence[MtuWant | None]) -> list[T]:
    """The tests grouped by the host MTU they want (``wants``, one per test), each group
    where its value first appears, and within it by the overlay's (tests without ``mtu:``
    form one group too); stable within a group."""
    keys = [(w.underlay, w.overlay) if w else None for w in wants]
    first: dict[object, int] = {}
    for i, key in enumerate(keys):
        first.setdefault(key[0] if key else None, i)
        first.setdefault(key, i)
    rank = [(first[k[0] if k else None], first[k]) for k in keys]
    return [t for _, t in sorted(zip(rank, tests, strict=True), key=lambda p: p[0])]


def next_wants(
    tests: Sequence[TestSpec], wants: Sequence[MtuWant | None]
) -> list[dict[str, tuple[int, int | None] | None]]:
    """For each test (in run order, ``wants`` beside them) and each of its hosts, what the
    next test on that host wants there (None: the host's own MTU, or no later test): after
    test i, a host whose next want differs from test i's is restored."""
    keys = [(w.host_key if w else None) for w in wants]
    out: list[dict[str, tuple[int, int | None] | None]] = []
    for i, test in enumerate(tests):
        nxt: dict[str, tuple[int, int | None] | None] = {}
        for host in test.hosts:
            later = (j for j in range(i + 1, len(tests)) if host in tests[j].hosts)
            j = next(later, None)
            nxt[host] = keys[j] if j is not None else None
        out.append(nxt)
    return out


def cell(mtu: object) -> str:
    """The report's MTU cell from a sample's ``details.mtu``: ``9000/8950`` (underlay/
    overlay or container), ``9000``; "" when the test set no MTU."""
    if not isinstance(mtu, dict) or not mtu.get("underlay"):
        return ""
    inner = mtu.get("overlay")
    seen = mtu.get("container")
    if isinstance(seen, dict) and seen:
        inner = min((v for v in seen.values() if v), default=inner)
    return MtuWant(int(mtu["underlay"]), inner).text()


def frame_mtu(mtu: object) -> int | None:
    """The largest packet the wire carries in a test that set ``mtu:``: the underlay's,
    or an overlay packet plus its VXLAN headers when that is smaller (what the goodput
    ceiling is computed on); None when the test set no MTU."""
    if not isinstance(mtu, dict) or not mtu.get("underlay"):
        return None
    inner = mtu.get("overlay")
    outer = int(mtu["underlay"])
    return min(outer, int(inner) + VXLAN_OVERHEAD) if inner else outer
