"""Docker: the test tool's server and client each run in a container on their host's engine.

Both containers are long-lived for the test: each one's PID 1 is the tool's server
(Tool.resident, so the client container idles as one too), and each repeat is a ``docker
exec`` of the tool's client in the client container (Tool.resident_client, run by
``resident_client`` with the savers; or the tool's own leg, ``carry``). So the container
start cost is paid once per test, every process in both containers carries the
container's environment (FreeFlow's LD_PRELOAD is checked on PID 1), and any image with
the tool works, without a shell or ``sleep`` in it. The client reaches the server
container's own address on the named network. The mode names no tool.

The flannel and freeflow modes build on this one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from netrun.cleanup import undo
from netrun.core.measurement import Measurement
from netrun.core.mtuplan import wanted
from netrun.core.options import Option, expecting, matching, number
from netrun.core.programs import Program
from netrun.errors import ModeError
from netrun.hosts.command import CommandResult
from netrun.hosts.group import in_parallel
from netrun.hosts.host import Host
from netrun.modes import sameend
from netrun.modes.docker import carry, engine, launch, pathbytes, ready
from netrun.modes.docker.base import ContainerMode
from netrun.modes.docker.mtu import follow_container
from netrun.modes.docker.savers import client as armedexec
from netrun.modes.docker.savers import keep, probe, serverend
from netrun.tools import context as host_context
from netrun.tools import docker as dk
from netrun.tools.ends import T
from netrun.tools.savers.model import Saver, Savers

if TYPE_CHECKING:
    from netrun.inventory.model import Inventory
    from netrun.modes.base import Planned, RunContext
    from netrun.tools.savers.prestart import Prestart

# fmt: off
OPTIONS: tuple[Option, ...] = (
    Option("image", str, "networkstatic/iperf3", "iperf3 image for both ends",
           check=expecting("an image reference such as networkstatic/iperf3:latest",
                           dk.is_image_reference),
           from_inventory=True),
    Option("network", str, "bridge", "docker network the containers join",
           check=matching(dk.NAME_RE.pattern, "a docker network name"), from_inventory=True),
    Option("pull", str, "if-missing", "when to pull the image",
           choices=("if-missing", "always", "never"), from_inventory=True),
    Option("image_archive", str, None, "image tarball on the controller: uploaded and "
           "docker-loaded when the image is missing", nullable=True, from_inventory=True),
    Option("docker", str, "docker", "the docker command on the hosts",
           check=matching(r"[A-Za-z0-9_./-]{1,200}", "a command name or path"),
           from_inventory=True),
    Option("start_timeout", (int, float), 30, "seconds for containers to become ready",
           check=number(0, strict=True, maximum=3600)),
)
# fmt: on


class DockerMode(ContainerMode):
    """The tool's server and client in containers, talking over a docker network."""

    name = "docker"
    options = OPTIONS
    #: The tools it runs in containers (each server its PID 1: Tool.resident).
    tools: ClassVar[tuple[str, ...] | None] = ("iperf3", "iperf2", "netperf")
    containers = True
    #: Its first containers started in the probes, each repeat's client armed, containers
    #: kept for the next test, the server end read and (in sequential runs) each host swept
    #: by a command sent with the client: the tool's client against the resident server.
    savers = Savers.of(
        Saver.PROBE_START, Saver.ARMED_CLIENT, Saver.KEEP_CONTAINERS, Saver.SERVER_WAIT,
        sequential_only=(Saver.EARLY_SWEEP,),
    )  # fmt: skip
    needs: ClassVar[Mapping[str, tuple[str, ...]]] = {"server": ("docker",), "client": ("docker",)}
    installs = (Program("docker", "netrun_docker", "docker.io", "docker-ce (or moby-engine)"),)

    @classmethod
    def probe_starts(
        cls, plans: Sequence[Planned], inventory: Inventory, ctx: RunContext
    ) -> list[Prestart]:
        """Both containers of the run's first test, started in their hosts' probes, and
        its client's ``docker exec`` armed before the client host's
        (netrun.modes.docker.savers.probe)."""
        return probe.plan(cls, plans, inventory, ctx)

    # -- containers -------------------------------------------------------------------------
    def app_env(self, host: Host) -> dict[str, str]:
        """Extra environment of the test's containers (FreeFlow sets LD_PRELOAD here)."""
        return {}

    def app_volumes(self, host: Host) -> list[str]:
        return []

    def app_argv(
        self,
        role: str,
        host: Host,
        gate: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> list[str]:
        """``docker run -d`` of one end's container: PID 1 is the tool's server for the
        whole test (Tool.resident), on its fixed port (Tool.resident_port) or the test's.
        ``gate`` (``sh -c``'s script and ``$0``) runs first as PID 1 and execs the server
        (FreeFlow's wait for its router's library); ``env`` replaces ``app_env``'s."""
        resident = self.tool.resident
        if resident is None:
            raise ModeError(f"tool {self.tool.name} keeps no server in a container")
        entrypoint, *args = resident(self.resident_port())
        if gate:
            entrypoint, args = "sh", ["-c", *gate, entrypoint, *args]
        return dk.run_command(
            str(self.value("image", host)),
            args,
            name=self.names[role],
            labels=self.labels(role),
            docker=self.docker(host),
            network=str(self.value("network", host)),
            env=self.app_env(host) if env is None else env,
            volumes=self.app_volumes(host),
            entrypoint=entrypoint,
        )

    def start_extra(self, role: str, host: Host) -> str:
        """sh run before the container starts, in the same round trip (FreeFlow's router,
        Flannel's lease); it sets ``go=1`` for the container to start. Read back by
        ``read_sections``."""
        return "go=1"

    def ready_extra(self, role: str, host: Host) -> str:
        """sh run once the container listens, ``$pid`` its PID 1 (the preload check, the
        server end's first counters: every container mode reads CPU around a test)."""
        if role == "server":
            nic = pathbytes.host_nic(self, host)
            reading = pathbytes.shell_reading(nic=nic, own=self.own_procs(host))
            return host_context.settled(f"echo ==netrun:counters==; {reading}")
        return ""

    def env_vars(self, host: Host) -> dict[str, str]:
        """Tokens of ``app_env`` values that the host works out (see launch.start)."""
        return {}

    def read_sections(self, role: str, host: Host, found: dict[str, str]) -> None:
        """Read what ``start_extra`` and ``ready_extra`` printed."""
        logs = dk.logs_of(found)
        if role == "server" and "counters" not in found and ("logs" in found or "logjson" in found):
            serverend.count_served(self, logs)
        if "counters" in found:
            reading = pathbytes.parse(found["counters"])
            if reading[0] and reading[1]:
                self.counters[role] = reading
                serverend.count_served(self, logs)

    def launch_body(self, role: str, host: Host) -> str:
        """sh starting one end's container (with its undo record, noted in ``bounds``)."""
        name = self.names[role]
        self.started.append((host, name))  # before starting: teardown finds it whatever happens
        # A time bound that holds when the controller vanishes: a watchdog on the host
        # removes the container (the tool's server, and any docker exec client in it) after
        # the longest the tests that may share it can take (netrun.modes.docker.savers.keep); the
        # container's undo record stops the watchdog.
        start_timeout = float(self.test.value("start_timeout"))
        bound = start_timeout + keep.shared_bound(self.ctx, self.test, self.tool)
        command, stop = launch.start(
            self.app_argv(role, host),
            name,
            self.docker(host),
            self.ctx.workdir(host),
            bound,
            min(2.0, start_timeout),
            extra=self.ready_extra(role, host),
            env_vars=self.env_vars(host),
            ready=self.tool.resident_ready,
        )
        # in the containers' scope: the record goes with the containers
        # (netrun.modes.docker.savers.keep)
        record = self.bounds.record(host, stop, what=f"stop the time bound of container {name}")
        return undo.guarded(record, launch.gated(self.start_extra(role, host), command))

    def launch(self, role: str, host: Host) -> dk.Readiness:
        """Start one end's container: one round trip with the run's first checks on the
        host, the container's undo record, ``docker run``, its time bound and the first
        readiness wait (netrun.modes.docker.launch), unless it rode on the host's probe
        (netrun.modes.docker.savers.probe)."""
        res = probe.adopt(self, role, host)
        if res is None:
            timeout = float(self.test.value("start_timeout")) + 180
            lead = self.lead(role, host)  # before the body, which reads what it worked out
            res = engine.checked_run(self, host, self.launch_body(role, host), timeout, lead)
        found = launch.sections(res.stdout)
        self.read_sections(role, host, found)
        if "run" not in found:
            if "go" in found or not res.ok:
                raise ModeError(
                    f"{host.name}: cannot write an undo record in {self.ctx.workdir(host)} "
                    f"or start the {role} container: "
                    f"{(res.stderr or res.stdout).strip()[-200:]}; check netrun_remote_tmp"
                )
            raise ModeError(f"{host.name}: the {role} container was not started")
        rc, _, text = found["run"].partition("\n")
        if rc.strip() != "0":
            if "network" in text and "not found" in text:
                raise ModeError(
                    f"{host.name}: docker network '{self.value('network', host)}' does not "
                    "exist; create it or set network: to one listed by 'docker network ls'"
                )
            raise dk.DockerError(f"{host.name}: docker run of {role} container failed", text)
        return dk.parse_ready(res.stdout, ready=self.tool.resident_ready)

    def container_mtu(self, host: Host, name: str) -> int | None:
        res = host.run(
            dk.exec_command(name, ["cat", "/sys/class/net/eth0/mtu"], self.docker(host)),
            timeout=30,
            check=False,
        )
        text = res.stdout.strip()
        return int(text) if res.ok and text.isdigit() else None

    def follow_mtu(self, host: Host, info: dk.ContainerInfo) -> None:
        """With ``mtu:``, the container's network gets the overlay's MTU (netrun.run.mtu)."""
        want = wanted(self.test, lambda _name: (self.overlay_device, self.containers))
        if want is not None and want.containers:
            follow_container(self, host, info.pid, want.containers)

    def server_address(self, info: dk.ContainerInfo, host: Host) -> str:
        network = str(self.value("network", host))
        ip = info.ips.get(network) or next(iter(info.ips.values()), None)
        if not ip:
            raise ModeError(
                f"{host.name}: server container {info.name} has no IP address on network {network}"
            )
        return ip

    # -- Mode -----------------------------------------------------------------------------
    def images(self, host: Host) -> list[str]:
        return [str(self.value("image", host))]

    def after_launch(self) -> None:
        """Hook once both containers are up (Flannel's lease in the details)."""

    def after_apps(self, infos: dict[str, dk.ContainerInfo]) -> None:
        """Hook to check the started containers (flannel lease, FreeFlow preload)."""

    def setup(self) -> None:
        # The one decision on which containers this test measures with
        # (netrun.modes.docker.savers.keep): the previous test's, adopted with their names,
        # or its own, started below. What names a container (the armed client's docker
        # exec) comes after it.
        kept = None
        if self.savers.allows(Saver.KEEP_CONTAINERS):
            kept = keep.take(self.ctx, self.test, self.tool)
        if kept is not None:
            keep.adopt(self, kept)
        armedexec.arm_next(self, 1)  # its login overlaps the containers' start
        if kept is not None:
            return
        infos: dict[str, dk.ContainerInfo] = {}
        ends = {"server": self.server, "client": self.client}

        def start(role: str) -> None:
            host = ends[role]
            info = ready.wait(self, role, host, self.launch(role, host))
            self.follow_mtu(host, info)
            # With mtu: the container's MTU changed after it became ready: read it again.
            mtu = self.container_mtu(host, info.name) if self.test.options.get("mtu") else None
            mtu = mtu if mtu is not None else self.mtus.get(role)
            infos[role] = info
            self.pids[role] = info.pid
            self.details.setdefault("containers", {})[role] = {
                "host": host.name,
                "name": info.name,
                "id": info.id,
                "ips": dict(info.ips),
                "mtu": mtu,
                "image_id": info.image_id,
            }

        deadline = float(self.test.value("start_timeout")) + 300
        if self.server.name == self.client.name:  # one host: its first checks run once
            for role in ends:
                start(role)
        else:  # both ends at once, each in one round trip (netrun.modes.docker.launch)
            result = in_parallel({r: functools.partial(start, r) for r in ends}, deadline=deadline)
            if result.failed:
                raise next(iter(result.failed.values()))
        self.server_ip = self.server_address(infos["server"], self.server)
        self.details["network"] = self.value("network", self.server)
        self.details["image"] = self.value("image", self.server)
        self.details["server_ip"] = self.server_ip
        network = str(self.value("network", self.server))  # one address for both ends?
        if why := sameend.containers_problem(self.test, self.server_ip, infos, network):
            raise ModeError(why)
        mtus = [c.get("mtu") for c in self.details["containers"].values() if c.get("mtu")]
        if mtus:
            self.details["container_mtu"] = min(mtus)
            self.details.setdefault("overlay_mtu", min(mtus))
        self.after_launch()
        self.after_apps(infos)
        self.healthy = True

    def resident_client(self, repeat: int) -> CommandResult:
        """The repeat's client of the test's tool (Placement.resident_client) in its
        container: its armed command fired, else a command of its own, the client end's
        counters riding on it (the server end's wait is pathbytes.around's); then the
        next repeat's armed."""
        assert self.server_ip is not None
        self.repeat = repeat
        cmd = self.end("client").wrap(self.tool_client(self.server_ip))
        self.healthy = False  # until this repeat measured: a failed one hands nothing on

        def plain() -> CommandResult:
            wrapped = self.wrap_client(cmd)
            return self.client.run(wrapped, timeout=float(self.test.deadline), check=False)

        res = self.unwrap_client(armedexec.run_client(self, repeat, plain))
        armedexec.arm_next(self, repeat + 1)  # the next repeat's login, while this one ends
        return res

    def server_wait(self, served: int | None, reading: str = "") -> Any:
        """The server host's wait for the repeat's end (netrun.modes.docker.savers.serverend)."""
        return serverend.server_wait(self, served, self.repeat, reading)

    def server_done(self, served: int | None, waiting: Any) -> tuple[str | None, int | None]:
        return serverend.server_done(self, served, waiting)

    def arm_client(self, tag: str) -> armedexec.ArmedExec:
        """The first repeat's client, started during the client host's probe
        (netrun.tools.savers.prestart; ``tag`` is armedexec.tag's)."""
        return armedexec.arm(self, 1)

    def wrap_client(self, argv: list[str]) -> list[str] | str:
        """The client's command as sent, the counters read around it."""
        return pathbytes.wrap(
            argv,
            self.pids.get("client"),
            pathbytes.host_nic(self, self.client),
            self.own_procs(self.client),
        )

    def unwrap_client(self, res: CommandResult) -> CommandResult:
        res, before, after = pathbytes.unwrap(res)
        self.counters.update(client_before=before, client_after=after)
        return res

    def carry_leg(
        self,
        leg: Callable[[], T],
        moved: Callable[[T], Mapping[str, int]] | None,
        details: dict[str, Any],
    ) -> T:
        """In a path-bytes mode, a leg whose tool says what it ``moved`` runs between two
        readings of both ends, judged on them (netrun.modes.docker.carry)."""
        if not self.counts_path or moved is None:
            return leg()
        value, found, accelerated = carry.with_path(self, leg, moved)
        details.update(found)
        self.judged(details, accelerated)
        return value

    def proving(self, measure: Callable[[], Measurement]) -> Measurement:
        """A tool's whole measurement with both ends' counters around it, judged in a
        path-bytes mode on what its tool says it moved (netrun.modes.docker.carry); once
        it measured, the containers may serve the next test."""

        def measured() -> Measurement:
            m = measure()
            self.healthy = True
            return m

        return carry.proving(self, measured)

    def ride(self, role: str, script: str) -> tuple[str, Callable[[Any], Any]] | None:
        """The client end's first command of a path-counted leg, with the end's counters
        read around it (carry.ride), once."""
        if role != "client" or not self.riding:
            return None
        self.riding = False
        return carry.ride(self, script)

    def teardown(self) -> None:
        """Hand the containers to the next test that wants the same ones, or leave them
        to the final sweep, or remove them on the hosts' next command
        (netrun.modes.docker.savers.keep):
        never a round trip of its own."""
        armedexec.forget(self)
        keep.hand_over(self)


MODE = DockerMode
