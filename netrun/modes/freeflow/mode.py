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
host NIC carried the test's bytes and the overlay did not. Each end's counter record
also has the router's CPU-seconds over the test (``details.counters.<end>.procs.router``).
Retransmits are
reported unavailable (``details.unavailable``): iperf3 reads them on the idle overlay socket,
and so are the other TCP internals (RTT, windows, path MTU: netrun.tools.iperf3.tcpinfo).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Any

from netrun.cleanup.labels import HOST_LABEL, LABEL, RUN_LABEL
from netrun.core.measurement import Measurement
from netrun.core.options import Option, expecting, matching, number
from netrun.errors import ModeError
from netrun.hosts.host import Host, folder_key
from netrun.modes.docker import launch
from netrun.modes.docker.ends import FreeFlowEnd
from netrun.modes.docker.flannel import OPTIONS as FLANNEL_OPTIONS
from netrun.modes.docker.flannel import PATH_RE
from netrun.modes.docker.mode import DockerMode
from netrun.modes.freeflow import netperf as ff_netperf
from netrun.modes.freeflow import router, sockets
from netrun.tools import docker as dk
from netrun.tools.ends import End

LIBRARY = "libfsocket.so"
#: What iperf3 reports under FreeFlow but cannot know: it reads TCP_INFO with getsockopt on
#: the socket it made, the overlay one, which idles while the router's host socket carries
#: the data (the reference's constant 13.7 KByte cwnd is this effect). Seen on the lab with
#: the real router (FreeFlow tcp d4df2ed5cd01, iperf3 3.12, 2026-12-01): at 941 Mbit/s
#: through the host NIC, every interval said rtt 63 us, cwnd 13980 (10 x the overlay's
#: 1398 MSS), snd_wnd 64512 and pmtu 1450 (the overlay's, not the host's 1500): the idle
#: socket's state after its handshake, not the flow's.
OVERLAY_SOCKET = (
    "FreeFlow: iperf3 reads TCP_INFO (getsockopt) on the idle overlay socket, not on the "
    "host socket that carries the data"
)
CIDR_RE = r"[0-9]{1,3}(\.[0-9]{1,3}){3}/[0-9]{1,2}"
#: Stands for VNET_PREFIX in the container's ``docker run``, which the host's script
#: replaces with what it read (launch.start's env_vars).
VNET_TOKEN = "@@netrun-vnet@@"


def gate(timeout: float, margin: float = 5.0) -> str:
    """``sh -c`` script: wait up to ``timeout`` s and ``margin`` (the host's script gives
    up first and removes the container) for the library ``$0``, then exec ``"$@"`` with it
    preloaded; an image whose sleep takes no fraction sleeps a second a look."""
    looks = max(1, int((timeout + margin) * 100))
    return (
        f'i=0; while [ ! -s "$0" ]; do [ "$i" -lt {looks} ] || '
        '{ echo "netrun: $0 did not appear" >&2; exit 125; }; '
        "sleep 0.01 2>/dev/null || sleep 1; i=$((i + 1)); done; "
        'LD_PRELOAD=$0; export LD_PRELOAD; exec "$@"'
    )


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
    #: The tools proven through FreeFlow's preloaded socket library.
    tools = ("iperf3", "netperf")
    #: What its library cannot carry: UDP (netrun.modes.freeflow.sockets).
    cannot = (sockets.IPERF3_UDP, ff_netperf.UDP_RR)
    #: Why its TCP_CRR is never accelerated (its handshakes cross the overlay).
    caveats = (ff_netperf.CRR,)
    overlay_device = True

    counts_path = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: host name -> VNET_PREFIX, the router plan, whether its image is the stand-in.
        self.vnet: dict[str, str] = {}
        self.plans: dict[str, router.RouterPlan] = {}
        self.standin: dict[str, bool] = {}
        #: role -> whether the library is mapped in that end's container.
        self.loaded: dict[str, bool] = {}

    def images(self, host: Host) -> list[str]:
        return [str(self.value("image", host)), str(self.value("router_image", host))]

    def place(self, role: str) -> End:
        """The end of ``role``: its container, every argv with the library preloaded."""
        return FreeFlowEnd(self, role, f"/freeflow/{LIBRARY}")

    def library_path(self, host: Host) -> str:
        return f"{str(self.value('freeflow_dir', host)).rstrip('/')}/{LIBRARY}"

    # -- routers --------------------------------------------------------------------------
    def lead(self, role: str, host: Host) -> str:
        """The router's claim, lookups and start (router.begin), sent before the start
        script (router.finish): beside the host's engine and image checks where they are
        made."""
        plan = self.router_plan(host)
        self.plans[host.name] = plan
        folder = str(self.value("freeflow_dir", host))
        path = router.claim_file(folder, self.ctx.run_id)
        claim = self.recorded_change(
            host,
            router.claim_script(path, host.name),
            router.unclaim_script(path),
            what=f"remove the claim on {folder}",
            per_run=True,
        )
        return router.begin(plan, claim)

    def start_extra(self, role: str, host: Host) -> str:
        """The host's router, made sure of before the iperf3 container
        (netrun.modes.freeflow.router; its first half is ``lead``)."""
        plan = self.plans[host.name]
        early = launch.ahead(
            self.gated_argv(role, host, plan.timeout),
            self.names[role],
            self.docker(host),
            self.ctx.workdir(host),
            self.env_vars(host),
        )
        return router.finish(plan, early)

    def gated_argv(self, role: str, host: Host, timeout: float) -> list[str]:
        """The end's ``docker run`` that can start beside a router netrun starts (its
        ``docker run`` and the router's, some 0.2-0.3 s each, overlap): PID 1 waits in
        sh for the library, then execs the tool's server with it preloaded. Not in the
        container's environment, or sh itself would start with a library not yet there;
        every ``docker exec`` names it anyway (FreeFlowEnd). An image without sh fails
        this start, and the plain one follows (netrun.modes.docker.launch.start)."""
        env = {k: v for k, v in self.app_env(host).items() if k != "LD_PRELOAD"}
        return self.app_argv(role, host, gate=(gate(timeout), f"/freeflow/{LIBRARY}"), env=env)

    def router_plan(self, host: Host) -> router.RouterPlan:
        docker, name = self.docker(host), str(self.value("router_name", host))
        image = str(self.value("router_image", host))
        labels = {
            LABEL: "1",
            "netrun.role": "router",
            HOST_LABEL: folder_key(host.name),
        }
        explicit = self.value("host_ip_prefix", host)  # else the host reads its subnet
        if not self.value("keep_router", host):
            labels[RUN_LABEL] = self.ctx.run_id
        argv = dk.run_command(
            image,
            name=name,
            labels=labels,
            docker=docker,
            env={"HOST_IP_PREFIX": str(explicit or router.PREFIX_TOKEN)},
            volumes=[f"{self.value('freeflow_dir', host)}:/freeflow"],
            privileged=True,  # FreeFlow's router programs the host network: it needs it
            net_host=True,
        )
        vnet = self.value("vnet_prefix", host)
        return router.RouterPlan(
            docker=docker,
            name=name,
            library=self.library_path(host),
            argv=argv,
            image_id=self.ctx.known.images.get((host.name, image)),
            image=image,
            timeout=float(self.test.value("router_timeout")),
            vnet=str(vnet) if vnet else None,
            subnet_env=str(self.value("flannel_subnet_env", host)),
            network=str(self.value("network", host)),
            scratch=f"{self.ctx.workdir(host)}/router-state.out",
            data_ip=None if explicit else host.data_ip,
        )

    def own_procs(self, host: Host) -> dict[str, int | None]:
        """The router, whose CPU each counter reading on the host reads beside the
        containers' (details.counters.<end>.procs.router): its pid as found in the run,
        or as the start script that rides with the reading finds it."""
        return {"router": self.ctx.family(router.Pids).get(host.name)}

    def ready_extra(self, role: str, host: Host) -> str:
        """Whether the library is mapped in the container's PID 1, once it listens."""
        maps = f'echo ==netrun:maps==; grep -c {shlex.quote(LIBRARY)} "/proc/$pid/maps"'
        return f"{maps}\n{super().ready_extra(role, host)}"

    def env_vars(self, host: Host) -> dict[str, str]:
        return {VNET_TOKEN: "vnet"}

    def read_sections(self, role: str, host: Host, found: dict[str, str]) -> None:
        super().read_sections(role, host, found)
        # started in the probe (netrun.modes.docker.savers.probe): that plan was another instance's
        plan = self.plans.setdefault(host.name, self.router_plan(host))
        state = router.read(found, plan, host.name, self.ctx.run_id)
        self.details.setdefault("routers", {})[host.name] = state.record
        if "pid" in state.record:
            self.ctx.family(router.Pids)[host.name] = state.record["pid"]
        self.vnet[host.name] = state.vnet
        self.standin[host.name] = state.standin
        if "maps" in found:
            self.loaded[role] = found["maps"].strip() not in ("", "0")

    def after_launch(self) -> None:
        self.details["vnet_prefix"] = dict(self.vnet)
        self.details["router_image"] = self.value("router_image", self.server)
        if self.standin.get(self.server.name):
            self.details["standin"] = (
                "emulated lab: the router is a stand-in whose library passes every call "
                "through; the orchestration is real, the acceleration is not"
            )

    def app_env(self, host: Host) -> dict[str, str]:
        return {
            "VNET_PREFIX": VNET_TOKEN,  # the host's script works it out (router.begin)
            "LD_PRELOAD": f"/freeflow/{LIBRARY}",  # as its ends' wraps name it
        }

    def app_volumes(self, host: Host) -> list[str]:
        return [f"{self.value('freeflow_dir', host)}:/freeflow"]

    def after_apps(self, infos: dict[str, dk.ContainerInfo]) -> None:
        ends = {"server": self.server, "client": self.client}
        for role, info in infos.items():
            if role in self.loaded:  # read in the container's start round trip
                continue
            maps = f"/proc/{int(info.pid or 0)}/maps"
            res = ends[role].run(
                f"grep -c {shlex.quote(LIBRARY)} {shlex.quote(maps)}",
                timeout=30,
                check=False,
            )
            self.loaded[role] = res.ok and res.stdout.strip() not in ("", "0")
        loaded = {role: self.loaded[role] for role in ends}
        self.details["library_loaded"] = loaded
        missing = [f"{role} on {ends[role].name}" for role, ok in loaded.items() if not ok]
        if missing:
            raise ModeError(
                f"FreeFlow is not active for the {' and '.join(missing)}: {LIBRARY} is not "
                "loaded in the container, so this would measure plain Docker; check "
                "freeflow_dir and the router"
            )

    def judged(self, details: dict[str, Any], accelerated: bool) -> None:
        """A path-counted repeat (netperf) left the overlay or not, and why not where its
        kind of test keeps crossing it (``caveats``: netrun.modes.freeflow.netperf.CRR)."""
        details["accelerated"] = accelerated
        if not accelerated and (note := self.caveat()):
            details["path_check"] = f"{details['path_check']}; {note}"

    def setup(self) -> None:
        """Refuses, before any container starts, a test FreeFlow cannot carry (refusal)."""
        if why := self.refusal():
            raise ModeError(why)
        super().setup()

    def proving(self, measure: Callable[[], Measurement]) -> Measurement:
        """The measurement with the counters that prove (or refute) acceleration
        (netrun.modes.docker.carry); the socket a tool makes is the overlay one, idle
        while the router's host socket carries the data (``idle_socket``: what a tool
        reads on it is not the flow's); accelerated, the host's MTU sets the ceiling."""
        m = super().proving(measure)
        m.details["idle_socket"] = OVERLAY_SOCKET
        if m.details.get("accelerated"):  # the data left the overlay
            m.details["overlay_mtu"] = None
        return m


MODE = FreeFlow
