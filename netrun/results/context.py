"""A host's context: what on the host shapes a figure beside the network, and what changed.

Two runs of one test on one link can differ because the host changed: a new kernel, another
NIC firmware, GRO switched off, a smaller ``tcp_rmem``, another congestion control, another
iperf3. netrun reads each host's context once per run (netrun.tools.context, riding on the
host's probe) and keeps it in results.json under ``hosts.<name>.context``:

    {"kernel": "6.1.0-26-amd64", "cpu_model": "...", "nic_driver": "ixgbe", ...,
     "offloads": {"generic-receive-offload": "on", ...}, "rings": {"rx": "512", ...},
     "sysctl": {"net.ipv4.tcp_congestion_control": "cubic", ...},
     "tools": {"iperf3": "3.12", ...},
     "unavailable": {"cpu_governor": "no cpufreq on this host (...)", ...}}

A field the host could not tell is None with its reason in ``unavailable``, never a guess.
``flat`` turns a context into label -> text (the history keeps those rows), and ``changes``
compares two runs' contexts host by host: a field only one side read (an older netrun read
fewer) is not a change, an old run with no context at all compares as nothing changed; a
whole group one run could not read (no ethtool then, ethtool now) is one change.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: The scalar fields, in the order they are shown, with their labels.
FIELDS: dict[str, str] = {
    "kernel": "kernel",
    "kernel_version": "kernel build",
    "cpu_model": "CPU",
    "cpus": "CPUs",
    "cpu_governor": "CPU governor",
    "nic": "data NIC",
    "nic_driver": "NIC driver",
    "nic_driver_version": "NIC driver version",
    "nic_firmware": "NIC firmware",
    "nic_bus": "NIC bus",
    "qdisc": "qdisc",
}
#: The mapping fields: name -> the label's prefix for each entry ("" for sysctls).
GROUPS: dict[str, str] = {"sysctl": "", "offloads": "offload ", "rings": "ring ", "tools": ""}
UNAVAILABLE = "unavailable"
#: How many changes a verdict names before "and N more".
SHOWN = 4
#: A change another note already names, as (label, before, after): a verdict's iperf3
#: release note names ("iperf3 version", "3.12", "3.16") of its hosts' contexts.
Told = tuple[str, str, str]


@dataclass(frozen=True)
class Change:
    """One field of one host that differs between two runs (``before`` is run A's)."""

    host: str
    label: str
    before: str
    after: str

    def __str__(self) -> str:
        return f"{self.host}: {self.label} {self.before} -> {self.after}"


def of_doc(doc: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """host -> context of a results document; hosts without one (older runs) are left out."""
    hosts = doc.get("hosts")
    out: dict[str, dict[str, Any]] = {}
    for name, facts in (hosts if isinstance(hosts, Mapping) else {}).items():
        found = facts.get("context") if isinstance(facts, Mapping) else None
        if isinstance(found, dict):
            out[str(name)] = found
    return out


def _label(group: str, key: str) -> str:
    if group == "tools":
        return version_label(key)
    return GROUPS[group] + key


def version_label(tool: str) -> str:
    """The label of a tool's version in a context ("iperf3 version")."""
    return f"{tool} version"


def flat(context: Mapping[str, Any]) -> dict[str, str]:
    """label -> text of every field: "kernel" -> "6.1.0-26-amd64", "offload tso" -> "on",
    "net.ipv4.tcp_rmem" -> "4096 131072 6291456", "iperf3 version" -> "3.12"; a field the
    host could not tell is "unavailable (REASON)"."""
    why = context.get(UNAVAILABLE)
    why = why if isinstance(why, Mapping) else {}
    out: dict[str, str] = {}
    for key, label in FIELDS.items():
        value = context.get(key)
        if value is not None:
            out[label] = str(value)
        elif key in why:
            out[label] = f"{UNAVAILABLE} ({why[key]})"
    for group in GROUPS:
        entries = context.get(group)
        if isinstance(entries, Mapping):
            for key, value in entries.items():
                if value is not None:
                    out[_label(group, str(key))] = str(value)
                elif key in why:  # one entry the host could not tell (a sysctl it lacks)
                    out[_label(group, str(key))] = f"{UNAVAILABLE} ({why[key]})"
        elif group in why:  # the whole group: no ethtool, an iface without ring settings
            out[group] = f"{UNAVAILABLE} ({why[group]})"
    return out


def changes(
    before: Mapping[str, Any], after: Mapping[str, Any], hosts: Sequence[str] | None = None
) -> list[Change]:
    """What differs between two runs' host contexts (``before`` is the earlier run or A),
    host by host, over ``hosts`` (default: every host both runs read)."""
    old, new = of_doc(before), of_doc(after)
    names = hosts if hosts is not None else sorted(h for h in new if h in old)
    out: list[Change] = []
    for host in dict.fromkeys(names):
        if host not in old or host not in new:
            continue
        a, b = flat(old[host]), flat(new[host])
        out += [Change(host, k, a[k], b[k]) for k in b if k in a and a[k] != b[k]]
        for group in GROUPS:  # a group one run could not read at all (ethtool installed)
            read = [isinstance(c.get(group), Mapping) for c in (old[host], new[host])]
            if read[0] != read[1] and (group in a or group in b):
                out.append(Change(host, group, a.get(group, "read"), b.get(group, "read")))
    return out


def summary(found: Sequence[Change], shown: int = SHOWN) -> str:
    """ "alpha: kernel 6.1.0-26 -> 6.1.0-27; beta: ... (and 3 more)", or "" for none."""
    if not found:
        return ""
    more = f" (and {len(found) - shown} more)" if len(found) > shown else ""
    return "; ".join(str(c) for c in found[:shown]) + more


def hosts_of_test(doc: Mapping[str, Any], test: str) -> list[str]:
    """The hosts a test of ``doc`` ran on, by role (server, client, a relay...)."""
    for sample in doc.get("tests") or ():
        if isinstance(sample, Mapping) and sample.get("name") == test:
            roles = sample.get("hosts")
            if isinstance(roles, Mapping) and roles:
                return [str(h) for h in roles.values()]
            return [str(sample[k]) for k in ("server", "client") if sample.get(k)]
    return []


def untold(found: Sequence[Change], told: Collection[Told]) -> list[Change]:
    """``found`` less the changes another note names already (the same field, from the
    same value to the same value): said once, where it is said best."""
    return [c for c in found if (c.label, c.before, c.after) not in told]


def verdict_note(
    current: Mapping[str, Any], baseline: Mapping[str, Any], test: str, told: Collection[Told] = ()
) -> str:
    """What a verdict on ``test`` adds: "; context changed: alpha: kernel X -> Y", else "";
    the changes in ``told`` (the verdict names them already) left out."""
    found = untold(changes(baseline, current, hosts_of_test(current, test)), told)
    return f"; context changed: {summary(found)}" if found else ""


def records(found: Sequence[Change]) -> list[dict[str, str]]:
    """Changes as results.json keeps them (``baseline.context_changes``)."""
    return [{"host": c.host, "field": c.label, "before": c.before, "after": c.after} for c in found]


def baseline_lines(
    doc: Mapping[str, Any], shown: int = 10, told: Mapping[str, Collection[Told]] | None = None
) -> list[str]:
    """The report lines under a baseline comparison: one per test whose hosts' context
    changed since the baseline, "tcp: regressed; alpha: kernel 6.1.0-26 -> 6.1.0-27";
    ``told``: test -> the changes another line names already for it (left out here)."""
    base = doc.get("baseline")
    if not isinstance(base, Mapping):
        return []
    stored = base.get("context_changes")
    if not isinstance(stored, list) or not stored:
        return []
    found = [
        Change(str(r.get("host")), str(r.get("field")), str(r.get("before")), str(r.get("after")))
        for r in stored
        if isinstance(r, Mapping)
    ]
    lines = []
    for verdict in base.get("verdicts") or ():
        if not isinstance(verdict, Mapping) or verdict.get("verdict") == "new":
            continue
        hosts = hosts_of_test(doc, str(verdict.get("test")))
        mine = [c for h in dict.fromkeys(hosts) for c in found if c.host == h]
        mine = untold(mine, (told or {}).get(str(verdict.get("test")), ()))
        if mine:
            lines.append(f"{verdict.get('test')}: {verdict.get('verdict')}; {summary(mine)}")
    more = len(lines) - shown
    return lines[:shown] + ([f"and {more} more tests whose hosts changed"] if more > 0 else [])


def diff_lines(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """What ``netrun diff A B`` says of the hosts: each context field that changed from A
    to B, or why nothing can be said (a run from before netrun read the context)."""
    old, new = of_doc(a), of_doc(b)
    if not old or not new:
        which = " and ".join(n for n, found in (("A", old), ("B", new)) if not found)
        return [f"host context: not recorded in {which} (a run from before netrun read it)"]
    found = changes(a, b)
    if not found:
        both = sorted(h for h in new if h in old)
        return [f"host context: unchanged on {', '.join(both)}" if both else "host context: "
                "no host in both runs"]  # fmt: skip
    return ["host context changed (A -> B):", *(f"  {c}" for c in found)]


def rows(doc: Mapping[str, Any]) -> list[list[str]]:
    """The environment table: one row per host (host, kernel, CPU, NIC driver and firmware,
    qdisc, congestion control, tool versions), "-" where a run read no context."""
    out = []
    for host, context in sorted(of_doc(doc).items()):
        shown = {
            k: UNAVAILABLE if v.startswith(UNAVAILABLE) else v for k, v in flat(context).items()
        }
        sysctl = context.get("sysctl") if isinstance(context.get("sysctl"), Mapping) else {}
        tools = context.get("tools") if isinstance(context.get("tools"), Mapping) else {}
        driver = " ".join(
            x for x in (context.get("nic_driver"), context.get("nic_driver_version")) if x
        )
        out.append(
            [
                host,
                shown.get("kernel", "-"),
                shown.get("CPU", "-"),
                f"{context.get('nic')}: {driver}" if context.get("nic") and driver else driver,
                shown.get("NIC firmware", "-"),
                shown.get("qdisc", "-"),
                str((sysctl or {}).get("net.ipv4.tcp_congestion_control") or "-"),
                ", ".join(f"{t} {v}" for t, v in (tools or {}).items() if v) or "-",
            ]
        )
    return [[cell or "-" for cell in row] for row in out]


ROW_HEADERS = ["host", "kernel", "CPU", "NIC driver", "NIC firmware", "qdisc", "TCP CC", "tools"]
