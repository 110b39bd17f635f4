"""Flannel: Docker containers on the Flannel-backed network (docker0 on the Flannel lease).

The containers are started as in docker mode; on top, netrun reads each host's Flannel
lease (flanneld writes it to /run/flannel/subnet.env), checks that each container got an
address inside its host's lease, records the overlay MTU (which sets the goodput ceiling:
909 Mbit/s for a 1450-byte VXLAN MTU on 1 GbE) and, per run, the bytes on the VXLAN
device, the host NIC and the container's interface (``details.path_bytes``), so the result
shows that its bytes crossed the overlay (``details.crossed_overlay``): for iperf3 on
the bytes it received, for netperf on the payload it moved each way
(netrun.modes.docker.netperf.measure_path).
"""

from __future__ import annotations

import ipaddress
import shlex
from typing import Any

from netrun.core.measurement import Measurement
from netrun.core.options import Option, matching
from netrun.errors import ModeError
from netrun.hosts.host import Host
from netrun.modes.docker import netperf as netperf_container
from netrun.modes.docker import pathbytes
from netrun.modes.docker.mode import OPTIONS as DOCKER_OPTIONS
from netrun.modes.docker.mode import DockerMode
from netrun.tools import docker as dk
from netrun.tools.netperf.parse import Instance

PATH_RE = r"/[A-Za-z0-9_./-]{1,255}"
IFACE_RE = r"[A-Za-z0-9_.:-]{1,15}"

OPTIONS: tuple[Option, ...] = (
    *DOCKER_OPTIONS,
    Option(
        "flannel_subnet_env",
        str,
        "/run/flannel/subnet.env",
        "where flanneld wrote the host's lease",
        check=matching(PATH_RE, "an absolute path"),
        from_inventory=True,
    ),
    Option(
        "flannel_iface",
        str,
        "flannel.1",
        "the VXLAN device whose counters show the traffic crossed the overlay",
        check=matching(IFACE_RE, "an interface name"),
        from_inventory=True,
    ),
)


def parse_subnet_env(text: str) -> dict[str, str]:
    """KEY=value lines of flannel's subnet.env."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and key.startswith("FLANNEL_"):
            out[key] = value.strip().strip('"')
    return out


class Flannel(DockerMode):
    """Docker mode on the Flannel overlay, with the lease and MTU checked and recorded."""

    name = "flannel"
    options = OPTIONS
    overlay_device = True
    counts_path = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.leases: dict[str, dict[str, str]] = {}

    def start_extra(self, role: str, host: Host) -> str:
        """The host's lease, read in the container's start round trip."""
        path = shlex.quote(str(self.value("flannel_subnet_env", host)))
        return f"echo ==netrun:lease==; cat {path} 2>/dev/null; go=1"

    def read_sections(self, role: str, host: Host, found: dict[str, str]) -> None:
        super().read_sections(role, host, found)
        env = parse_subnet_env(found.get("lease", ""))
        if "FLANNEL_SUBNET" not in env:
            path = self.value("flannel_subnet_env", host)
            raise ModeError(
                f"{host.name}: no Flannel lease in {path} (is flanneld running?); set "
                "flannel_subnet_env (inventory netrun_flannel_subnet_env) to its subnet.env"
            )
        self.leases[host.name] = env

    def after_launch(self) -> None:
        self.details["flannel"] = {
            name: {
                "network": env.get("FLANNEL_NETWORK"),
                "subnet": env.get("FLANNEL_SUBNET"),
                "mtu": int(env["FLANNEL_MTU"]) if env.get("FLANNEL_MTU", "").isdigit() else None,
            }
            for name, env in self.leases.items()
        }
        mtus = [v["mtu"] for v in self.details["flannel"].values() if v["mtu"]]
        if mtus:
            self.details["overlay_mtu"] = min(mtus)

    def after_apps(self, infos: dict[str, dk.ContainerInfo]) -> None:
        ends = {"server": self.server, "client": self.client}
        for role, info in infos.items():
            host = ends[role]
            subnet = self.leases[host.name]["FLANNEL_SUBNET"]
            try:
                lease = ipaddress.ip_network(subnet, strict=False)
                ips = [ipaddress.ip_address(ip) for ip in info.ips.values()]
            except ValueError:
                raise ModeError(
                    f"{host.name}: FLANNEL_SUBNET {subnet!r} or the container's address "
                    f"{dict(info.ips)} is not a valid address"
                ) from None
            if not any(ip in lease for ip in ips):
                shown = ", ".join(map(str, ips)) or "no address"
                raise ModeError(
                    f"{host.name}: {role} container got {shown}, outside the host's Flannel "
                    f"lease {lease}; run dockerd with --bip from subnet.env, or pick the "
                    "Flannel-backed network with network:"
                )

    def measure(self, repeat: int) -> Measurement:
        self.repeat = repeat
        m, path = pathbytes.around(self, lambda: super(Flannel, self).measure(repeat))
        _, crossed, why = pathbytes.verdict(path, m.result.bytes_received, m.result.sender)
        m.details.update(path_bytes=path, crossed_overlay=crossed, path_check=why)
        return m

    def measure_netperf(self, repeat: int) -> tuple[list[Instance], str, dict[str, Any]]:
        """tool: netperf with the counters around each repeat, as for iperf3: proof that
        its payload crossed the overlay."""
        self.repeat = repeat
        self.healthy = False
        found, raw, extra, _ = netperf_container.measure_path(self, repeat)
        self.healthy = True
        return found, raw, extra


MODE = Flannel
