"""FreeFlow: a privileged router container per host, and an LD_PRELOAD socket library.

As FreeFlow's own instructions run it: on each host a router container
(``--privileged --net=host -v /freeflow:/freeflow -e HOST_IP_PREFIX=<host subnet>``) that
places libfsocket.so in /freeflow; then the iperf3 containers with ``-v /freeflow:/freeflow
-e VNET_PREFIX=<overlay CIDR> -e LD_PRELOAD=/freeflow/libfsocket.so``. A healthy router
that is already running is reused and left alone; one netrun starts is removed at the end
unless ``keep_router``: it carries the run's label, so the run's final sweep removes it
(on every exit path) after the last test that shares it. Both ends must really have the
library mapped, or the numbers would be plain Docker numbers under a FreeFlow label:
netrun checks /proc/<pid>/maps of each iperf3 container's PID 1 (``details.library_loaded``).
A loaded library proves no acceleration, though (the lab's stand-in passes that check):
each measurement records the bytes on the overlay device, the container's interface and
the host NIC (``details.path_bytes``), and ``details.accelerated`` is true only when the
host NIC carried the test's bytes and the overlay did not. Retransmits and cwnd are
reported unavailable (``details.unavailable``): iperf3 reads them on the idle overlay socket.
"""

from __future__ import annotations

import ipaddress
import json
import shlex
import time
from typing import Any

from netrun.errors import Cancelled, ModeError
from netrun.host import Host
from netrun.modes import pathbytes
from netrun.modes.base import Measurement, Option
from netrun.modes.docker import DockerMode, run_on_both
from netrun.modes.flannel import OPTIONS as FLANNEL_OPTIONS
from netrun.modes.flannel import PATH_RE, parse_subnet_env
from netrun.options import expecting, matching, number
from netrun.tools import docker as dk

LIBRARY = "libfsocket.so"
#: What iperf3 reports under FreeFlow but cannot know: it reads TCP_INFO with getsockopt on
#: the socket it made, the overlay one, which idles while the router's host socket carries
#: the data (the reference's constant 13.7 KByte cwnd is this effect).
UNAVAILABLE = {
    "retransmits": "FreeFlow: iperf3 reads TCP_INFO (getsockopt) on the idle overlay socket, "
    "not on the host socket that carries the data",
    "cwnd": "FreeFlow: iperf3 reads TCP_INFO (getsockopt) on the idle overlay socket, "
    "not on the host socket that carries the data",
}
CIDR_RE = r"[0-9]{1,3}(\.[0-9]{1,3}){3}/[0-9]{1,2}"

# fmt: off
OPTIONS: tuple[Option, ...] = (
    *FLANNEL_OPTIONS,
    Option("router_image", str, "freeflow/freeflow:tcp", "FreeFlow router image",
           check=expecting("an image reference such as freeflow/freeflow:tcp",
                           dk.is_image_reference), from_inventory=True),
    Option("router_name", str, "freeflow", "name of the router container on each host",
           check=matching(dk.NAME_RE.pattern, "a container name"), from_inventory=True),
    Option("freeflow_dir", str, "/freeflow", "host folder shared by router and containers",
           check=matching(PATH_RE, "an absolute path"), from_inventory=True),
    Option("vnet_prefix", str, None, "overlay CIDR for VNET_PREFIX (default: the Flannel "
           "network, else the docker network's subnet)", nullable=True,
           check=matching(CIDR_RE, "a CIDR such as 172.30.0.0/16"), from_inventory=True),
    Option("host_ip_prefix", str, None, "host subnet for HOST_IP_PREFIX (default: the "
           "subnet of the host's data address)", nullable=True,
           check=matching(CIDR_RE, "a CIDR such as 10.141.184.0/21"), from_inventory=True),
    Option("keep_router", bool, False, "leave a router netrun started running at the end",
           from_inventory=True),
    Option("router_timeout", (int, float), 30, "seconds for a router to publish the library",
           check=number(0, strict=True, maximum=3600)),
)
# fmt: on


class FreeFlow(DockerMode):
    """Docker mode plus FreeFlow routers and the preloaded socket library."""

    name = "freeflow"
    options = OPTIONS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.vnet: dict[str, str] = {}

    def images(self, host: Host) -> list[str]:
        return [str(self.value("image", host)), str(self.value("router_image", host))]

    def library_path(self, host: Host) -> str:
        return f"{str(self.value('freeflow_dir', host)).rstrip('/')}/{LIBRARY}"

    # -- routers --------------------------------------------------------------------------
    def host_prefix(self, host: Host) -> str:
        explicit = self.value("host_ip_prefix", host)
        if explicit:
            return str(explicit)
        probed = getattr(getattr(self.ctx.facts.get(host.name), "nic", None), "network", None)
        if probed:
            return str(probed)
        res = host.run(["ip", "-o", "-4", "addr", "show"], timeout=30, check=False)
        for line in res.stdout.splitlines():
            fields = line.split()
            if "inet" in fields and fields.index("inet") + 1 < len(fields):
                try:
                    iface = ipaddress.ip_interface(fields[fields.index("inet") + 1])
                except ValueError:
                    continue
                if str(iface.ip) == host.data_ip:
                    return str(iface.network)
        raise ModeError(
            f"{host.name}: cannot tell the subnet of data address {host.data_ip} from "
            f"'ip -o -4 addr show' (exit {res.exited}, {len(res.stdout)} bytes); set "
            "host_ip_prefix (inventory netrun_host_ip_prefix)"
        )

    def vnet_prefix(self, host: Host) -> str:
        explicit = self.value("vnet_prefix", host)
        if explicit:
            return str(explicit)
        res = host.run(
            ["cat", str(self.value("flannel_subnet_env", host))], timeout=30, check=False
        )
        network = parse_subnet_env(res.stdout).get("FLANNEL_NETWORK") if res.ok else None
        if network:
            return network
        out = self.dk_run(
            host, dk.network_inspect_command(str(self.value("network", host)), self.docker(host))
        )
        subnets = dk.parse_network(out)["subnets"]
        if not subnets:
            raise ModeError(f"{host.name}: cannot tell the overlay CIDR; set vnet_prefix")
        return str(subnets[0])

    def library_ready(self, host: Host) -> bool:
        res = host.run(["test", "-s", self.library_path(host)], timeout=30, check=False)
        return res.ok

    def ensure_router(self, host: Host) -> None:
        """Reuse a running router with the library in place, or start one and wait for it."""
        docker, name = self.docker(host), str(self.value("router_name", host))
        res = host.run(dk.inspect_command([name], docker), timeout=30, check=False)
        infos = dk.parse_inspect(res.stdout) if res.ok else []
        info = infos[0] if infos else None
        record: dict[str, Any] = {"name": name, "image": self.value("router_image", host)}
        self.details.setdefault("routers", {})[host.name] = record
        image = str(self.value("router_image", host))
        wanted = self.details.get("image_ids", {}).get(image, {}).get(host.name)
        labels = self.container_labels(host, name) if info is not None else {}
        # a router netrun left with another image (the stand-in, say) gives way to this one
        stale = (
            info is not None and labels.get(dk.LABEL) == "1" and wanted not in (None, info.image_id)
        )
        if info is not None and info.running and not stale and self.library_ready(host):
            mine = labels.get(dk.RUN_LABEL) == self.ctx.run_id
            record.update(reused=not mine, id=info.id, image_id=info.image_id)
            return
        if info is not None:
            if labels.get(dk.LABEL) != "1":
                raise ModeError(
                    f"{host.name}: a container named '{name}' exists but is not a healthy "
                    "router (and netrun did not start it); remove it or set router_name"
                )
            host.run(dk.rm_command([name], docker), timeout=60, check=False)
        labels = {dk.LABEL: "1", "netrun.role": "router"}
        if not self.value("keep_router", host):
            labels[dk.RUN_LABEL] = self.ctx.run_id
        argv = dk.run_command(
            str(self.value("router_image", host)),
            name=name,
            labels=labels,
            docker=docker,
            env={"HOST_IP_PREFIX": self.host_prefix(host)},
            volumes=[f"{self.value('freeflow_dir', host)}:/freeflow"],
            privileged=True,  # FreeFlow's router programs the host network: it needs it
            net_host=True,
        )
        # A library left by an earlier router must not pass for this one's readiness.
        gone = host.run(["rm", "-f", self.library_path(host)], timeout=30, check=False)
        if not gone.ok:
            raise ModeError(
                f"{host.name}: cannot remove the old {self.library_path(host)} before starting "
                "the router (it belongs to root): set ansible_become: true"
            )
        self.dk_run(host, argv, timeout=120)
        record["reused"] = False
        deadline = time.monotonic() + float(self.test.value("router_timeout"))
        while True:
            res = host.run(dk.inspect_command([name], docker), timeout=30, check=False)
            found = dk.parse_inspect(res.stdout) if res.ok else []
            running = bool(found) and found[0].running
            if running and self.library_ready(host):
                break
            if not running or time.monotonic() > deadline:
                logs = host.run(dk.logs_command(name, docker), timeout=30, check=False)
                tail = " | ".join((logs.stdout + logs.stderr).strip().splitlines()[-3:])
                what = (
                    "exited at once"
                    if not running
                    else f"did not publish {self.library_path(host)} within "
                    f"{self.test.value('router_timeout')}s"
                )
                raise ModeError(
                    f"{host.name}: FreeFlow router '{name}' {what}; check the router image "
                    f"{self.value('router_image', host)}" + (f" (logs: {tail})" if tail else "")
                )
            if self.ctx.stopping.wait(0.1):  # an interrupted parallel run: stop polling
                raise Cancelled(host.name)
        record.update(id=found[0].id, image_id=found[0].image_id)

    def container_labels(self, host: Host, name: str) -> dict[str, str]:
        return self._labels(host, ["inspect", name])

    def image_labels(self, host: Host, image: str) -> dict[str, str]:
        return self._labels(host, ["image", "inspect", image])

    def _labels(self, host: Host, what: list[str]) -> dict[str, str]:
        """Labels of a container or image (``docker [image] inspect``), {} when unknown."""
        argv = [self.docker(host), *what[:-1], "--format", "{{json .Config.Labels}}", what[-1]]
        res = host.run(argv, timeout=30, check=False)
        try:
            labels = json.loads(res.stdout) if res.ok else {}
        except ValueError:
            labels = {}
        return labels if isinstance(labels, dict) else {}

    # -- DockerMode hooks ---------------------------------------------------------------
    def before_apps(self) -> None:
        def prepare(host: Host) -> None:
            self.ensure_router(host)
            self.vnet[host.name] = self.vnet_prefix(host)

        run_on_both([self.server, self.client], prepare, deadline=300)
        standin = self.image_labels(self.server, str(self.value("router_image", self.server)))
        self.details["vnet_prefix"] = dict(self.vnet)
        self.details["router_image"] = self.value("router_image", self.server)
        if standin.get("netrun.standin"):
            self.details["standin"] = (
                "emulated lab: the router is a stand-in whose library passes every call "
                "through; the orchestration is real, the acceleration is not"
            )

    def app_env(self, host: Host) -> dict[str, str]:
        return {
            "VNET_PREFIX": self.vnet[host.name],
            "LD_PRELOAD": f"/freeflow/{LIBRARY}",
        }

    def app_volumes(self, host: Host) -> list[str]:
        return [f"{self.value('freeflow_dir', host)}:/freeflow"]

    def after_apps(self, infos: dict[str, dk.ContainerInfo]) -> None:
        ends = {"server": self.server, "client": self.client}
        loaded: dict[str, bool] = {}
        for role, info in infos.items():
            host = ends[role]
            maps = f"/proc/{int(info.pid or 0)}/maps"
            res = host.run(
                f"grep -c {shlex.quote(LIBRARY)} {shlex.quote(maps)}",
                timeout=30,
                check=False,
            )
            loaded[role] = res.ok and res.stdout.strip() not in ("", "0")
        self.details["library_loaded"] = loaded
        missing = [f"{role} on {ends[role].name}" for role, ok in loaded.items() if not ok]
        if missing:
            raise ModeError(
                f"FreeFlow is not active for the {' and '.join(missing)}: {LIBRARY} is not "
                "loaded in the container, so this would measure plain Docker; check "
                "freeflow_dir and the router"
            )

    def measure(self, repeat: int) -> Measurement:
        """The measurement, with the counters that prove (or refute) acceleration."""
        m, path = pathbytes.around(self, lambda: super(FreeFlow, self).measure(repeat))
        accelerated, crossed, why = pathbytes.verdict(
            path, m.result.bytes_received, m.result.sender
        )
        m.details.update(
            path_bytes=path,
            accelerated=accelerated,
            crossed_overlay=crossed,
            path_check=why,
            unavailable=dict(UNAVAILABLE),
        )
        if accelerated:  # the data left the overlay: the host's MTU sets the ceiling
            m.details["overlay_mtu"] = None
        return m


MODE = FreeFlow
