"""Reading a host's context (netrun.results.context): one sh script, one parser.

The script rides on the host's probe (netrun.run.fleet), after the probe's own lines, so it
costs no round trip of its own; it reads the data interface the probe found (``$iface``)
unless given one. Every command is optional: a host without ethtool or tc, a veth that
answers "Operation not supported", a VM without cpufreq each leave that field None with
the reason in ``unavailable``. Sysctls are read from /proc/sys (no sysctl binary needed);
in a network namespace the per-namespace ones are that namespace's.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import Any

from netrun.results.context import UNAVAILABLE
from netrun.tools.facts import MISSING, split_sections

SYSCTL_ROOT = "/proc/sys/"
#: Where a probe's context run in the background writes (in the host's run folder;
#: ``beside`` removes it).
FILE = "context.out"
#: The TCP/UDP and queueing sysctls that shape a figure.
SYSCTLS = (
    "net.ipv4.tcp_congestion_control",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_mem",
    "net.core.rmem_max",
    "net.core.wmem_max",
    "net.core.rmem_default",
    "net.core.wmem_default",
    "net.core.default_qdisc",
    "net.core.netdev_max_backlog",
    "net.ipv4.tcp_mtu_probing",
    "net.ipv4.tcp_window_scaling",
    "net.ipv4.tcp_timestamps",
    "net.ipv4.tcp_sack",
    "net.ipv4.tcp_ecn",
    "net.ipv4.tcp_slow_start_after_idle",
    "net.ipv4.tcp_no_metrics_save",
    "net.ipv4.tcp_notsent_lowat",
    "net.ipv4.udp_mem",
)
PREFIX = "ctx-"
RC = "netrun-rc "
_VERSION = re.compile(r"\d+(?:\.\d+)*[\w.+~-]*")
_DOTTED = re.compile(r"\b\d+\.\d+[\w.+~-]*")

# ``run SECTION CMD...``: the section's mark, the command's output and its exit code
# (``run`` and ``have`` live in the script's own subshell).
_BODY = r"""
run() { echo "==netrun:ctx-$1=="; shift; "$@" 2>&1; echo "netrun-rc $?"; }
have() { command -v "$1" >/dev/null 2>&1; }
run kernel uname -r
run kernel-version uname -v
run cpu grep -m1 -E '^(model name|Hardware|Processor|cpu model)' /proc/cpuinfo
run cpus getconf _NPROCESSORS_ONLN
run governor cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor
echo '==netrun:ctx-iface=='
echo "$ctx_if"
if [ -n "$ctx_if" ]; then
    if have ethtool; then
        run ethtool-i ethtool -i "$ctx_if"
        run ethtool-k ethtool -k "$ctx_if"
        run ethtool-g ethtool -g "$ctx_if"
    else
        echo '==netrun:ctx-ethtool-i=='; echo NETRUN_MISSING
    fi
    if have tc; then
        run qdisc tc qdisc show dev "$ctx_if"
        run qdisc-class tc class show dev "$ctx_if"
    else echo '==netrun:ctx-qdisc=='; echo NETRUN_MISSING; fi
fi
echo '==netrun:ctx-sysctl=='
grep -H '' $ctx_sysctl_paths 2>/dev/null
"""


def context_script(
    tools: Mapping[str, str], iface: str | None = None, flags: Mapping[str, str] | None = None
) -> str:
    """One sh script printing what ``parse_context`` reads. ``tools``: tool name -> the
    command that runs it on this host (its ``netrun_<tool>`` path or the name); ``iface``:
    the data interface (None: the probe's ``$iface``, set by the probe before it);
    ``flags``: tool name -> the arguments that print its version (Program.version_flag;
    none: ``--version``)."""
    q = shlex.quote
    head = [
        f"ctx_if={q(iface)}" if iface else 'ctx_if="${iface:-}"',
        # one grep prints every sysctl as path:value, not a process or two per sysctl
        # (the probe pays for each it starts; sh's read cannot read most of /proc/sys: an
        # integer sysctl answers a read past its first byte with EOF)
        f"ctx_sysctl_paths={q(' '.join(SYSCTL_ROOT + k.replace('.', '/') for k in SYSCTLS))}",
    ]
    lines = []
    for tool, exe in tools.items():
        flag = " ".join(q(w) for w in (flags or {}).get(tool, "--version").split())
        lines.append(
            f"if have {q(exe)}; then run tool-{q(_section(tool))} {q(exe)} {flag}; "
            f"else echo {q(f'==netrun:{PREFIX}tool-{_section(tool)}==')}; echo {MISSING}; fi"
        )
    body = "\n".join(head) + _BODY + "\n".join(lines) + f"\necho '==netrun:{PREFIX}end=='"
    return f"(\n{body}\n)\n"  # a subshell: its functions and variables stay inside


#: sh a start beside the context calls before a reading (defined by ``beside``; a start
#: in a subshell of its own cannot ``wait`` for the probe's jobs): it returns once the
#: context's output is whole, or after 3 s.
SETTLE = "nr_settle"


def beside(script: str, path: str) -> tuple[str, str]:
    """``script`` run in the background (its output into ``path``), and the sh that
    waits for it and prints that output: a probe that starts a server runs the context
    beside the start (about 0.05 s of processes the start's waits leave room for)
    instead of before it. The first part also defines SETTLE, for a start that reads
    counters before the probe ends."""
    q = shlex.quote(path)
    end = shlex.quote(f"==netrun:{PREFIX}end==")
    settle = (
        f"{SETTLE}() {{ nr_i=0; while [ $nr_i -lt 150 ] && ! grep -qxF {end} {q} 2>/dev/null; "
        "do sleep 0.02; nr_i=$((nr_i + 1)); done; }"
    )
    return f"{settle}\n{script.rstrip()} >{q} 2>&1 &", f"wait; cat {q} 2>/dev/null; rm -f {q}"


def settled(reading: str) -> str:
    """``reading`` after the host's context has ended where a probe runs it beside this
    start (SETTLE), at once elsewhere: its processes never fall in a reading's window."""
    return f"{{ ! type {SETTLE} >/dev/null 2>&1 || {SETTLE}; }}; {reading}"


def _section(tool: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", tool.lower()) or "tool"


def _answer(text: str | None, what: str) -> tuple[str | None, str | None]:
    """(output, None) of a command that worked, else (None, why not) in one line."""
    if text is None:
        return None, f"{what}: not read (the script's output was cut short)"
    if text.strip() == MISSING:
        return None, f"{what.split()[0]} is not installed (or not in PATH)"
    lines = text.rstrip("\n").splitlines()
    rc = lines.pop()[len(RC) :] if lines and lines[-1].startswith(RC) else None
    body = "\n".join(lines).strip()
    if rc is None:
        return None, f"{what}: not read (the script's output was cut short)"
    if rc != "0":
        last = next((ln.strip() for ln in reversed(lines) if ln.strip()), "no output")
        return None, f"{what}: {last[:160]} (exit {rc})"
    return body, None


def parse_context(text: str) -> dict[str, Any]:
    """The context (netrun.results.context's shape) from ``context_script``'s output."""
    sections = {
        k[len(PREFIX) :]: v
        for k, v in split_sections(text, strip=False).items()
        if k.startswith(PREFIX)
    }
    why: dict[str, str] = {}
    out: dict[str, Any] = {}

    def take(key: str, section: str, what: str) -> str | None:
        body, reason = _answer(sections.get(section), what)
        if reason is not None:
            why[key] = reason
        return body

    out["kernel"] = _first(take("kernel", "kernel", "uname -r"))
    out["kernel_version"] = _first(take("kernel_version", "kernel-version", "uname -v"))
    cpu = take("cpu_model", "cpu", "/proc/cpuinfo")
    out["cpu_model"] = cpu.split(":", 1)[1].strip() if cpu and ":" in cpu else None
    if cpu is not None and out["cpu_model"] is None:
        why["cpu_model"] = "/proc/cpuinfo names no CPU model"
    cpus = _first(take("cpus", "cpus", "getconf _NPROCESSORS_ONLN"))
    out["cpus"] = int(cpus) if cpus and cpus.isdigit() else None
    governor = take("cpu_governor", "governor", "cpufreq scaling_governor")
    out["cpu_governor"] = _first(governor)
    if governor is None:
        why["cpu_governor"] = "no cpufreq on this host (cpu0/cpufreq/scaling_governor absent)"
    iface = _first(sections.get("iface"))
    out["nic"] = iface
    _nic(out, why, iface, take)
    out["sysctl"] = _sysctls(sections.get("sysctl"), why)
    tools: dict[str, str | None] = {}
    for section in (s for s in sections if s.startswith("tool-")):
        name = section[len("tool-") :]
        # iperf 2's -v exits 1: a dotted version on the first line counts whatever the
        # exit code ("iperf version 2.1.8 (12 August 2022) pthreads")
        dotted = _DOTTED.search(_first(sections[section]) or "")
        tools[name] = dotted.group(0) if dotted else _version(take(name, section, name))
    out["tools"] = tools
    if "end" not in sections:
        why["context"] = "the context script did not finish; its output was cut short"
    out[UNAVAILABLE] = why
    return out


def _nic(out: dict[str, Any], why: dict[str, str], iface: str | None, take: Any) -> None:
    keys = ("nic_driver", "nic_driver_version", "nic_firmware", "nic_bus")
    groups = ("offloads", "rings")
    if iface is None:
        for key in (*keys, *groups, "qdisc"):
            out[key] = None
            why[key] = "no data interface found (see the host's nic facts)"
        return
    info = take("nic_driver", "ethtool-i", f"ethtool -i {iface}")
    fields = _colon_fields(info or "")
    for key, name in zip(keys, ("driver", "version", "firmware-version", "bus-info"), strict=True):
        out[key] = fields.get(name) or None
        if out[key] is None:
            why[key] = why.get("nic_driver") or f"ethtool -i {iface} shows no {name}"
    if "ethtool is not installed" in why.get("nic_driver", ""):
        for group in groups:
            out[group] = None
            why[group] = why["nic_driver"]
    else:
        offloads = take("offloads", "ethtool-k", f"ethtool -k {iface}")
        out["offloads"] = _offloads(offloads) if offloads is not None else None
        rings = take("rings", "ethtool-g", f"ethtool -g {iface}")
        out["rings"] = _rings(rings) if rings is not None else None
    qdisc = take("qdisc", "qdisc", f"tc qdisc show dev {iface}")
    out["qdisc"] = _qdisc(qdisc) if qdisc is not None else None
    if qdisc is not None and qdisc.startswith("qdisc htb"):  # its rates are its classes'
        classes = take("qdisc_classes", "qdisc-class", f"tc class show dev {iface}")
        out["qdisc_classes"] = _htb_roots(classes)


def _htb_roots(text: str | None) -> str | None:
    """The root classes of an htb (their rate and ceil limit the whole qdisc), as
    ``tc class show`` prints them, one per "|"; None when none was read."""
    roots = [
        " ".join(line.split())
        for line in (text or "").splitlines()
        if line.startswith("class htb ") and " root " in f"{line} "
    ]
    return " | ".join(roots) or None


_QDISC = re.compile(r"^qdisc (\S+) [0-9a-f]*: (root|parent \S+)(?: refcnt \d+)? ?")


def _qdisc(text: str) -> str:
    """``tc qdisc show dev IF`` in a form two runs can compare: "tbf root rate 984395Kbit
    burst 262095b lat 20ms", one qdisc per "|"; the kernel's handle numbers and reference
    counts (new on every ``tc qdisc add``) are left out, a child keeps its parent."""
    out = []
    for line in (ln.strip() for ln in text.splitlines() if ln.strip()):
        found = _QDISC.match(line)
        if found:
            rest = line[found.end() :].strip()
            line = " ".join(x for x in (found[1], found[2], rest) if x)
        out.append(line)
    return " | ".join(out)


def _first(text: str | None) -> str | None:
    line = (text or "").strip().splitlines()
    return line[0].strip() if line and line[0].strip() else None


def _colon_fields(text: str) -> dict[str, str]:
    """``key: value`` lines (ethtool -i), values stripped; empty values kept as ""."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            out[key.strip()] = value.strip()
    return out


def _offloads(text: str) -> dict[str, str]:
    """``ethtool -k``: feature -> "on"/"off" (a "[fixed]" or "[requested on]" note dropped)."""
    out: dict[str, str] = {}
    for line in text.splitlines()[1:]:  # "Features for IF:"
        key, sep, value = line.strip().partition(":")
        if sep and value.split():
            out[key.strip()] = value.split()[0]
    return out


def _rings(text: str) -> dict[str, str]:
    """``ethtool -g``: the current settings (rx, tx, rx-jumbo...), and each maximum as
    ``<name>-max``; "n/a" entries are left out."""
    out: dict[str, str] = {}
    suffix = "-max"
    for line in text.splitlines():
        if line.startswith("Pre-set maximums"):
            suffix = "-max"
        elif line.startswith("Current hardware settings"):
            suffix = ""
        key, sep, value = line.partition(":")
        value = value.strip()
        if sep and value and value != "n/a" and not line.startswith(("Ring ", "Pre-", "Current")):
            name = key.strip().lower().replace(" ", "-")
            out[name + suffix] = value
    return dict(sorted(out.items()))


def _sysctls(text: str | None, why: dict[str, str]) -> dict[str, str | None]:
    """``path:value`` lines of the script's grep (a sysctl it lacks prints nothing), or the
    ``key = value`` / ``key NETRUN_MISSING`` lines of netrun before it."""
    out: dict[str, str | None] = {}
    grep = any(line.startswith(SYSCTL_ROOT) for line in (text or "").splitlines())
    for line in (text or "").splitlines():
        if line.startswith(SYSCTL_ROOT):
            path, _, value = line.partition(":")
            out[path[len(SYSCTL_ROOT) :].replace("/", ".")] = " ".join(value.split())
            continue
        key, sep, value = line.partition(" = ")
        if sep:
            out[key.strip()] = " ".join(value.split())
        elif line.strip().endswith(MISSING):
            name = line.split()[0]
            out[name] = None
            why[name] = f"/proc/sys has no {name} here (an older kernel, or not per namespace)"
    if grep:
        for name in SYSCTLS:
            if name not in out:
                out[name] = None
                why[name] = f"/proc/sys has no {name} here (an older kernel, or not per namespace)"
    if not out:
        why["sysctl"] = "not read (the script's output was cut short)"
    return out


def _version(text: str | None) -> str | None:
    """The first version-looking word of a tool's first line ("iperf 3.12 (cJSON ...)" ->
    "3.12", "ping from iputils 20221126" -> "20221126"), else the line itself."""
    line = _first(text)
    if line is None or line.startswith(RC):
        return None
    found = _VERSION.search(line)
    return found.group(0) if found else line[:80]
