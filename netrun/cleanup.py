"""Removing what a killed run left behind: recorded iperf3 servers, run folders, containers.

A run that ends normally cleans up after itself; this is for SIGKILL and power cuts.
Only things netrun marked are touched: processes whose pid a run recorded in its own
folder (``netrun-<run id>`` under the host's remote tmp), and containers labelled
``netrun.run_id``.
"""

from __future__ import annotations

import contextlib
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from netrun import undo
from netrun.errors import InputError, NetrunError
from netrun.host import Host
from netrun.modes.base import remote_tmp
from netrun.transport import SSHSettings, connect_all, on_each

#: What new_run_id makes (use fullmatch: ``$`` would let a trailing newline through).
RUN_ID = re.compile(r"[0-9a-f]{4,32}")


def cleanup_script(
    remote_tmp: str,
    run_id: str | None,
    docker: str | None = "docker",
    skip: Iterable[str] = (),
) -> str:
    """One sh script: run each folder's undo records (newest first), kill recorded iperf
    pids, remove run folders, remove labelled containers.

    ``run_id`` stands unquoted in a glob, so anything but a run id is refused (ValueError).
    The runs in ``skip`` (still running) are left alone, folders and containers.
    """
    skip = sorted(set(skip))
    for rid in [run_id, *skip]:
        if rid is not None and not RUN_ID.fullmatch(rid):
            raise ValueError(f"not a netrun run id: {rid[:40]!r}")
    base = shlex.quote(remote_tmp.rstrip("/") or "/")
    pattern = f"netrun-{run_id}" if run_id else "netrun-*"
    label = f"netrun.run_id={run_id}" if run_id else "netrun.run_id"
    script = (
        f'for d in {base}/{pattern}; do [ -d "$d" ] || continue; '
        + "".join(
            f'case "$d" in */netrun-{rid}) echo "skipped run {rid}: it is still running"; '
            "continue;; esac; "
            for rid in skip
        )
        + undo.sweep_script('"$d"')
        + 'for f in "$d"/*.pid; do [ -e "$f" ] || continue; p=$(cat "$f" 2>/dev/null); '
        'if [ -n "$p" ] && grep -q iperf "/proc/$p/cmdline" 2>/dev/null; then '
        'kill -9 "$p" 2>/dev/null && echo "killed iperf pid $p"; fi; done; '
        'rm -rf "$d" && echo "removed $d"; done; '
    )
    if docker:
        d = shlex.quote(docker)
        script += (
            f"if command -v {d} >/dev/null 2>&1; then "
            f"ids=$({d} ps -a --filter label={shlex.quote(label)} "
            + shlex.quote('--format={{.ID}} {{.Label "netrun.run_id"}}')
            + " 2>/dev/null"
            + "".join(f" | grep -v ' {rid}$'" for rid in skip)
            + " | cut -d' ' -f1); "
            f'if [ -n "$ids" ]; then {d} rm -f $ids >/dev/null 2>&1 && '
            'echo "removed containers: $(echo $ids)"; fi; fi; '
        )
    return script + "true"


def cleanup_command(inventory: Path | str, host: str, run_id: str) -> str:
    """The command that removes one run's leftovers on one host, for error messages."""
    return shlex.join(["netrun", "cleanup", "-i", str(inventory), "-l", host, "--run-id", run_id])


def docker_command(host: Host) -> str:
    """The docker CLI of a host (``netrun_docker``), for sweeping its labelled containers."""
    return str(host.vars.get("netrun_docker") or "docker")


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
    found: dict[str, list[str]] = {}

    def sweep(host: Host) -> None:
        tmp = remote_tmp(host)
        docker = docker_command(host)
        res = host.run(cleanup_script(tmp, run_id, docker, skip), timeout=60, check=False)
        found[host.name] = [line for line in res.stdout.splitlines() if line.strip()]

    swept = on_each(live, sweep, deadline=90)
    report.failed.update(swept.failed)
    for host in live:
        lines = found.get(host.name)
        if lines is not None:
            report.lines += [f"{host.name}: {line}" for line in lines] or [
                f"{host.name}: nothing left behind"
            ]
        if host.transport is not None:
            with contextlib.suppress(Exception):
                host.transport.close()
            host.transport = None
    return report
