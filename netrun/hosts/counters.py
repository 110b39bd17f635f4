"""The kernel's drop counters of a host, read in the commands netrun sends anyway.

A UDP test that lost 17% says nothing about where: the sender's socket, a queue on the
way, or the receiver's socket buffer. The kernel counts each: ``/proc/net/snmp``
(``Udp: RcvbufErrors InErrors``, ``Tcp: RetransSegs``), the root qdisc's drops
(``tc -s qdisc``) and the NIC's (``/proc/net/dev``: the same counters as
``/sys/class/net/DEV/statistics/{rx,tx}_dropped``, and readable for another network
namespace as ``/proc/PID/net/dev``). ``script`` is a shell snippet that prints one reading
in sections; it rides on a command already sent before and after a measurement (the
iperf3 client's own, netrun.tools.iperf3.run), so reading costs no round trip. ``parse``
reads it back and ``delta`` gives what changed. The "@cpu" section is
netrun.hosts.cpustat's per-core CPU time (issue 29): an overlay's softirq work shows there,
on whichever core it ran.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from netrun.hosts import cpustat

#: Starts one reading; every section after it starts with "@name".
MARK = "==netrun:counters=="
#: The /proc/net/snmp counters kept: (table, name) -> the key in a delta.
SNMP = {
    ("Udp", "InDatagrams"): "udp_in_datagrams",
    ("Udp", "OutDatagrams"): "udp_out_datagrams",
    ("Udp", "RcvbufErrors"): "udp_rcvbuf_errors",
    ("Udp", "SndbufErrors"): "udp_sndbuf_errors",
    ("Udp", "InErrors"): "udp_in_errors",
    ("Tcp", "RetransSegs"): "tcp_retrans_segs",
}
#: /proc/net/dev columns kept (after the device name): index -> key.
DEV = {
    0: "nic_rx_bytes",
    1: "nic_rx_packets",
    3: "nic_rx_dropped",
    8: "nic_tx_bytes",
    9: "nic_tx_packets",
    11: "nic_tx_dropped",
}
KEYS = (*SNMP.values(), *DEV.values(), "qdisc_dropped")


def script(
    iface: str | None = None,
    *,
    toward: str | None = None,
    net: str = "/proc/net",
    qdisc: str | None = None,
    mark: str = MARK,
    procs: Mapping[str, str] | None = None,
) -> str:
    """sh printing one reading: the Udp/Tcp lines of ``net``/snmp, the data NIC's line of
    ``net``/dev and its root qdisc's statistics. The NIC is ``iface``, else the one the
    host routes ``toward`` (the other end's data address) through. ``net`` is
    /proc/PID/net for another network namespace (a container's, PID may be a shell
    variable such as ``$pid``); tc is left out there (it would read the host's) unless
    ``qdisc`` names the host's NIC whose root qdisc to read (the one a container's
    traffic leaves by). Never fails: what the host lacks is missing from the reading.
    ``mark`` starts it (another where MARK's form is a section marker of the output it
    rides in: netrun.modes.docker.pathbytes). ``procs``: name -> a shell word giving a
    pid (``$pid``) whose process's CPU time (/proc/PID/stat utime and stime) is read too:
    the processes a mode runs beside the tool (a container's runtime shim). Uses the
    shell variables ``nr_d``, ``nr_f`` and ``nr_x``."""

    def q(text: str) -> str:  # a path with a shell variable in it is expanded, safely
        return f'"{text}"' if "$" in text and '"' not in text else shlex.quote(text)

    if iface:
        pick = f"nr_d={q(iface)}"
    elif toward:
        pick = (
            f"nr_d=$(ip -o route get {q(toward)} 2>/dev/null"
            " | sed -n 's/.* dev \\([^ ]*\\).*/\\1/p')"
        )
    else:
        pick = "nr_d="
    snmp, dev = net + "/snmp", net + "/dev"
    # One awk reads every file (a process each cost a loaded host about 3 ms a reading):
    # each file's lines under its section, the data NIC's line of dev only.
    program = (
        f'FILENAME == S && FNR == 1 {{ print "@snmp" }} '
        "FILENAME == S && /^(Udp|Tcp):/ { print } "
        f'FILENAME == D && FNR == 1 {{ print "@dev"; print "iface " d }} '
        'FILENAME == D { n = $0; sub(/:.*/, "", n); gsub(/ /, "", n) } '
        'FILENAME == D && d != "" && n == d { print } '
        f'FILENAME == "{cpustat.FILES[0]}" && FNR == 1 {{ print "@cpu" }} '
        + cpustat.AWK
        # a process's stat: its pid, then utime and stime (fields 14 and 15 of proc(5))
        + ' FILENAME ~ /^\\/proc\\/[0-9]+\\/stat$/ { s = $0; sub(/^.*\\) /, "", s); '
        'split(s, f, " "); p = FILENAME; gsub(/[^0-9]/, "", p); '
        'print "stat " p " " f[12] " " f[13] }'
    )
    named = dict(procs or {})
    stats = [f'"/proc/{pid}/stat"' for pid in named.values()]
    files = " ".join([q(snmp), q(dev), *cpustat.FILES, *stats])
    lines = [
        f"echo {shlex.quote(mark)}",
        pick,
        # the files that exist only: mawk stops at the first it cannot open (a container
        # gone meanwhile would lose the host's CPU too)
        f'nr_f=; for nr_x in {files}; do [ ! -r "$nr_x" ] || nr_f="$nr_f $nr_x"; done',
        f'awk -v d="$nr_d" -v S={q(snmp)} -v D={q(dev)} {q(program)} $nr_f 2>/dev/null',
    ]
    if named:
        lines += ["echo @procs"] + [f'echo "pid {name} {pid}"' for name, pid in named.items()]
    if net == "/proc/net":
        lines += ["echo @qdisc", '[ -z "$nr_d" ] || tc -s qdisc show dev "$nr_d" 2>/dev/null']
    elif qdisc:
        lines += ["echo @qdisc", f"tc -s qdisc show dev {shlex.quote(qdisc)} 2>/dev/null"]
    lines.append("echo @end")
    return "; ".join(lines) + "; true"


@dataclass(frozen=True)
class Reading:
    """One reading: counter name (a key of KEYS) -> value; a missing one is absent.
    ``iface``: the data NIC it read (None: none found)."""

    values: Mapping[str, int] = field(default_factory=dict)
    iface: str | None = None
    #: Per-core CPU time at the reading (None: the host's /proc/stat was not read).
    cpu: cpustat.Reading | None = None
    #: name -> (pid, utime + stime ticks) of each process ``script`` was asked about
    procs: Mapping[str, tuple[int, int]] = field(default_factory=dict)


def parse(text: str, mark: str = MARK) -> Reading | None:
    """The last whole reading ``script`` printed in ``text``; None when there is none."""
    start = text.rfind(mark)
    if start < 0 or "@end" not in text[start:]:
        return None
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text[start + len(mark) :].splitlines():
        if line.startswith("@") and line[1:].isalpha():
            if line == "@end":
                break
            current = sections.setdefault(line[1:], [])
        elif current is not None and line.strip():
            current.append(line)
    values: dict[str, int] = {}
    values.update(_snmp(sections.get("snmp", [])))
    dev = sections.get("dev", [])
    iface = dev[0].split(maxsplit=1)[1].strip() if dev and " " in dev[0].strip() else None
    values.update(_dev(dev[1:]))
    dropped = _qdisc(sections.get("qdisc", []))
    if dropped is not None:
        values["qdisc_dropped"] = dropped
    cpu = cpustat.parse("\n".join(sections.get("cpu", [])))
    return Reading(values, iface or None, cpu, _procs(sections))


def _procs(sections: Mapping[str, list[str]]) -> dict[str, tuple[int, int]]:
    """name -> (pid, ticks) from the "pid NAME PID" and "stat PID UTIME STIME" lines."""
    ticks: dict[int, int] = {}
    for line in sections.get("cpu", []):
        words = line.split()
        if len(words) == 4 and words[0] == "stat" and all(w.isdigit() for w in words[1:]):
            ticks[int(words[1])] = int(words[2]) + int(words[3])
    out = {}
    for line in sections.get("procs", []):
        words = line.split()
        if len(words) == 3 and words[0] == "pid" and words[2].isdigit():
            pid = int(words[2])
            if pid in ticks:
                out[words[1]] = (pid, ticks[pid])
    return out


def _snmp(lines: list[str]) -> dict[str, int]:
    """/proc/net/snmp's tables: a header line of names, then one of values, per table."""
    out: dict[str, int] = {}
    heads: dict[str, list[str]] = {}
    for line in lines:
        table, _, rest = line.partition(":")
        words = rest.split()
        if table not in heads:
            heads[table] = words
            continue
        for name, value in zip(heads.pop(table), words, strict=False):
            key = SNMP.get((table, name))
            if key and value.lstrip("-").isdigit():
                out[key] = int(value)
    return out


def _dev(lines: list[str]) -> dict[str, int]:
    for line in lines[:1]:
        fields = line.partition(":")[2].split()
        if len(fields) >= 16 and all(f.isdigit() for f in fields[:16]):
            return {key: int(fields[i]) for i, key in DEV.items()}
    return {}


def _qdisc(lines: list[str]) -> int | None:
    """The root qdisc's drops (a classful root counts its children's too)."""
    root = False
    for line in lines:
        if line.startswith("qdisc "):
            root = " root " in f"{line} "
        elif root and "(dropped" in line:
            number = line.split("(dropped", 1)[1].split(",", 1)[0].strip()
            return int(number) if number.isdigit() else None
    return None


def delta(before: Reading | None, after: Reading | None) -> dict[str, int | None]:
    """What each counter moved between two readings; None where either lacks it (or the
    counter went back: a reset, or a device that was replaced)."""
    out: dict[str, int | None] = {}
    for key in KEYS:
        old = before.values.get(key) if before else None
        new = after.values.get(key) if after else None
        out[key] = new - old if old is not None and new is not None and new >= old else None
    return out


def record(
    before: Reading | None, after: Reading | None, *, iface: str | None, netns: str
) -> dict[str, Any]:
    """One end's entry in a sample: which device and network namespace was read
    ("host", or "container" for a container's own), and the deltas."""
    entry: dict[str, Any] = {"iface": iface, "netns": netns, **delta(before, after)}
    if before is None or after is None:
        entry["unavailable"] = "no reading " + ("before" if before is None else "after")
    used = (
        cpustat.usage(before.cpu, after.cpu)
        if before and after and before.cpu and after.cpu
        else None
    )
    if used is not None and after is not None and after.cpu is not None:
        entry["cpu"] = {**used.to_dict(), "boot": after.cpu.boot}
    if before is not None and after is not None and (after.procs or before.procs):
        hz = after.cpu.hz if after.cpu else 100
        entry["procs"] = {
            name: round((new[1] - old[1]) / hz, 3)
            for name, new in after.procs.items()
            if (old := before.procs.get(name)) is not None
            and old[0] == new[0] >= 0
            and new[1] >= old[1]
        }
        gone = _gone(before.procs, after.procs)
        if gone:
            entry["procs_unavailable"] = gone
    return entry


def _gone(
    before: Mapping[str, tuple[int, int]], after: Mapping[str, tuple[int, int]]
) -> dict[str, str]:
    """name -> why a process read before has no figure: it exited (FreeFlow's router
    died of SIGPIPE after a TCP_CRR test on the lab), or another took its name."""
    out = {}
    for name, (pid, _) in before.items():
        new = after.get(name)
        if new is None:
            out[name] = f"pid {pid} was gone by the reading after (the process exited)"
        elif new[0] != pid:
            out[name] = f"pid {pid} before, {new[0]} after: not one process over the test"
    return out


#: An end's CPU reading is its test's when its interval is at most this many times the
#: client's (plus a second), as the container modes judge (netrun.modes.docker.pathbytes).
CPU_WINDOW = 1.5


def judge_windows(ends: Mapping[str, dict[str, Any]]) -> None:
    """Take the CPU figures off an end (``record``'s) whose interval is far longer than
    the client's: its reading before was not its test's (a start well ahead), and the
    idle time would water its shares down. The reason is kept (``cpu_unavailable``)."""
    client = (ends.get("client") or {}).get("cpu") or {}
    window = client.get("elapsed_seconds")
    if not isinstance(window, float):
        return
    for entry in ends.values():
        found = (entry.get("cpu") or {}).get("elapsed_seconds")
        if isinstance(found, float) and found > window * CPU_WINDOW + 1:
            del entry["cpu"]
            entry["cpu_unavailable"] = (
                f"reading before was {found:.1f}s before its reading after: not the test's window"
            )
