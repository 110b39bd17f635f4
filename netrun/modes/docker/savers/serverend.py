"""Saver.SERVER_WAIT: the server end after a container test, taken on its host as soon
as the test ends there; and each host's sweep on its last measurement (Saver.EARLY_SWEEP;
also the client's: netrun.modes.docker.savers.client).

Sent as the client starts, so its login overlaps the test: it waits (bounded) until the
tool's server in the server container has served one more test (its log holds one more
of what it prints once per test, Tool.resident_served), then prints that end's byte
counters (the path-bytes modes, netrun.modes.docker.pathbytes) and, on the host's last
measurement, sweeps the host as the run's final sweep would (its undo records remove the
run's containers, its time bounds and its run folder): no round trip after the test, and
the run's end has nothing left to do there (netrun.tools.savers.sweep). It stops waiting
when the container is gone (a failed test's final sweep removed it), so nothing of it
outlives the run. A tool whose server prints nothing per test has no such wait: the
reading is then taken on its own, and the host is left to the run's final sweep.
"""

from __future__ import annotations

import json
import math
import shlex
import threading
from typing import TYPE_CHECKING

from netrun.cleanup.scripts import SWEPT, cleanup_script
from netrun.errors import NetrunError
from netrun.hosts.host import remote_tmp
from netrun.modes.docker.launch import sections
from netrun.tools import docker as dk
from netrun.tools.savers.model import Saver

if TYPE_CHECKING:
    from netrun.hosts.host import Host
    from netrun.modes.docker.base import ContainerMode


def count_served(mode: ContainerMode, logs: str) -> None:
    """Note the tests the server container's tool served so far, from its log (``logs``):
    the lines it prints once per test (Tool.resident_served); nothing for a tool that
    prints none, whose repeats then have no wait here (``server_wait``)."""
    line = mode.tool.resident_served
    if line is not None:
        mode.counters["served"] = logs.count(line)


def follow(line: str, served: int, bound: float, fifo: str) -> str:
    """sh waiting, without a process per look, until the json-file log ``$lp`` holds more
    than ``served`` lines with ``line``: GNU tail follows it (inotify; ``--pid`` ends it
    within 0.1 s of PID 1, ``-s``: a container a failed test's sweep removed leaves no
    wait behind) into grep, which stops at the count, bounded by ``timeout``. Polling
    forked a grep and a sleep every 20 ms through the test, some 0.2 s of CPU per 2 s on
    the server's host, beside the tool it measures. Where the count was reached or the
    bound passed, ``nr_fd`` is 1 (nothing left to poll); where this could not follow
    (no GNU tail, no timeout, PID 1 gone), the polling loop goes on."""
    q = shlex.quote
    f = q(fifo)
    return (
        f'if [ -n "$lp" ] && command -v timeout >/dev/null 2>&1 && rm -f {f} && mkfifo {f} '
        "2>/dev/null; then "
        f'tail -n +1 -F -s 0.1 --pid="$pid" "$lp" >{f} 2>/dev/null & nr_tp=$!; '
        f"c=$(timeout {math.ceil(bound + 1)} grep -m {int(served) + 1} -c -F -e {q(line)} <{f}); "
        'nr_fc=$?; kill "$nr_tp" 2>/dev/null; wait "$nr_tp" 2>/dev/null; rm -f '
        f"{f}; "
        f'if [ "$nr_fc" = 124 ] || {{ [ "$nr_fc" = 0 ] && [ "${{c:-0}}" -gt {int(served)} ]; }}; '
        "then nr_fd=1; fi; fi"
    )


def script(
    docker: str,
    name: str,
    pid: int,
    served: int,
    bound: float,
    *,
    line: str,
    reading: str,
    sweep: str,
    fifo: str = "",
) -> str:
    """sh: wait up to ``bound`` s until the container's log holds more than ``served``
    lines with ``line`` (Tool.resident_served: one per test its server served), print
    their count (section count), then ``reading`` (that end's counters, section counters;
    ``$pid`` is the container's PID 1), then run ``sweep`` (section swept). ``fifo``: a
    path in the run's folder for ``follow`` (none: the log is polled)."""
    q = shlex.quote
    grep = q(dk.grep_literal(line))
    # Where the host reads the container's json-file log (dk.ready_script's way), it is
    # followed (``follow``), else grepped every 20 ms while PID 1 lives: no docker command
    # per look; else `docker logs` every 50 ms, until the container is gone.
    plain = json.dumps(line)[1:-1] == line and int(pid) > 0
    lines = [
        f"d={q(docker)}; n={q(name)}; pid={int(pid)}; end=$(($(date +%s) + {int(bound) + 1}))",
        "lp="
        + (
            '$("$d" container inspect -f \'{{.LogPath}}\' "$n" 2>/dev/null); '
            '[ -n "$lp" ] && [ -r "$lp" ] || lp='
            if plain
            else ""
        ),
        "nr_fd=; " + (follow(line, served, bound, fifo) if plain and fifo else ":"),
        'i=0; while [ -z "$nr_fd" ] && [ -n "$lp" ] && '
        f"[ $i -lt {math.ceil((bound + 1) / 0.02)} ]; do "
        f'c=$(grep -c {grep} "$lp" 2>/dev/null); [ "${{c:-0}}" -gt {int(served)} ] && break; '
        '[ -d "/proc/$pid" ] || break; sleep 0.02; i=$((i + 1)); done',
        f'[ -n "$nr_fd$lp" ] || while l=$("$d" logs "$n" 2>&1); do '
        f'c=$(printf %s "$l" | grep -c {grep}); '
        f'[ "$c" -gt {int(served)} ] && break; [ "$(date +%s)" -lt "$end" ] || break; '
        "sleep 0.05; done",
        'echo ==netrun:count==; echo "${c:-0}"',
    ]
    if reading:
        lines.append(f"echo ==netrun:counters==; {reading}")
    if sweep:
        lines.append(f"echo ==netrun:swept==; {sweep}")
    return "\n".join(lines)


def host_sweep(mode: ContainerMode, host: Host) -> str:
    """sh sweeping ``host`` as the run's final sweep does (netrun.cleanup.scripts: its undo records
    remove the run's containers and time bounds, then its run folder goes), printing
    SWEPT once the folder is gone. The records remove the containers: the final sweep's
    own look for labelled containers is left out (a ``docker ps`` less)."""

    folder = shlex.quote(mode.ctx.workdir(host))
    sweep = cleanup_script(remote_tmp(host), mode.ctx.run_id, docker=None)
    return f"{{ {sweep}; }} >/dev/null 2>&1; [ ! -e {folder} ] && echo {SWEPT}"


class ServerWait:
    """The wait on the server's host, started now; ``result`` and ``swept`` read it."""

    def __init__(
        self, mode: ContainerMode, served: int, *, line: str, reading: str, sweep: str
    ) -> None:
        """``line``: what the server prints once per test (Tool.resident_served);
        ``reading``: sh printing that end's counters once the test ended (none: "");
        ``sweep``: the host's sweep (host_sweep) after it, on its last measurement."""
        self.found: dict[str, str] | None = None
        host: Host = mode.server
        bound = float(mode.test.deadline)
        docker, name, pid = (
            mode.docker(host),
            mode.names["server"],
            int(mode.pids.get("server") or 0),
        )
        # the fifo ``follow`` reads through: in the run's folder, which the sweep removes
        fifo = f"{mode.ctx.workdir(host)}/{name}.served"
        text = script(
            docker, name, pid, served, bound, line=line, reading=reading, sweep=sweep, fifo=fifo
        )
        timeout = bound + 60
        self.timeout = timeout  # how long ``swept`` may wait for it
        # Started at once, so its command is counted now (netrun.tools.savers.sweep), and collected
        # in a thread; where a command cannot be started so, it runs without the sweep.
        started = host.start(text) if sweep else None
        if started is not None:
            try:
                started.send("")
            except NetrunError:
                started.abandon()
                started = None
        #: Whether this wait sweeps the host.
        self.sweeps = started is not None
        if sweep and started is None:
            text = script(
                docker, name, pid, served, bound, line=line, reading=reading, sweep="", fifo=fifo
            )

        def run() -> None:
            try:
                if started is not None:
                    out = started.wait(timeout)[1]
                else:
                    out = host.run(text, timeout=timeout, check=False).stdout
            except Exception:  # the reading is then taken on its own
                return
            self.found = sections(out)

        self.thread = threading.Thread(target=run, name=f"netrun-wait-{host.name}", daemon=True)
        self.thread.start()

    def result(self, served: int) -> tuple[str | None, int | None]:
        """The counters' text (None: not read) and the new count, or (None, None) when the
        wait did not see the test end (the reading is then taken on its own)."""
        self.thread.join(timeout=10)
        found = self.found or {}
        count = found.get("count", "").strip()
        if not count.isdigit() or int(count) <= served:
            return None, None
        return found.get("counters"), int(count)

    def swept(self) -> bool:
        """Whether the host's sweep ran and removed the run folder (waits for it)."""
        self.thread.join(timeout=self.timeout + 10)
        return self.sweeps and SWEPT in (self.found or {}).get("swept", "")


def server_wait(
    mode: ContainerMode, served: int | None, repeat: int, reading: str = ""
) -> ServerWait | None:
    """The server host's wait for the test's end (``served``: the tests its server served
    so far, ``count_served``), sent as the client starts: with ``reading`` (the path-bytes
    modes' counters) on every repeat, else only on the host's last measurement, which it
    sweeps after the test. None where its tool's server prints nothing per test."""
    line = mode.tool.resident_served
    if served is None or line is None or mode.server.name == mode.client.name:
        return None
    if not mode.savers.allows(Saver.SERVER_WAIT):  # the reading is then taken on its own
        return None
    last = mode.last_on(mode.server, repeat)
    if not (reading or last):
        return None
    sweep = host_sweep(mode, mode.server) if last else ""
    return ServerWait(mode, served, line=line, reading=reading, sweep=sweep)


def server_done(
    mode: ContainerMode, served: int | None, waiting: ServerWait | None
) -> tuple[str | None, int | None]:
    """After a measurement that worked: the server's counters text (None: not read) and
    the tests it has served now (None: unknown); its host's sweep noted
    (netrun.tools.savers.sweep)."""
    if waiting is None:
        return None, (served + 1 if served is not None else None)
    text, count = waiting.result(served or 0)
    if waiting.sweeps and mode.ctx.ahead.early_sweep is not None:
        mode.ctx.ahead.early_sweep.sent(mode.server, waiting.swept)
    return text, count
