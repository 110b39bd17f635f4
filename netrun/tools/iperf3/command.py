"""iperf3: build its commands; ``parse`` (netrun.tools.iperf3.parse) reads its JSON.

Every function here is pure: callers send the argv (``shlex.join``) or the script through
``Host.run`` and hand the text back to ``parse``. iperf3's output is trusted only after a
defensive read: it reports errors inside the JSON (``"error"``) even when it exits 0, may
print an ``iperf3: error - ...`` line after the JSON, may print two objects, bare ``nan``
tokens or stop half-way. Each of those raises ``Iperf3Error`` with a ``kind`` the runner
can act on (retry on "busy", fail the host on "missing", ...).

What counts as a measurement, decided on purpose:
- an ``iperf3: error`` line after the JSON (on stdout or stderr) fails the run: iperf3 3.12
  puts any error it meets before its final print inside the JSON, so a line after it means
  the run did not end cleanly, and a nightly comparison must not take in its numbers;
- two identical copies of one object are read once (iperf3 3.16/3.17 printed the JSON twice,
  esnet/iperf#1688); two different objects fail, as nothing tells which is this run's;
- a nan rate is worked out from bytes and seconds, as iperf3 itself computes it (kept, with
  a warning); when that is impossible too, the run fails.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from netrun.core.programs import Program
from netrun.tools.iperf3 import options as iperf3_options
from netrun.tools.iperf3.result import PROTOCOLS

#: iperf3 on a host: its package, and the inventory variable naming another path (the
#: tool's and a load's ends run it: Tool.installs).
PROGRAM = Program("iperf3", "netrun_iperf3", "iperf3", "iperf3")

if TYPE_CHECKING:
    from netrun.core.spec import TestSpec
    from netrun.hosts.host import Host


# -- commands -------------------------------------------------------------------------------
def _number(value: float | int) -> str:
    """A number as iperf3 expects it: "10", not "10.0"."""
    return f"{value:g}" if isinstance(value, float) else str(value)


def client_command(
    server_ip: str,
    port: int | None,
    *,
    duration: float,
    protocol: str = "tcp",
    streams: int = 1,
    reverse: bool = False,
    omit: float = 0,
    bitrate: str | int | float | None = None,
    length: str | int | None = None,
    window: str | int | None = None,
    connect_timeout_ms: int = 3000,
    binary: str = "iperf3",
    bind: str | None = None,
    get_server_output: bool = False,
    bidir: bool = False,
    extra_args: Sequence[str] = (),
) -> list[str]:
    """The iperf3 client argv; always JSON (-J) so ``parse`` can read it. ``extra_args``
    (netrun.tools.iperf3.options: checked to leave netrun's own options alone) go last."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {PROTOCOLS}, not {protocol!r}")
    if duration <= 0 or streams < 1:
        raise ValueError("duration must be > 0 and streams >= 1")
    # No port: it is given later, once the server has one (netrun.tools.iperf3.run.ArmedClient).
    where = [] if port is None else ["-p", str(int(port))]
    argv = [binary, "-c", server_ip, *where, "-J", "-t", _number(duration)]
    argv += ["--connect-timeout", str(int(connect_timeout_ms))]
    if protocol == "udp":
        argv.append("-u")
    if streams > 1:
        argv += ["-P", str(int(streams))]
    if reverse:
        argv.append("-R")
    if bidir:
        argv.append("--bidir")
    if omit:
        argv += ["-O", _number(omit)]
    if bitrate is not None:
        argv += ["-b", _number(bitrate) if not isinstance(bitrate, str) else bitrate]
    if length is not None:
        argv += ["-l", str(length)]
    if window is not None:
        argv += ["-w", str(window)]
    if bind:
        argv += ["-B", bind]
    if get_server_output:
        argv.append("--get-server-output")
    return [*argv, *extra_args]


def server_command(
    bind_ip: str, port: int, *, binary: str = "iperf3", one_off: bool = True
) -> list[str]:
    """The iperf3 server argv; one-off (-1) so a stray server cannot outlive its test."""
    argv = [binary, "-s", "-B", bind_ip, "-p", str(int(port))]
    return [*argv, "-1"] if one_off else argv


def version_command(binary: str = "iperf3") -> list[str]:
    return [binary, "--version"]


def stop_command(pid: int) -> list[str]:
    """Stop a server this run started, by the pid it recorded (never by name)."""
    return ["kill", str(int(pid))]


def binary(host: Host) -> str:
    """The host's iperf3 (netrun_iperf3, else iperf3 on its PATH)."""
    return str(host.vars.get("netrun_iperf3") or "iperf3")


def test_client_argv(
    test: TestSpec, server_ip: str, port: int | None, *, program: str, server_output: bool = False
) -> list[str]:
    """The iperf3 client command of a test, shared by every mode that runs iperf3;
    ``server_output``: ask for the server's output (--get-server-output)."""
    t = test
    return client_command(
        server_ip,
        port,
        duration=t.duration,
        protocol=t.protocol,
        streams=t.streams,
        reverse=t.reverse,
        bidir=bool(t.options.get("bidir")),
        omit=t.omit,
        bitrate=t.bitrate,
        length=t.length,
        window=t.value("window"),
        connect_timeout_ms=int(float(t.value("connect_timeout")) * 1000),
        binary=program,
        extra_args=iperf3_options.client_args(t.options),
        get_server_output=server_output,
    )
