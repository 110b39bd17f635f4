"""The ends a mode places and a tool measures through: ``End``, and what a mode cannot carry.

A mode places a test's ends (bare metal: on the hosts themselves; docker: in a container
on each host; FreeFlow: in a container, through its socket library; TURN: on the hosts,
the client's traffic through a relay); a tool builds its commands, runs them through
the ends and parses what they print. A tool never asks which mode placed it, as pyinfra's
facts and operations never ask which connector runs them (``pyinfra/connectors/base.py``:
run a shell command, put a file).

An End is:

- ``host``: the machine it runs on (its name in errors, the run's folder on it);
- ``address``: what a peer dials to reach it (bare metal: the host's data address; a
  container: its address on the container network; a relay mode's client: the relay's);
- ``bind``: the address a server at this end listens on (on a host its data address,
  in a container the container's own);
- ``program(var, default)``: the program a tool runs there (on a host its inventory
  variable ``var``, e.g. netrun_iperf3, else ``default``; in a container the image's own);
- ``wrap(argv)``: the argv as it runs at this end (bare metal: itself; a container:
  ``docker exec NAME argv``; FreeFlow: with its socket library preloaded);
- ``run(script)``: a shell script on the end's host, its result (a script made of
  ``wrap``-ped argvs runs at the end);
- ``start(argv, ...)``: the argv in the background at the end, bounded by a lifetime,
  its pid in one pid-file format (netrun.hosts.proc.save_pid) written with an undo
  record that stops it: a ``Started`` handle with its output file and pid file; with
  ``ready``, an sh wait run at the end in the same round trip (its answer in the handle);
- ``own_ports``: whether the end has a network namespace of the test's own (a
  container's), where a fixed port is free, or shares the host's with whatever else
  runs there (a tool then picks a free port of a range);
- ``recording(argv, name)``: the argv that records its own pid at the end as it starts
  (in the one format; at ``path(name + ".pid")``), for a client run in the foreground
  that an undo record (``stop_script``) or a stopped flow must be able to stop;
- ``resident``: whether the test's tool keeps its server at this end for the whole test
  (Tool.resident: a container's PID 1), whose output so far ``resident_output`` reads;
  a tool then measures with it instead of starting one per repeat;
- ``at(script)``: sh on the end's host running ``script`` at the end (in a container,
  through its sh);
- ``needs_bind``: whether a server here must bind() each socket it listens on (FreeFlow's
  library carries a listening socket only once bound): a tool then names its data ports;
- ``put(path, text)``: a file at the end (a config the tool reads).

A Kubernetes mode (pods pinned to nodes) fits without new tool code: its End's ``host``
is the node, ``address`` (and ``bind``) the pod IP (the node's for hostNetwork pods),
``wrap`` prefixes ``kubectl exec -n NS POD --``, ``run`` sends the script to the node
that has kubectl (or the controller), and ``start`` keeps its pid file inside the pod;
what the pod network cannot carry it declares as ``Cannot`` records.

A mode whose path to the server needs something per measurement (TURN: a tunnel through
the relay, opened for the client's leg and proven after it) carries the leg itself
(``carry``: the leg dials what the mode gives, the mode proves the path was used).
"""

from __future__ import annotations

import shlex
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from netrun.hosts import proc

if TYPE_CHECKING:
    from netrun.hosts.command import CommandResult
    from netrun.hosts.host import Host


class Workdirs(Protocol):
    """The run-wide part a tool uses: where the run keeps its files on a host, and the
    event set when the run is interrupted (a tool's waits end at it)."""

    @property
    def stopping(self) -> threading.Event: ...

    def workdir(self, host: Host) -> str: ...


class Recorder(Protocol):
    """What an end needs of the mode that placed it: its test's undo stack (every
    netrun.modes.base.Mode is one) and the run's folder on a host."""

    @property
    def ctx(self) -> Workdirs: ...

    def change(
        self,
        host: Host,
        command: str,
        undo: str,
        *,
        what: str,
        timeout: float = 30,
        sudo: bool = False,
        per_run: bool = False,
        check: bool = True,
    ) -> CommandResult: ...


@dataclass(frozen=True)
class Started:
    """A process started at an end: where its output and its pid file are."""

    end: End
    output: str
    pidfile: str
    #: The start's round trip, when it carried a ``ready`` wait (its exit status is the
    #: wait's); None otherwise.
    answer: CommandResult | None = None

    def stop(self, *, timeout: float = 20) -> CommandResult:
        """Stop it now, by its pid file (identity checked); its undo record stays for
        teardown, harmless once it is gone."""
        script = self.end.stop_script(self.pidfile)
        return self.end.run(script, timeout=timeout, check=False)


class End(Protocol):
    """One placed end of a test, as a tool sees it (see the module docstring)."""

    @property
    def role(self) -> str: ...
    @property
    def host(self) -> Host: ...
    @property
    def address(self) -> str: ...
    @property
    def bind(self) -> str: ...
    @property
    def workdir(self) -> str: ...
    @property
    def own_ports(self) -> bool: ...

    def program(self, var: str, default: str) -> str: ...

    def wrap(self, argv: Sequence[str]) -> list[str]: ...

    def run(self, script: str, *, timeout: float, check: bool = False) -> CommandResult: ...

    def start(
        self,
        argv: Sequence[str],
        name: str,
        *,
        lifetime: float,
        what: str,
        ready: str = "",
    ) -> Started: ...

    def stop_script(self, pidfile: str) -> str: ...

    def path(self, name: str) -> str: ...

    def recording(self, argv: Sequence[str], name: str) -> tuple[list[str], str]: ...

    @property
    def resident(self) -> bool: ...
    @property
    def needs_bind(self) -> bool: ...

    def at(self, script: str) -> str: ...

    def resident_output(self, *, timeout: float = 60) -> str: ...

    def put(self, path: str, text: str, *, timeout: float = 15) -> CommandResult: ...


class HostEnd:
    """An end on the host itself (bare metal, and the hosts' side of the other modes):
    argvs run as they are, peers dial the host's data address."""

    #: The host's network namespace is shared with whatever else runs there.
    own_ports = False
    #: A tool starts its own server here for each measurement.
    resident = False
    #: A listening socket here is carried whether or not it was bound.
    needs_bind = False

    def __init__(self, mode: Recorder, role: str, host: Host, address: str | None = None) -> None:
        self.mode = mode
        self.role = role
        self.host = host
        self.address = address or host.data_ip
        self.bind = host.data_ip

    @property
    def workdir(self) -> str:
        return self.mode.ctx.workdir(self.host)

    def program(self, var: str, default: str) -> str:
        return str(self.host.vars.get(var) or default)

    def wrap(self, argv: Sequence[str]) -> list[str]:
        return list(argv)

    def run(self, script: str, *, timeout: float, check: bool = False) -> CommandResult:
        return self.host.run(script, timeout=timeout, check=check)

    def start(
        self,
        argv: Sequence[str],
        name: str,
        *,
        lifetime: float,
        what: str,
        ready: str = "",
    ) -> Started:
        """``argv`` in the background under ``timeout`` (it leads its own process group),
        output in ``<workdir>/<name>.out``, pid in ``<name>.pid``, after an undo record
        that stops it and its process group (a forking server's children, or a server
        slow on SIGTERM that would outlive its SIGKILLed ``timeout``);
        then ``ready`` (sh), if given, in the same round trip."""
        workdir = self.workdir
        out, pidfile = f"{workdir}/{name}.out", f"{workdir}/{name}.pid"
        q = shlex.quote
        bounded = shlex.join(["timeout", "-k", "5", f"{lifetime:g}", *self.wrap(argv)])
        script = (
            f"mkdir -p {q(workdir)} && chmod 700 {q(workdir)} || exit 1\n"
            f"{bounded} > {q(out)} 2>&1 < /dev/null & {proc.save_pid(pidfile)}"
        )
        if ready:
            script = f"{script}\n{ready}"
        undo = proc.kill_recorded(pidfile)
        res = self.mode.change(self.host, script, undo, what=what, check=not ready)
        return Started(self, out, pidfile, res if ready else None)

    def stop_script(self, pidfile: str) -> str:
        """sh on the host stopping the process ``start`` recorded in ``pidfile``."""
        return proc.kill_recorded(pidfile)

    def path(self, name: str) -> str:
        """Where a file named ``name`` of this run lives at this end: the run's folder."""
        return f"{self.workdir}/{name}"

    def recording(self, argv: Sequence[str], name: str) -> tuple[list[str], str]:
        """``argv`` behind a wrapper that records its pid (exec keeps it), and the pid file."""
        return recording(self, argv, name)

    def resident_output(self, *, timeout: float = 60) -> str:
        return ""

    def at(self, script: str) -> str:
        return script

    def put(self, path: str, text: str, *, timeout: float = 15) -> CommandResult:
        q = shlex.quote
        return self.run(f"printf %s {q(text)} > {q(path)}", timeout=timeout, check=True)


def data_iface(facts: Mapping[str, object], host: Host) -> str | None:
    """The data NIC the probe found on ``host`` (``facts``: host name -> its
    netrun.tools.facts.HostFacts), else its netrun_iface: where a host end's counters
    are read and its link checked after a stall."""
    nic = getattr(facts.get(host.name), "nic", None)
    return getattr(nic, "iface", None) or host.iface


def recording(end: End, argv: Sequence[str], name: str) -> tuple[list[str], str]:
    """``argv`` at ``end`` behind ``sh -c`` recording its pid at the end's
    ``path(name + ".pid")`` in the one format, then exec-ing it (its pid and start time),
    wrapped to run there; and that pid file."""
    pidfile = end.path(f"{name}.pid")
    keep = f'{proc.save_pid(pidfile, "$$")} && exec "$@"'
    return end.wrap(["sh", "-c", keep, "sh", *argv]), pidfile


#: What a tool's leg returns (Carried.value).
T = TypeVar("T")


@dataclass(frozen=True)
class Carried(Generic[T]):
    """A leg carried the mode's way (Placement.carry): what the leg returned, the
    mode's proof of the path (a relay's counters, its relayed address), and a note for
    the raw output (a tunnel's own report)."""

    value: T
    details: Mapping[str, Any] = field(default_factory=dict)
    note: str = ""


@dataclass(frozen=True, kw_only=True)
class Matching:
    """Which tests a mode's record is about: a test matches when every field set here
    matches it (``tool``; each ``options`` key's value, one of a tuple; ``load``: the test
    has a ``load:`` flow)."""

    tool: str | None = None
    options: Mapping[str, Any] | None = None
    load: bool = False

    def matches(self, tool: str, value: Callable[[str], Any]) -> bool:
        """Whether a test of ``tool`` whose options read ``value(name)`` (None for one
        its tool has not) is one this record is about."""
        if self.tool is not None and tool != self.tool:
            return False
        if self.load and not value("load"):
            return False
        for key, wanted in (self.options or {}).items():
            allowed = wanted if isinstance(wanted, tuple) else (wanted,)
            if value(key) not in allowed:
                return False
        return True


@dataclass(frozen=True)
class Cannot(Matching):
    """What a mode cannot carry, declared once as data and checked from the files alone
    (``--check-only`` says so before anything is contacted; the mode's setup refuses the
    test when it starts, and the other tests still run)."""

    #: The line refusing the test; ``{test}`` and ``{mode}`` are filled in.
    why: str


@dataclass(frozen=True)
class Caveat(Matching):
    """Why a kind of test the mode carries fails its path check for a reason of the
    mode's own (FreeFlow sets each of TCP_CRR's connections up over the overlay),
    declared as data: added to that check's reason (Mode.caveat)."""

    note: str


def refusal(
    mode: str, cannot: Sequence[Cannot], test: str, tool: str, value: Callable[[str], Any]
) -> str | None:
    """The one line refusing test ``test`` in ``mode``, from the mode's ``cannot``; None:
    it can carry it."""
    for rule in cannot:
        if rule.matches(tool, value):
            return rule.why.format(test=test, mode=mode)
    return None
