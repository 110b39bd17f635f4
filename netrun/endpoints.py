"""iperf3 processes on a host: a server that lives for one measurement, and a client run.

The server is started, checked to really listen and, on every exit path, killed by the pid
that the start script recorded. The client records its pid too, so an interrupt or a
deadline can stop it on the host rather than leaving it to run out its duration.
"""

from __future__ import annotations

import contextlib
import shlex
from collections.abc import Sequence
from types import TracebackType

from netrun.errors import NetrunError, ToolError
from netrun.host import Host
from netrun.tools import iperf3

#: First port tried for servers, and how many ports up from it are candidates.
BASE_PORT = 5201
PORT_SPAN = 20


def kill_script(pidfile: str, must_contain: str = "iperf") -> str:
    """Kill the process in ``pidfile`` if it is still what we started, then drop the file."""
    f = shlex.quote(pidfile)
    word = shlex.quote(must_contain)
    return (
        f"p=$(cat {f} 2>/dev/null); "
        f'if [ -n "$p" ] && grep -q {word} "/proc/$p/cmdline" 2>/dev/null; then '
        f'kill "$p" 2>/dev/null; i=0; while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do '
        f'sleep 0.02; i=$((i+1)); done; kill -9 "$p" 2>/dev/null; fi; rm -f {f}; true'
    )


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
    ) -> None:
        self.host = host
        self.bind_ip = bind_ip
        self.workdir = workdir
        self.tag = tag
        self.binary = binary
        self.ports: Sequence[int] = [port] if port else range(BASE_PORT, BASE_PORT + PORT_SPAN)
        self.wait_s = wait_s
        self.pid: int | None = None
        self.port: int | None = None
        self.logfile: str | None = None

    def start(self) -> Iperf3Server:
        script = iperf3.server_script(
            binary=self.binary,
            bind_ip=self.bind_ip,
            ports=list(self.ports),
            workdir=self.workdir,
            tag=self.tag,
            wait_s=self.wait_s,
        )
        res = self.host.run(script, timeout=self.wait_s * len(self.ports) + 10, check=False)
        try:
            self.pid, self.port, self.logfile = iperf3.parse_server_ready(res.stdout)
        except ToolError as exc:
            raise ToolError(f"{self.host.name}: {exc}") from None
        return self

    def pidfile(self) -> str:
        return f"{self.workdir}/{self.tag}.{self.port}.pid"

    def stop(self) -> None:
        """Kill by pid (never by name) and remove the pid and log files."""
        if self.port is None:
            return
        script = kill_script(self.pidfile())
        if self.logfile:
            script += f"; rm -f {shlex.quote(self.logfile)}"
        self.host.run(script, timeout=15, check=False)
        self.port = None

    def __enter__(self) -> Iperf3Server:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self.stop()
        except NetrunError:
            if exc is None:
                raise


def run_client(
    host: Host, argv: list[str], *, workdir: str, tag: str, timeout: float
) -> tuple[str, int]:
    """Run an iperf3 client on ``host``; return (stdout, exit status).

    The client writes its pid first, so that on a deadline or Ctrl-C we kill exactly it.
    """
    pidfile = f"{workdir}/{tag}.client.pid"
    wrapper = [
        "sh",
        "-c",
        'mkdir -p "$1" && chmod 700 "$1" && echo $$ >"$2" && shift 2 && exec "$@"',
        "netrun-client",
        workdir,
        pidfile,
        *argv,
    ]
    try:
        res = host.run(wrapper, timeout=timeout, check=False)
    except BaseException:  # deadline, Ctrl-C, SIGTERM, lost connection: stop it on the host
        _kill_quietly(host, pidfile)
        raise
    host.run(["rm", "-f", pidfile], timeout=10, check=False)
    out = res.stdout
    if res.exited == 127 and not out.strip():
        raise iperf3.Iperf3Error(
            "missing",
            f"{host.name}: '{argv[0]}' not found; install iperf3 (apt-get install iperf3) "
            "or set netrun_iperf3 to its path",
            res.stderr,
        )
    if not out.strip() and res.stderr.strip():
        out = res.stderr
    return out, res.exited


def _kill_quietly(host: Host, pidfile: str) -> None:
    with contextlib.suppress(NetrunError):
        host.run(kill_script(pidfile), timeout=10, check=False)
