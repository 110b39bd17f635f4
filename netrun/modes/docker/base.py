"""What the container modes' helpers see of a container test: its containers, their
state, and the few steps each mode family defines (docker, flannel, freeflow).

The helpers beside it (launch, engine, pathbytes, ends, and the savers: savers.keep,
savers.probe, savers.client, savers.serverend) take a ContainerMode;
netrun.modes.docker.mode's DockerMode is the one that runs them, so they never import it.
"""

from __future__ import annotations

import contextlib
import shlex
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from netrun.cleanup import labels
from netrun.cleanup.ledger import Scope
from netrun.errors import ModeError, NetrunError
from netrun.hosts.host import Host, folder_key
from netrun.modes.base import Mode
from netrun.modes.docker.ends import ContainerEnd
from netrun.tools import docker as dk
from netrun.tools.ends import Carried, End, T


class ContainerMode(Mode):
    """A test whose two ends run in containers on their hosts' engines."""

    containers = True
    #: Whether each repeat records the bytes along its path (netrun.modes.docker.pathbytes).
    counts_path: ClassVar[bool] = False
    #: The repeat being measured (netrun.tools.savers.sweep: is it a host's last measurement?).
    repeat = 1

    def carry(
        self,
        repeat: int,
        port: int,
        leg: Callable[[str, int], T],
        moved: Callable[[T], Mapping[str, int]] | None = None,
    ) -> Carried[T]:
        """A tool's client leg towards the server container's address; in a path-bytes
        mode, with what it ``moved`` judged on the bytes along its path (netrun.modes.
        docker.carry). The containers serve the next test only once it measured
        (``healthy``), and the mode's checks after it (``checked``: Flannel's flanneld)
        fail the repeat."""
        self.repeat = repeat
        self.healthy = False  # until this repeat measured: a failed one hands nothing on
        address = self.end("server").address
        details: dict[str, Any] = {"server_ip": self.server_ip}
        value = self.carry_leg(lambda: leg(address, port), moved, details)
        self.checked()
        self.healthy = True
        return Carried(value, details)

    def carry_leg(
        self,
        leg: Callable[[], T],
        moved: Callable[[T], Mapping[str, int]] | None,
        details: dict[str, Any],
    ) -> T:
        """The leg, and what the mode proves around it into ``details`` (the path-bytes
        modes: netrun.modes.docker.carry); here the leg alone."""
        return leg()

    def judged(self, details: dict[str, Any], accelerated: bool) -> None:
        """What the mode adds to a path-counted repeat's details (FreeFlow: whether it
        left the overlay)."""

    def resident_port(self) -> int:
        """The port the tool's resident server listens on in its container: its own fixed
        one (Tool.resident_port), else the test's."""
        return self.tool.resident_port or int(self.value("port"))

    def tool_client(self, address: str) -> list[str]:
        """One repeat's client argv of the test's tool (Tool.resident_client) towards the
        resident server at ``address`` (unwrapped)."""
        client = self.tool.resident_client
        if client is None:
            raise ModeError(f"tool {self.tool.name} has no client for a server it keeps")
        return client(self, address, self.resident_port())

    def ride(self, role: str, script: str) -> tuple[str, Callable[[Any], Any]] | None:
        """What the ``role`` end sends for ``script`` (and reads back from its result),
        where a reading rides on it; None: it is sent as it is."""
        return None

    def checked(self) -> None:
        """What the mode checks after each repeat (Flannel: its flanneld still runs)."""

    def place(self, role: str) -> End:
        """The end of ``role``: its container (netrun.modes.docker.ends)."""
        return ContainerEnd(self, role)

    def preview(self) -> list[tuple[str, str]] | None:
        """Both containers' ``docker run`` (no host is contacted: netrun.run.preview), then
        each repeat's client as the tool builds it through the client's end (its server is
        the server container's PID 1)."""
        tool = self.tool.preview
        if tool is None:
            return None
        runs = [(role, shlex.join(self.app_argv(role, self.hosts[role]))) for role in self.names]
        each = [(f"{role}, each repeat", line) for role, line in tool(self) if role == "client"]
        return [*runs, *each]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: (host, container name) of everything this test started, for teardown.
        self.started: list[tuple[Host, str]] = []
        self.server_ip: str | None = None
        #: role -> host PID of the container's PID 1 (its network namespace's counters).
        self.pids: dict[str, int | None] = {}
        #: role -> the container's eth0 MTU, read when it became ready.
        self.mtus: dict[str, int | None] = {}
        self.names = {
            "server": f"netrun-{self.ctx.run_id}-{self.test.tag}-server",
            "client": f"netrun-{self.ctx.run_id}-{self.test.tag}-client",
        }
        #: The containers' time bounds' undo records, a scope of the run's ledger of their
        #: own: they go with the containers (netrun.modes.docker.savers.keep).
        self.bounds: Scope = self.ctx.ledger.scope("containers")
        #: role -> the last byte counter reading of that end (netrun.modes.docker.pathbytes).
        self.counters: dict[str, Any] = {}
        #: Whether the containers may serve the next test (setup and the last repeat ok).
        self.healthy = False
        #: Whether the client end's next command carries the end's counter readings
        #: (``ride``, during a path-counted leg).
        self.riding: bool = False
        #: The tests that used these containers before this one, when it adopted them.
        self.kept_by: list[str] = []

    # -- helpers ------------------------------------------------------------------------------
    def docker(self, host: Host) -> str:
        return str(self.value("docker", host))

    def labels(self, role: str) -> dict[str, str]:
        return {
            labels.LABEL: "1",
            labels.RUN_LABEL: self.ctx.run_id,
            labels.HOST_LABEL: folder_key(self.hosts[role].name),
            "netrun.test": self.test.name,
            "netrun.role": role,
        }

    def stop_flow(self) -> bool:
        """Kill what runs in the client container but its PID 1 (the repeat's ``docker
        exec`` of the client; netrun.tools.docker.stop_execs_script): the client ends with
        iperf3's own error, and both containers serve the next repeat."""
        script = dk.stop_execs_script(self.names["client"], self.docker(self.client))
        with contextlib.suppress(NetrunError):
            self.client.run(script, timeout=20, sudo=self.client.become, check=False)
        return True

    def own_procs(self, host: Host) -> dict[str, int | None]:
        """name -> host pid (None: not known yet) of each process the mode itself runs on
        ``host`` beside the containers, whose CPU the counter readings read
        (netrun.modes.docker.pathbytes.own_words): none here, FreeFlow's router there."""
        return {}

    # -- defined by each container mode ---------------------------------------------------
    def images(self, host: Host) -> list[str]:
        """The images its containers on ``host`` run."""
        raise NotImplementedError

    def app_argv(self, role: str, host: Host) -> list[str]:
        """``docker run -d`` of one end's container."""
        raise NotImplementedError

    def lead(self, role: str, host: Host) -> str:
        """sh the end's start needs begun early (FreeFlow's router): whoever sends
        ``launch_body`` sends this first in the same script, beside the engine and image
        checks where they are made (launch.preamble, after the run's undo record). Called
        before ``launch_body``, which may use what it worked out. Empty by default."""
        return ""

    def launch_body(self, role: str, host: Host) -> str:
        """sh starting one end's container (with its undo record, noted in ``bounds``)."""
        raise NotImplementedError

    def arm_client(self, tag: str) -> Any:
        """The first repeat's client, started during the client host's probe."""
        raise NotImplementedError

    def server_wait(self, served: int | None, reading: str = "") -> Any:
        """The server host's wait for the repeat's end (netrun.modes.docker.savers.serverend)."""
        raise NotImplementedError

    def server_done(self, served: int | None, waiting: Any) -> tuple[str | None, int | None]:
        """The server end's reading once the repeat ended, and the tests it has served."""
        raise NotImplementedError
