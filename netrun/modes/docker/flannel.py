"""Flannel: Docker containers on the Flannel-backed network (docker0 on the Flannel lease).

The containers are started as in docker mode; on top, netrun reads what flanneld leaves
on each host, in the containers' start round trip: its lease (the subnet.env it writes,
/run/flannel/subnet.env by default), the VXLAN device's MTU and address (flanneld gives it
the lease's first address), and the flanneld processes in the host's network namespace.
It checks that each container got an address inside its host's lease and that the device
holds that lease (else subnet.env is stale), records the overlay MTU (the device's: it
sets the goodput ceiling, 909 Mbit/s for a 1450-byte VXLAN MTU on 1 GbE), fails a repeat
after which a flanneld seen at the start is gone, naming it, and, per run, the bytes on the VXLAN
device, the host NIC and the container's interface (``details.path_bytes``), so the result
shows that its bytes crossed the overlay (``details.crossed_overlay``): for iperf3 on
the bytes it received, for netperf on the payload it moved each way
(netrun.modes.docker.carry).
"""

from __future__ import annotations

import functools
import ipaddress
import shlex
from typing import Any

from netrun.core.options import Option, matching
from netrun.errors import ModeError
from netrun.hosts.group import in_parallel
from netrun.hosts.host import Host
from netrun.modes.docker.mode import OPTIONS as DOCKER_OPTIONS
from netrun.modes.docker.mode import DockerMode
from netrun.tools import docker as dk

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


#: sh: whether process ``$nr_d`` (its /proc folder) is a flanneld that has not exited (a
#: killed one stays a zombie, its comm still "flanneld", until its parent reaps it)
_IS_FLANNELD = (
    'nr_s=; { read -r nr_s < "$nr_d/stat"; } 2>/dev/null; '
    'case "$nr_s" in *"(flanneld) "[!ZX]*) nr_f=1;; *) nr_f=;; esac'
)
#: sh printing the pid of every flanneld in this shell's network namespace (the hosts of
#: an emulated lab share one pid namespace; a namespace it may not read counts as ours)
FLANNELD_PIDS = (
    "nr_me=$(readlink /proc/$$/ns/net 2>/dev/null); for nr_d in /proc/[0-9]*; do "
    f'{_IS_FLANNELD}; [ -n "$nr_f" ] || continue; '
    'nr_n=$(readlink "$nr_d/ns/net" 2>/dev/null); '
    'if [ -z "$nr_n" ] || [ -z "$nr_me" ] || [ "$nr_n" = "$nr_me" ]; then '
    'echo "${nr_d#/proc/}"; fi; done'
)


def start_script(subnet_env: object, iface: object) -> str:
    """sh printing the lease, vtep and flanneld sections (tests/fixtures/flannel/capture.sh
    runs it on the lab)."""
    path, dev = shlex.quote(str(subnet_env)), shlex.quote(str(iface))
    return (
        f"echo ==netrun:lease==; cat {path} 2>/dev/null; echo ==netrun:vtep==; "
        f"cat /sys/class/net/{dev}/mtu 2>/dev/null; ip -4 -o addr show dev {dev} "
        f"2>/dev/null; echo ==netrun:flanneld==; {FLANNELD_PIDS}"
    )


def gone_script(pids: list[int]) -> str:
    """sh printing each of `pids` that is no longer a running flanneld."""
    listed = " ".join(str(int(pid)) for pid in pids)
    return (
        f"for nr_p in {listed}; do nr_d=/proc/$nr_p; {_IS_FLANNELD}; "
        '[ -n "$nr_f" ] || echo "$nr_p"; done'
    )


def parse_vtep(text: str) -> tuple[int | None, str | None]:
    """(MTU, IPv4 address with prefix) of the VXLAN device from its section: the sysfs
    MTU line, then ``ip -4 -o addr show dev`` lines (either may be missing)."""
    mtu: int | None = None
    address: str | None = None
    for line in text.splitlines():
        words = line.split()
        if len(words) == 1 and words[0].isdigit():
            mtu = int(words[0])
        elif "inet" in words and words.index("inet") + 1 < len(words) and address is None:
            address = words[words.index("inet") + 1]
    return mtu, address


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
        self.vteps: dict[str, dict[str, Any]] = {}

    def start_extra(self, role: str, host: Host) -> str:
        """The host's lease, VXLAN device and flanneld, read in the container's start
        round trip."""
        found = start_script(
            self.value("flannel_subnet_env", host), self.value("flannel_iface", host)
        )
        return f"{found}; go=1"

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
        mtu, address = parse_vtep(found.get("vtep", ""))
        pids = [int(word) for word in found.get("flanneld", "").split() if word.isdigit()]
        self.vteps[host.name] = {"vtep_mtu": mtu, "vtep_address": address, "flanneld_pids": pids}
        if address is not None:
            try:
                stale = ipaddress.ip_interface(address).ip not in ipaddress.ip_network(
                    env["FLANNEL_SUBNET"], strict=False
                )
            except ValueError:
                stale = False  # a lease that is no address is reported in after_apps
            if stale:
                path = self.value("flannel_subnet_env", host)
                raise ModeError(
                    f"{host.name}: {self.value('flannel_iface', host)} holds {address}, "
                    f"outside FLANNEL_SUBNET {env['FLANNEL_SUBNET']} of {path}: that "
                    "subnet.env is stale (flanneld restarted with another lease?)"
                )

    def after_launch(self) -> None:
        self.details["flannel"] = {
            name: {
                "network": env.get("FLANNEL_NETWORK"),
                "subnet": env.get("FLANNEL_SUBNET"),
                "mtu": int(env["FLANNEL_MTU"]) if env.get("FLANNEL_MTU", "").isdigit() else None,
                **self.vteps.get(name, {}),
            }
            for name, env in self.leases.items()
        }
        # the device's MTU is what the overlay carries; subnet.env's, where it is unread
        mtus = [v.get("vtep_mtu") or v["mtu"] for v in self.details["flannel"].values()]
        if any(mtus):
            self.details["overlay_mtu"] = min(m for m in mtus if m)

    def check_flanneld(self) -> None:
        """A flanneld seen on an end's host at the containers' start that is gone now
        fails the repeat, named: the overlay's routes and leases are no longer kept."""
        leases = self.details.get("flannel") or {}
        hosts = {host.name: host for host in (self.server, self.client)}
        gone: dict[str, list[int]] = {}

        def check(host: Host) -> None:
            pids = (leases.get(host.name) or {}).get("flanneld_pids") or []
            if pids:
                res = host.run(gone_script(pids), timeout=30, check=False)
                gone[host.name] = [int(w) for w in res.stdout.split() if w.isdigit()]

        tasks = {name: functools.partial(check, host) for name, host in hosts.items()}
        result = in_parallel(tasks, deadline=60)
        if result.failed:
            raise next(iter(result.failed.values()))
        named = [f"{name}: flanneld (pid {', '.join(map(str, pids))})"
                 for name, pids in sorted(gone.items()) if pids]  # fmt: skip
        if named:
            raise ModeError(
                f"{'; '.join(named)} exited during the test: the Flannel overlay was not "
                "kept while it ran; restart flanneld and run it again"
            )

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

    def checked(self) -> None:
        """After each repeat (netrun.modes.docker.carry): its flanneld still runs."""
        self.check_flanneld()


MODE = Flannel
