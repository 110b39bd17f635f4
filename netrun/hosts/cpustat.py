"""Per-core CPU time around a measurement: /proc/stat and /proc/softirqs, before and after.

A tool's own process CPU (iperf3's ``cpu_utilization_percent``) misses the work an overlay
puts elsewhere: VXLAN encapsulation and the receive path run in softirq context, often on
another core. The kernel's per-core counters see all of it, whoever caused it. ``SNIPPET``
is one shell line to ride on a command netrun sends anyway (no round trip of its own);
``parse`` reads its output and ``usage`` turns two readings into per-core shares.

Counters are in USER_HZ ticks (``getconf CLK_TCK``, 100 on Linux). Hosts that share a kernel
(the emulated lab's namespaces) share its cores: their readings are the machine's, not one
end's (the caller knows by boot id and says so).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from netrun.core.metrics import Metric

#: The awk program reading /proc/stat's cpu lines, the NET_RX/NET_TX softirq counts per
#: CPU and the boot id, in one process (a host under load paid about 3 ms a process).
#: USER_HZ, the unit of /proc/stat, is 100 on every architecture Linux runs a network
#: benchmark on; a reading may still say another (``clk_tck N``), as older ones did.
AWK = (
    'FILENAME == "/proc/stat" && /^cpu/ { print } '
    "FILENAME ~ /softirqs$/ && /^ *(CPU|NET_RX|NET_TX)/ { print } "
    'FILENAME ~ /boot_id$/ { print "boot " $0 }'
)
FILES = ("/proc/stat", "/proc/softirqs", "/proc/sys/kernel/random/boot_id")
#: The shell line: one awk over FILES.
SNIPPET = f"awk '{AWK}' {' '.join(FILES)} 2>/dev/null"
#: /proc/stat's columns after the name (proc(5)); guest time is already in user.
FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
#: What ``usage`` reports per core, as shares of that core's elapsed ticks. ``steal`` is
#: time a hypervisor gave another guest while this one wanted the core (a VM's figures
#: then move with its neighbours' load, not the network: results.flags' cpu-stolen).
SHARES = ("user", "system", "softirq", "irq", "steal", "idle")


@dataclass(frozen=True)
class Reading:
    """One snapshot: ticks per core ("cpu" is the sum), softirq counts per CPU, tick rate."""

    cores: dict[str, dict[str, int]] = field(default_factory=dict)
    softirqs: dict[str, list[int]] = field(default_factory=dict)
    hz: int = 100
    #: The kernel's boot id: two ends with the same one share a kernel and its cores.
    boot: str = ""


@dataclass(frozen=True)
class Usage:
    """What two readings show: per core, the percentage of its time in each of SHARES."""

    cores: dict[str, dict[str, float]]
    #: CPU-seconds used (not idle, not iowait, not stolen), summed over cores.
    busy_seconds: float
    #: The busiest core's busy percentage, and its name.
    busiest_pct: float
    busiest_core: str
    #: Softirq time summed over cores, in percent of one core (200 = two full cores).
    softirq_pct: float
    #: NET_RX / NET_TX softirqs raised over the interval, summed over CPUs.
    net_softirqs: dict[str, int]
    elapsed_seconds: float
    #: Time the hypervisor took, in percent of all the cores' time over the interval.
    steal_pct: float = 0.0

    def to_dict(self) -> dict[str, object]:
        return {
            "cores": self.cores, "busy_seconds": self.busy_seconds,
            "busiest_pct": self.busiest_pct, "busiest_core": self.busiest_core,
            "softirq_pct": self.softirq_pct, "net_softirqs": self.net_softirqs,
            "elapsed_seconds": self.elapsed_seconds, "steal_pct": self.steal_pct,
        }  # fmt: skip


def parse(text: str) -> Reading | None:
    """The snapshot in SNIPPET's output; None when it has no per-core line (not Linux, or
    /proc not readable): the caller records the figures as unavailable."""
    cores: dict[str, dict[str, int]] = {}
    softirqs: dict[str, list[int]] = {}
    hz = 100
    boot = ""
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        if words[0].startswith("cpu") and len(words) >= 1 + len(FIELDS):
            numbers = words[1 : 1 + len(FIELDS)]
            if all(w.isdigit() for w in numbers):
                cores[words[0]] = dict(zip(FIELDS, map(int, numbers), strict=True))
        elif words[0] in ("NET_RX:", "NET_TX:") and all(w.isdigit() for w in words[1:]):
            softirqs[words[0][:-1]] = [int(w) for w in words[1:]]
        elif words[0] == "clk_tck" and len(words) == 2 and words[1].isdigit() and int(words[1]):
            hz = int(words[1])
        elif words[0] == "boot" and len(words) == 2:
            boot = words[1]
    if not any(name != "cpu" for name in cores):
        return None
    return Reading(cores, softirqs, hz, boot)


def _busy(ticks: Mapping[str, int]) -> int:
    """Ticks this host used: stolen ones were another guest's."""
    return sum(v for k, v in ticks.items() if k not in ("idle", "iowait", "steal"))


def usage(before: Reading, after: Reading) -> Usage | None:
    """The shares over the interval between two readings; None when no core's ticks moved
    forward (a reading from another boot, or too short an interval to count)."""
    cores: dict[str, dict[str, float]] = {}
    busy_ticks = 0
    softirq_ticks = 0
    steal_ticks = 0
    elapsed: list[int] = []
    for name, new in after.cores.items():
        old = before.cores.get(name)
        if name == "cpu" or old is None:
            continue
        diff = {k: new[k] - old[k] for k in FIELDS}
        total = sum(diff.values())
        if total <= 0 or any(v < 0 for v in diff.values()):
            continue
        elapsed.append(total)
        busy_ticks += _busy(diff)
        softirq_ticks += diff["softirq"]
        steal_ticks += diff["steal"]
        shares = {k: 100 * diff[k] / total for k in ("user", "system", "softirq", "irq", "steal")}
        shares["user"] += 100 * diff["nice"] / total
        shares["idle"] = 100 * (diff["idle"] + diff["iowait"]) / total
        cores[name] = {k: round(v, 2) for k, v in shares.items()}
    if not cores:
        return None
    hz = after.hz or 100
    busiest = max(cores, key=lambda c: 100 - cores[c]["idle"])
    net = {
        kind: sum(after.softirqs[kind]) - sum(before.softirqs.get(kind, after.softirqs[kind]))
        for kind in after.softirqs
    }
    seconds = max(elapsed) / hz
    return Usage(
        cores=cores,
        busy_seconds=busy_ticks / hz,
        busiest_pct=round(100 - cores[busiest]["idle"], 2),
        busiest_core=busiest,
        softirq_pct=round(100 * softirq_ticks / max(elapsed), 2),
        net_softirqs=net,
        elapsed_seconds=seconds,
        steal_pct=round(100 * steal_ticks / sum(elapsed), 2),
    )


def seconds_per_gbit(used: Usage, payload_bytes: float | None) -> float | None:
    """CPU-seconds (all cores) per gigabit of payload moved; None without bytes."""
    if not payload_bytes or payload_bytes <= 0:
        return None
    return used.busy_seconds / (payload_bytes * 8 / 1e9)


ENDS = ("client", "server")
# fmt: off
#: The per-end CPU metrics a tool declares when its mode reads the counters around a
#: sample (no default tolerance: a host's CPU counts whatever else it ran).
CPU_METRICS: tuple[Metric, ...] = tuple(
    metric
    for end in ENDS
    for metric in (
        Metric(f"cpu_s_per_gbit_{end}", "s/Gbit", "lower", f"CPU-seconds the {end} host spent "
               "per transferred gigabit, summed over its cores (every process, softirq too)",
               digits=3),
        Metric(f"busiest_core_pct_{end}", "%", "lower", f"the {end} host's busiest core's busy "
               "share over the test (100: saturated, whatever ran there)", digits=1),
        Metric(f"softirq_pct_{end}", "%", "lower", f"softirq time on the {end} host, in percent "
               "of one core (encapsulation and the receive path run there)", digits=1),
    )
)
# fmt: on


def metrics_of(
    ends: Mapping[str, Mapping[str, object]], payload_bytes: float | None
) -> tuple[dict[str, float | None], dict[str, str], bool]:
    """The CPU metrics from each end's counter record (netrun.hosts.counters.record's
    ``cpu``), why any is null, and whether both ends share one kernel (same boot id: their
    cores are the machine's, not one end's)."""
    values: dict[str, float | None] = {m.name: None for m in CPU_METRICS}
    why: dict[str, str] = {}
    boots = []
    for end in ENDS:
        entry = ends.get(end) or {}
        found = entry.get("cpu")
        names = [m.name for m in CPU_METRICS if m.name.endswith(f"_{end}")]
        if not isinstance(found, Mapping):
            reason = entry.get("cpu_unavailable")
            said = f"the {end} host's {reason}" if reason else ""
            why |= {n: said or f"no per-core CPU reading on the {end} host" for n in names}
            continue
        boots.append(found.get("boot"))
        busy = found.get("busy_seconds")
        gbit = payload_bytes * 8 / 1e9 if payload_bytes else None
        values[f"cpu_s_per_gbit_{end}"] = (
            float(busy) / gbit if isinstance(busy, int | float) and gbit else None
        )
        if values[f"cpu_s_per_gbit_{end}"] is None:
            why[f"cpu_s_per_gbit_{end}"] = "the test moved no bytes"
        for key, name in (("busiest_pct", "busiest_core_pct"), ("softirq_pct", "softirq_pct")):
            value = found.get(key)
            values[f"{name}_{end}"] = float(value) if isinstance(value, int | float) else None
    shared = len(boots) == 2 and bool(boots[0]) and boots[0] == boots[1]
    return values, why, shared
