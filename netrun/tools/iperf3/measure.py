"""iperf3's part of a measurement whatever the mode: the client argv, which side's JSON the
test asks for, the retry loop around one run, and the preview and stop of its client.

A mode places the two ends (netrun.tools.ends.End: the server end's address is what the
client dials) and runs one attempt; the loop here retries a port another iperf3 holds,
with backoff, and a UDP setup datagram lost before any data, at once (iperf3 does not).
"""

from __future__ import annotations

import contextlib
import shlex
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from netrun.errors import Cancelled, HostError, NetrunError
from netrun.hosts.proc import kill_script
from netrun.tools.iperf3 import command as iperf3
from netrun.tools.iperf3 import result as iperf3_result
from netrun.tools.iperf3.run import BASE_PORT, PORT_SPAN, client_pidfile

if TYPE_CHECKING:
    from netrun.core.measurement import Measurement
    from netrun.hosts.host import Host
    from netrun.tools.base import Placement

#: The longest one busy-port backoff waits, however many retries have doubled it.
MAX_BACKOFF = 60.0


def client_argv(
    mode: Placement, server_ip: str, port: int | None, *, server_output: bool = False
) -> list[str]:
    """The iperf3 client command for a test (netrun.tools.iperf3.command.test_client_argv)
    with the client end's iperf3 (not wrapped: the mode runs it at its end)."""
    program = mode.end("client").program("netrun_iperf3", "iperf3")
    return iperf3.test_client_argv(
        mode.test, server_ip, port, program=program, server_output=server_output
    )


def server_json(mode: Any) -> bool:
    """Whether the test asks for the server's JSON: a UDP test's receiver series (the
    server is the receiver unless reversed), and a reversed TCP test's sender internals
    (the server sends: its TCP_INFO, netrun.tools.iperf3.tcpinfo); --bidir's sums and
    internals stay the client's."""
    t = mode.test
    if t.options.get("bidir"):
        return False
    return bool(t.reverse if t.protocol == "tcp" else not t.reverse)


def retrying(
    mode: Placement,
    repeat: int,
    once: Callable[[str], Measurement],
    stopping: threading.Event,
) -> Measurement:
    """One repeat by ``once(tag)``: a port another iperf3 holds is retried with backoff
    (``busy_retries``, ``busy_backoff``, doubling to at most MAX_BACKOFF, cut short by
    ``stopping``), then reported; a UDP setup datagram lost before any data is retried at
    once."""
    test, server = mode.test, mode.end("server").host
    retries = int(test.value("busy_retries"))
    wait = float(test.value("busy_backoff"))
    started = time.monotonic()
    last: iperf3_result.Iperf3Error | None = None
    for attempt in range(retries + 1):
        try:
            return once(f"{test.tag}r{repeat}")
        except iperf3_result.Iperf3Error as exc:
            if exc.kind == "setup-lost" and attempt < retries:
                continue  # no data was sent: the same test again, at once
            if exc.kind != "busy":
                raise
            last = exc
        # an interrupted (parallel) run must not sit out the backoff
        if attempt < retries and stopping.wait(min(wait * 2**attempt, MAX_BACKOFF)):
            raise Cancelled(server.name)
    assert last is not None
    raise busy_error(server, last, retries + 1, time.monotonic() - started)


def busy_error(
    server: Host, exc: iperf3_result.Iperf3Error, tries: int, seconds: float
) -> HostError:
    """The one line for a port another iperf3 kept: who holds it, and the two ways out."""
    ports = sorted(exc.busy)
    held = [h for p in ports if (h := exc.busy[p])]
    if len(ports) == 1:
        what = f"port {ports[0]}"
    elif ports:
        what = f"ports {ports[0]}-{ports[-1]}"
    else:
        what = "the port"
    if held and all(h.split()[0] == "iperf3" for h in held):
        who = f"another iperf3 (pid {', '.join(h.split()[-1] for h in held)})"
    elif held:
        who = f"another program ({', '.join(held)})"
    else:
        who = "another iperf3"
    return HostError(
        server.name,
        f"{who} is using {what} on {server.name} ({tries} tries in {seconds:.1f}s): "
        "stop it or set port: to a free one",
    )


def port_note(port: Any, first: int) -> str:
    """What a null port becomes when the test starts."""
    return "" if port else f"  (port: the first free of {first}-{first + PORT_SPAN - 1})"


def preview(mode: Placement) -> list[tuple[str, str]]:
    """The server at the server end's bind address, the client dialling its address."""
    port = mode.value("port")
    server, client = mode.end("server"), mode.end("client")
    binary = server.program("netrun_iperf3", "iperf3")
    srv = iperf3.server_command(server.bind, port or BASE_PORT, binary=binary)
    cli = client_argv(mode, server.address, port or BASE_PORT)
    return [
        ("server", shlex.join(server.wrap(srv)) + port_note(port, BASE_PORT)),
        ("client", shlex.join(client.wrap(cli))),
    ]


def stop(mode: Placement, tag: str) -> None:
    """Kill measurement ``tag``'s client by its pid file at the client end (its identity
    checked: netrun.hosts.proc.kill_script): it ends with iperf3's own error, its one-shot
    server with it (Tool.stop)."""
    end = mode.end("client")
    with contextlib.suppress(NetrunError):
        end.run(kill_script(client_pidfile(end.workdir, tag)), timeout=15, check=False)
