"""iperf3 processes on a host: a server that lives for one measurement, and a client run.

The server is started, checked to really listen and, on every exit path, killed by the pid
that the start script recorded. The client records its pid too, so an interrupt or a
deadline can stop it on the host rather than leaving it to run out its duration.
"""

from __future__ import annotations

import contextlib
import math
import shlex
import time
from collections.abc import Callable, Iterator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING

from netrun.cleanup.scripts import SWEPT, SWEPT_LINE
from netrun.errors import CommandTimeout, HostError, NetrunError
from netrun.hosts import proc
from netrun.hosts.command import CommandResult
from netrun.hosts.host import Host
from netrun.hosts.proc import kill_script, read_pid, read_state, state_script, wait_gone
from netrun.tools.iperf3 import readings as iperf3_readings
from netrun.tools.iperf3 import result as iperf3_result
from netrun.tools.iperf3 import server as iperf3_server

if TYPE_CHECKING:
    from netrun.hosts.transport import Started

#: First port tried for servers, and how many ports up from it are candidates.
BASE_PORT = 5201
PORT_SPAN = 20
#: How long an iperf3 may outlive netrun's own deadline for it: the bound (``timeout`` on
#: the host) that still ends it when netrun vanished (SIGKILL, a lost controller).
REMOTE_MARGIN = 10.0
#: Runs argv with its pid in $2 (sh execs it, so that is iperf3's pid, not timeout's),
#: under ``timeout $3`` where the host has it, and removes the pid file once it ended:
#: no round trip of its own for that.
_SETUP = (
    'mkdir -p "$1" && chmod 700 "$1" && f=$2 t=$3 && shift 3 && b= && '
    '{ ! command -v timeout >/dev/null 2>&1 || b="timeout -k 5 $t"; } && '
)
#: The part that runs argv: netrun.tools.iperf3.readings puts counter readings around it.
EXEC = (
    "{ $b sh -c '" + proc.save_pid('"$0"', "$$") + ' && exec "$@"\' "$f" "$@"; r=$?; rm -f "$f"; '
)
_RUN = _SETUP + EXEC
CLIENT_WRAPPER = _RUN + "exit $r; }"
#: CLIENT_WRAPPER once a line came on stdin: the server's port (``-p PORT`` ends argv),
#: and ``sweep`` when the client's host is to be swept right after it (the script in $1,
#: netrun.tools.savers.sweep; SWEPT on stderr when it worked). No line (netrun abandoned it, or
#: vanished): it exits and runs nothing.
ARMED_WRAPPER = (
    'read -r port then || exit 0; case "$port" in ""|*[!0-9]*) exit 0 ;; esac; '
    's=$1; shift; set -- "$@" -p "$port"; '
    + _RUN
    + f'[ "$then" != sweep ] || {{ sh -c "$s" >/dev/null 2>&1 && echo {SWEPT} >&2; }}; exit $r; }}'
)


class ClientTimeout(HostError):
    """The iperf3 client ran past its deadline; it was killed by pid on its host."""

    def __init__(
        self, host: str, timeout: float, state: str | None = None, link: str | None = None
    ) -> None:
        self.timeout = timeout
        self.state = state  # what the client was doing when killed: T is stopped
        self.link = link  # the client's data link operstate
        super().__init__(host, f"iperf3 client did not finish within {timeout:g}s; killed it")


class Iperf3Server:
    """A one-off iperf3 server on ``host``, bound to ``bind_ip``, on a free port."""

    def __init__(
        self,
        host: Host,
        *,
        bind_ip: str,
        workdir: str,
        tag: str,
        binary: str = "iperf3",
        port: int | None = None,
        wait_s: float = 5.0,
        lifetime: float | None = None,
        lazy_stop: bool = False,
        json: bool = False,
    ) -> None:
        """``lifetime``: how long netrun needs the server; it ends REMOTE_MARGIN s later.
        ``json``: the server writes JSON (-J), which --get-server-output then hands the
        client whole (the receiver's own intervals, netrun.tools.iperf3.parse).
        ``lazy_stop``: after a measurement that went well, the server (``-1``: it exits
        after its one client) is killed on the host's next command (Host.defer) instead
        of in a round trip of its own; after a failure it is killed at once."""
        self.host = host
        self.bind_ip = bind_ip
        self.workdir = workdir
        self.tag = tag
        self.binary = binary
        self.ports: Sequence[int] = [port] if port else range(BASE_PORT, BASE_PORT + PORT_SPAN)
        self.wait_s = wait_s
        self.lifetime = lifetime
        self.lazy_stop = lazy_stop
        self.json = json
        #: What ``script()`` printed when it already ran (see ``start``).
        self.answer: str | None = None
        #: sh printing a counter reading of the host (netrun.hosts.counters.script) that
        #: ``script`` runs once the server listens: the server end's reading before its test
        #: rides on the start (netrun.tools.iperf3.readings); "" for none.
        self.read = ""
        #: A pid file whose process (the test running before this one on the host) the
        #: reading waits for, up to ``after_s`` s: then that test's reading after is this
        #: one's before, taken as the host's part of it ends.
        self.after: str | None = None
        self.after_s = 0.0
        #: What the start that gave this server printed (its reading, if it took one).
        self.said = ""
        self.pid: int | None = None
        self.port: int | None = None
        self.logfile: str | None = None

    def script(self) -> str:
        """The start script (iperf3_server.server_script) for this server, then ``read``
        (once the process in ``after`` is gone) if the server listens."""
        start = self.start_script()
        if not self.read:
            return start
        wait = ""
        if self.after:
            # the pid file's first word (pid start boot: netrun.hosts.proc.save_pid)
            wait = read_pid(self.after) + wait_gone(self.after_s, iperf3_readings.POLL_S)
        # ``wait``: a job the probe runs beside the start (the host's context,
        # netrun.run.fleet) ends before the reading, never inside the test's window
        return f"(\n{start}\n) && {{ wait; {wait}{self.read}; }}"

    def start_script(self) -> str:
        return iperf3_server.server_script(
            binary=self.binary,
            bind_ip=self.bind_ip,
            ports=list(self.ports),
            workdir=self.workdir,
            tag=self.tag,
            wait_s=self.wait_s,
            lifetime=self.lifetime + REMOTE_MARGIN if self.lifetime else None,
            json=self.json,
        )

    def start(self) -> Iperf3Server:
        """Start it, or adopt the one ``script()`` already started (``answer``: what it
        printed, in another round trip such as the host's probe); an answer that is not
        NETRUN_READY starts it anew, and that start reports what is wrong."""
        if self.answer is not None:
            answer, self.answer = self.answer, None
            try:
                self.pid, self.port, self.logfile = iperf3_server.parse_server_ready(answer)
                self.said = answer
                return self
            except iperf3_result.Iperf3Error:
                pass
        script = self.script()
        res = self.host.run(script, timeout=self.wait_s * len(self.ports) + 10, check=False)
        try:
            self.pid, self.port, self.logfile = iperf3_server.parse_server_ready(res.stdout)
        except iperf3_result.Iperf3Error as exc:
            raise exc.on(self.host.name) from None
        self.said = res.stdout
        return self

    def pidfile(self) -> str:
        return f"{self.workdir}/{self.tag}.{self.port}.pid"

    def stop(self, *, lazy: bool = False) -> None:
        """Kill by pid (never by name) and remove the pid and log files; with ``lazy``,
        on the host's next command."""
        if self.port is None:
            return
        script = kill_script(self.pidfile())
        if self.logfile:
            script += f"; rm -f {shlex.quote(self.logfile)}"
        if lazy:
            self.host.defer(script)
        else:
            self.host.run(script, timeout=15, check=False)
        self.port = None

    def diagnose(self, iface: str | None) -> tuple[str | None, str | None]:
        """(state letter or "gone", data link operstate) of this server, e.g. after a stall."""
        if self.port is None:
            return None, None
        res = self.host.run(state_script(self.pidfile(), iface), timeout=10, check=False)
        return read_state(res.stdout)

    def __enter__(self) -> Iperf3Server:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self.stop(lazy=self.lazy_stop and exc is None)
        except NetrunError:
            if exc is None:
                raise


def run_client(
    host: Host,
    argv: list[str],
    *,
    workdir: str,
    tag: str,
    timeout: float,
    iface: str | None = None,
    read: str = "",
) -> CommandResult:
    """Run an iperf3 client on ``host``; return what it printed and its exit status.

    The client writes its pid first, so that on a deadline or Ctrl-C we kill exactly it.
    A deadline raises ``ClientTimeout`` with the state it was killed in (and ``iface``'s).
    ``read``: sh printing a counter reading, run just before and after it (``with_readings``).
    """
    pidfile = client_pidfile(workdir, tag)
    script = with_readings(CLIENT_WRAPPER, read)
    wrapper = client_wrapper(script, workdir, pidfile, timeout, argv)
    with killed_on_failure(host, pidfile, timeout, iface):
        res = host.run(wrapper, timeout=timeout, check=False)
    return checked(host, argv, res)


def with_readings(script: str, read: str) -> str:
    """A client wrapper that runs ``read`` (netrun.hosts.counters.script) just before
    argv and just after it, printing both readings after argv's own output behind
    iperf3_readings.MARK (netrun.tools.iperf3.readings.split takes them off)."""
    if not read:
        return script
    around = (
        f"{{ c0=$({read}); }} && {EXEC}"
        f"printf '\\n%s\\n%s\\n' {iperf3_readings.MARK} \"$c0\"; {{ {read}; }} 2>/dev/null; "
    )
    return script.replace(EXEC, around, 1)


def client_pidfile(workdir: str, tag: str) -> str:
    return f"{workdir}/{tag}.client.pid"


def client_wrapper(
    script: str, workdir: str, pidfile: str, timeout: float, argv: list[str]
) -> list[str]:
    """``sh -c SCRIPT`` with the client's folder, pid file, remote bound and argv."""
    bound = str(math.ceil(timeout + REMOTE_MARGIN))
    return ["sh", "-c", script, "netrun-client", workdir, pidfile, bound, *argv]


@contextlib.contextmanager
def killed_on_failure(
    host: Host, pidfile: str, timeout: float, iface: str | None
) -> Iterator[None]:
    """A client past its deadline, interrupted or cut off is killed by pid on its host."""
    try:
        yield
    except CommandTimeout:
        state, link = _kill_quietly(host, pidfile, iface)
        raise ClientTimeout(host.name, timeout, state, link) from None
    except BaseException:  # Ctrl-C, SIGTERM, lost connection: stop it on the host
        _kill_quietly(host, pidfile)
        raise


def checked(host: Host, argv: list[str], res: CommandResult) -> CommandResult:
    """The client's result, or the one line for an iperf3 the host does not have."""
    if res.exited == 127 and not res.stdout.strip():
        raise iperf3_result.Iperf3Error(
            "missing",
            f"{host.name}: '{argv[0]}' not found; install iperf3 (apt-get install iperf3) "
            "or set netrun_iperf3 to its path",
            res.stderr,
        )
    return res


class ArmedClient:
    """An iperf3 client started before its server has a port: its command (and the
    host's login cost) starts at once, waits for the port on its stdin, then runs as
    ``run_client`` does. The server's start and the client's login overlap: one round
    trip fewer per test on the critical path. Abandoned, or when netrun vanishes (the
    connection closes), its stdin ends and it exits without running anything."""

    def __init__(
        self,
        host: Host,
        argv: list[str],
        *,
        workdir: str,
        tag: str,
        timeout: float,
        sweep: str = "",
        read: str = "",
    ) -> None:
        """``sweep``: the host's final sweep script, run after the client if ``fire``
        says so (netrun.tools.savers.sweep); ``read``: the client end's counter reading
        (``with_readings``)."""
        self.host = host
        self.argv = argv
        self.pidfile = client_pidfile(workdir, tag)
        self.timeout = timeout
        script = with_readings(ARMED_WRAPPER, read)
        wrapper = client_wrapper(script, workdir, self.pidfile, timeout, argv)
        wrapper[4:4] = [sweep]  # $1 of the script: before the folder, pid file and bound
        self.started: Started | None = host.start(wrapper)
        self.can_sweep = bool(sweep)
        #: Whether the host was swept after the client (``fire`` with ``sweep``).
        self.swept = False

    def fire(
        self,
        port: int,
        iface: str | None = None,
        *,
        sweep: bool = False,
        then: Callable[[], object] = lambda: None,
    ) -> CommandResult | None:
        """Give it the server's port (and with ``sweep``, have it sweep its host after
        the client), call ``then`` while it runs, and wait for it; None if it could not
        be started (then run the client as usual, ``run_client``)."""
        started, self.started = self.started, None
        if started is None:
            return None
        sweep = sweep and self.can_sweep
        try:
            started.send(f"{int(port)}{' sweep' if sweep else ''}\n")
        except NetrunError:  # gone meanwhile: a fresh channel says why, or works
            started.abandon()
            return None
        with killed_on_failure(self.host, self.pidfile, self.timeout, iface):
            then()
            exited, out, err = started.wait(self.timeout)
        if sweep and err.endswith(SWEPT_LINE):
            err = err[: -len(SWEPT_LINE)]
            self.swept = True
        seconds = time.monotonic() - started.started
        res = CommandResult(self.host.name, started.line, exited, out, err, seconds)
        return checked(self.host, self.argv, res)

    def abandon(self) -> None:
        """Not needed after all (a failed server start, a host that failed its probe)."""
        started, self.started = self.started, None
        if started is not None:
            started.abandon()


def _kill_quietly(
    host: Host, pidfile: str, iface: str | None = None
) -> tuple[str | None, str | None]:
    with contextlib.suppress(NetrunError):
        res = host.run(kill_script(pidfile, iface=iface), timeout=10, check=False)
        return read_state(res.stdout)
    return None, None
