"""Sweeping hosts: running cleanup scripts on many hosts at once, and which dead runs to sweep.

Three callers share this: the run's final sweep, the next run's sweep of what a killed
run left (from the journal), and ``netrun cleanup``. Each host's script runs in parallel
with one deadline; its output lines are kept per host, and a failure is kept per host.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from netrun.cleanup.journal import Entry, Journal, host_key
from netrun.cleanup.scripts import RUN_ID, cleanup_script, docker_command
from netrun.errors import ConnectError, InputError, NetrunError
from netrun.hosts.connect import connect_all
from netrun.hosts.group import DEFAULT_FORKS, on_each
from netrun.hosts.host import Host, folder_key, remote_tmp
from netrun.hosts.ssh.settings import SSHSettings


@dataclass
class Swept:
    """What a sweep printed on each host, and the hosts it could not sweep."""

    lines: dict[str, list[str]] = field(default_factory=dict)
    failed: dict[str, NetrunError] = field(default_factory=dict)


def sweep_hosts(
    hosts: Iterable[Host],
    script_for: Callable[[Host], str],
    *,
    deadline: float = 75,
    retry: bool = False,
    forks: int = DEFAULT_FORKS,
) -> Swept:
    """Run each host's sweep script; with ``retry``, a dropped session gets one fresh
    connection, so the run's servers and folders are not left on a host that is up."""
    out = Swept()

    def sweep(host: Host) -> None:
        script = script_for(host)
        try:
            res = host.run(script, timeout=60, check=False)
        except ConnectError:
            if not retry or host.transport is None:
                raise
            host.transport.reconnect()
            res = host.run(script, timeout=60, check=False)
        out.lines[host.name] = [line.strip() for line in res.stdout.splitlines() if line.strip()]

    result = on_each(hosts, sweep, deadline=deadline, max_workers=forks)
    out.failed.update(result.failed)
    for name in out.failed:
        out.lines.pop(name, None)
    return out


def sweep_stale(
    journal: Journal, run_id: str, ready: Iterable[Host], forks: int = DEFAULT_FORKS
) -> list[str]:
    """Remove what dead runs of this controller left on the ``ready`` hosts (the ones this
    run connected and probed), and forget what was swept; one line per thing removed.

    A SIGKILLed nightly run may have left iperf3 servers holding their ports and a changed
    MTU (undo records); tonight's run sweeps them before its first test.
    """
    by_key = {host_key(h): h for h in ready}
    stale = journal.stale(exclude=run_id)
    todo: dict[str, list[Entry]] = {}
    for entry in stale:
        for key in entry.hosts:
            if key in by_key:
                todo.setdefault(key, []).append(entry)
    if not todo:
        return []

    def script(host: Host) -> str:
        return "; ".join(
            cleanup_script(
                e.hosts[host_key(host)]["remote_tmp"],
                e.run_id,
                docker=e.hosts[host_key(host)].get("docker") or None,
                host=folder_key(e.hosts[host_key(host)]["name"]),  # its name in that run
            )
            for e in todo[host_key(host)]
        )

    swept = sweep_hosts([by_key[k] for k in todo], script, forks=forks)
    done = {key for key, host in by_key.items() if host.name in swept.lines}
    for entry in stale:
        journal.forget(entry.run_id, [k for k in entry.hosts if k in done])
    found = []
    for key, entries in todo.items():
        ids = ", ".join(e.run_id for e in entries)
        name = by_key[key].name
        found += [f"{name}: run {ids}: {line}" for line in swept.lines.get(name, [])]
    return found


def close_all(hosts: Iterable[Host]) -> None:
    """Close every host's connection (a close that fails is no news at this point)."""
    for host in hosts:
        if host.transport is not None:
            with contextlib.suppress(Exception):
                host.transport.close()
        host.transport = None


@dataclass
class CleanupReport:
    lines: list[str] = field(default_factory=list)
    failed: dict[str, NetrunError] = field(default_factory=dict)


def cleanup(
    hosts: Iterable[Host],
    settings: SSHSettings,
    run_id: str | None = None,
    skip: Iterable[str] = (),
) -> CleanupReport:
    """Connect to every host and remove netrun's leftovers (of one run, or of all but the
    live runs in ``skip``)."""
    if run_id is not None and not RUN_ID.fullmatch(run_id):
        raise InputError(f"--run-id {run_id!r}: not a netrun run id (hex digits, e.g. 1a2b3c4d)")
    hosts = list(hosts)
    report = CleanupReport()
    connected = connect_all(hosts, settings)
    report.failed.update(connected.failed)
    live = [h for h in hosts if h.name in connected.succeeded]
    swept = sweep_hosts(
        live,
        lambda h: cleanup_script(
            remote_tmp(h), run_id, docker_command(h), skip, spare_live=True, host=folder_key(h.name)
        ),
        deadline=90,
        forks=settings.forks,
    )
    report.failed.update(swept.failed)
    for host in live:
        lines = swept.lines.get(host.name)
        if lines is not None:
            report.lines += [f"{host.name}: {line}" for line in lines] or [
                f"{host.name}: nothing left behind"
            ]
    close_all(live)
    return report
