"""Host facts a run records: kernel, iperf3 version, and the data NIC (speed, MTU, driver).

All of it is read in one round trip per host: ``probe_script`` returns one POSIX sh script
whose sections are separated by ``==netrun:NAME==`` lines, and ``parse_probe`` reads them.
Speed and driver are best effort: veth, lo, VMs and hosts without ethtool often cannot tell,
and an unknown speed is ``None``, never a failure.
"""

from __future__ import annotations

import ipaddress
import re
import shlex
from dataclasses import dataclass

from netrun.tools.iperf3.parse import parse_version
from netrun.tools.iperf3.result import Iperf3Error

SECTION = re.compile(r"^==netrun:([a-z0-9-]+)==$")
MISSING = "NETRUN_MISSING"
#: The program whose version the probe reads (``HostFacts.version``; its path on the host
#: is probe_script's ``iperf3``): a host that needs it and whose copy does not answer
#: ``--version`` lacks it (netrun.run.needs), and a tool's ``refuse`` reads that version.
PROBED = "iperf3"


@dataclass(frozen=True)
class NicInfo:
    """The data-plane interface; each field is None when the host could not tell."""

    iface: str | None
    speed_mbps: float | None = None
    mtu: int | None = None
    driver: str | None = None
    duplex: str | None = None
    network: str | None = None  # the data address's subnet, e.g. 10.141.184.0/21


@dataclass(frozen=True)
class EthtoolInfo:
    """What ``ethtool IF`` says about the link."""

    speed_mbps: float | None
    duplex: str | None
    link_detected: bool | None


@dataclass(frozen=True)
class HostFacts:
    """What one host looked like when the run started; ``problems`` are worth a warning."""

    kernel: str | None
    iperf3_version: str | None
    iperf3_missing: bool
    nic: NicInfo
    problems: tuple[str, ...] = ()
    #: Every address the host's network namespace holds (``ip -o addr show``): a test
    #: whose server end is one of the client's own is loopback (netrun.modes.sameend).
    addresses: tuple[str, ...] = ()

    def version(self, program: str) -> str | None:
        """The version the probe read of ``program``; None where it read none (it reads
        PROBED's alone)."""
        return self.iperf3_version if program == PROBED else None


# -- the probe ------------------------------------------------------------------------------
_PROBE_BODY = r"""
echo '==netrun:kernel=='
uname -r 2>&1
echo '==netrun:iperf3=='
if command -v "$iperf3" >/dev/null 2>&1; then "$iperf3" --version 2>&1; else echo NETRUN_MISSING; fi
echo '==netrun:addr=='
addrs=$(ip -o addr show 2>&1)
printf '%s\n' "$addrs"
src=given
if [ -z "$iface" ]; then
    src=addr
    iface=$(printf '%s\n' "$addrs" | awk -v ip="$data_ip" \
        '{ split($4, a, "/"); if (a[1] == ip) { sub(/@.*/, "", $2); print $2; exit } }')
fi
if [ -z "$iface" ] && [ -n "$peer" ]; then
    echo '==netrun:route=='
    route=$(ip -o route get "$peer" 2>&1)
    printf '%s\n' "$route"
    src=route
    iface=$(printf '%s\n' "$route" | awk \
        '{ for (i = 1; i < NF; i++) if ($i == "dev") { print $(i + 1); exit } }')
fi
echo '==netrun:iface=='
[ -n "$iface" ] && echo "$iface $src"
if [ -n "$iface" ]; then
    echo '==netrun:mtu=='
    cat "/sys/class/net/$iface/mtu" 2>/dev/null
    echo '==netrun:link=='
    ip -o link show dev "$iface" 2>&1
    if command -v ethtool >/dev/null 2>&1; then
        echo '==netrun:ethtool=='
        ethtool "$iface" 2>&1
        echo '==netrun:ethtool-i=='
        ethtool -i "$iface" 2>&1
    else
        echo '==netrun:ethtool=='
        echo NETRUN_MISSING
    fi
fi
echo '==netrun:end=='
"""


def probe_script(
    *, data_ip: str, iface: str | None, iperf3: str = "iperf3", peer: str | None = None
) -> str:
    """One sh script that prints every fact ``parse_probe`` reads.

    The data interface is ``iface`` when given, else the one holding ``data_ip``, else the
    one the route to ``peer`` leaves by (for hosts whose data IP is NATed or elsewhere).
    """
    q = shlex.quote
    head = [
        'PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"; export PATH',
        f"data_ip={q(data_ip)}",
        f"iface={q(iface or '')}",
        f"iperf3={q(iperf3)}",
        f"peer={q(peer or '')}",
    ]
    return "\n".join(head) + _PROBE_BODY


def split_sections(text: str, *, head: str | None = None, strip: bool = True) -> dict[str, str]:
    """A script's output cut at its ``==netrun:NAME==`` lines (the probe's, a container's
    start script's...). ``head``: the key of what precedes the first section (None: it is
    dropped); ``strip``: each section's text stripped."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None if head is None else sections.setdefault(head, [])
    for line in text.splitlines():
        found = SECTION.match(line.strip())
        if found:
            current = sections.setdefault(found.group(1), [])
        elif current is not None:
            current.append(line)
    joined = {name: "\n".join(lines) for name, lines in sections.items()}
    return {name: t.strip() for name, t in joined.items()} if strip else joined


def parse_probe(text: str, *, data_ip: str | None = None) -> HostFacts:
    """HostFacts from ``probe_script``'s output; what is missing lands in ``problems``."""
    sections = split_sections(text)
    problems: list[str] = []
    if "end" not in sections:
        problems.append("the facts probe did not finish; its output was cut short")

    kernel = sections.get("kernel", "").splitlines()
    kernel_release = kernel[0].strip() if kernel and kernel[0].strip() else None
    if kernel_release is None:
        problems.append("could not read the kernel release (uname -r)")

    version_text = sections.get("iperf3", "")
    missing = version_text.strip() == MISSING
    version: str | None = None
    if missing:
        problems.append("iperf3 is not installed (or not in PATH)")
    elif version_text:
        try:
            version = parse_version(version_text)
        except Iperf3Error:
            problems.append(f"could not read the iperf3 version from: {version_text[:120]!r}")

    own_addresses = parse_addresses(sections.get("addr", ""))
    iface_words = sections.get("iface", "").split()
    iface = iface_words[0] if iface_words else None
    if iface is None:
        where = f" {data_ip}" if data_ip else ""
        problems.append(f"no interface holds the data IP{where} (ip -o addr show)")
        return HostFacts(
            kernel_release, version, missing, NicInfo(None), tuple(problems), own_addresses
        )

    if "does not exist" in sections.get("link", ""):
        problems.append(f"interface {iface} does not exist on this host")
    mtu = _int(sections.get("mtu", "")) or parse_ip_link_mtu(sections.get("link", ""))
    if mtu is None:
        problems.append(f"could not read the MTU of {iface}")
    ethtool_text = sections.get("ethtool", "")
    if ethtool_text.strip() == MISSING:
        link = EthtoolInfo(None, None, None)
        driver = None
    else:
        link = parse_ethtool(ethtool_text)
        driver = parse_ethtool_driver(sections.get("ethtool-i", ""))
    network = parse_ip_network(sections.get("addr", ""), data_ip) if data_ip else None
    nic = NicInfo(iface, link.speed_mbps, mtu, driver, link.duplex, network)
    return HostFacts(kernel_release, version, missing, nic, tuple(problems), own_addresses)


# -- small parsers --------------------------------------------------------------------------
def _int(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isdigit() else None


_SPEED = re.compile(r"^\s*Speed:\s*([0-9.]+)\s*([MG])b/s", re.MULTILINE)
_DUPLEX = re.compile(r"^\s*Duplex:\s*(Full|Half)\b", re.MULTILINE | re.IGNORECASE)
_LINK = re.compile(r"^\s*Link detected:\s*(yes|no)", re.MULTILINE)


def parse_ethtool(text: str) -> EthtoolInfo:
    """Speed (Mb/s) and duplex from ``ethtool IF``; "Unknown!" or no line at all -> None."""
    speed = _SPEED.search(text)
    speed_mbps = None
    if speed:
        speed_mbps = float(speed.group(1)) * (1000 if speed.group(2) == "G" else 1)
    duplex = _DUPLEX.search(text)
    link = _LINK.search(text)
    return EthtoolInfo(
        speed_mbps=speed_mbps or None,
        duplex=duplex.group(1).lower() if duplex else None,
        link_detected=None if link is None else link.group(1) == "yes",
    )


def parse_ethtool_driver(text: str) -> str | None:
    """The ``driver:`` line of ``ethtool -i IF``; None when the device cannot tell."""
    found = re.search(r"^driver:\s*(\S+)", text, re.MULTILINE)
    return found.group(1) if found else None


def parse_ip_addr(text: str, ip: str) -> str | None:
    """The interface that holds ``ip`` in ``ip -o addr show`` output, or None."""
    try:
        wanted = ipaddress.ip_address(ip)
    except ValueError:
        return None
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 4 or fields[2] not in ("inet", "inet6"):
            continue
        try:
            address = ipaddress.ip_address(fields[3].split("/")[0])
        except ValueError:
            continue
        if address == wanted:
            return fields[1].split("@")[0]
    return None


def parse_addresses(text: str) -> tuple[str, ...]:
    """Every address in ``ip -o addr show`` output (loopback's too), in its order."""
    found: list[str] = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 4 or fields[2] not in ("inet", "inet6"):
            continue
        try:
            address = str(ipaddress.ip_address(fields[3].split("/")[0]))
        except ValueError:
            continue
        if address not in found:
            found.append(address)
    return tuple(found)


def parse_ip_network(text: str, ip: str) -> str | None:
    """The subnet (CIDR) of ``ip`` in ``ip -o addr show`` output, or None."""
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 4 or fields[2] not in ("inet", "inet6"):
            continue
        try:
            iface = ipaddress.ip_interface(fields[3])
        except ValueError:
            continue
        if str(iface.ip) == ip:
            return str(iface.network)
    return None


def parse_ip_route(text: str) -> str | None:
    """The ``dev`` of ``ip -o route get PEER``: the interface traffic to the peer leaves by."""
    fields = text.split()
    for index, word in enumerate(fields[:-1]):
        if word == "dev":
            return fields[index + 1]
    return None


def parse_ip_link_mtu(text: str) -> int | None:
    """The ``mtu N`` of ``ip -o link show dev IF``."""
    found = re.search(r"\bmtu (\d+)", text)
    return int(found.group(1)) if found else None
