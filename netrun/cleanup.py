"""The scripts that remove what a run left behind: undo records, recorded iperf3 servers,
run folders, containers (netrun.sweep runs them on hosts).

A run that ends normally cleans up after itself; these also serve after SIGKILL and power
cuts. Only things netrun marked are touched: undo records and processes whose pid a run
recorded in its own folder (``netrun-<run id>`` under the host's remote tmp), and
containers labelled ``netrun.run_id``.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path

from netrun import owner, proc, undo
from netrun.host import Host

#: What new_run_id makes (use fullmatch: ``$`` would let a trailing newline through).
RUN_ID = re.compile(r"[0-9a-f]{4,32}")


def cleanup_script(
    remote_tmp: str,
    run_id: str | None,
    docker: str | None = "docker",
    skip: Iterable[str] = (),
    spare_live: bool = False,
) -> str:
    """One sh script: run each folder's undo records (newest first), kill recorded iperf
    pids, remove run folders, remove labelled containers.

    ``run_id`` stands unquoted in a glob, so anything but a run id is refused (ValueError).
    The runs in ``skip`` (still running) are left alone, folders and containers; with
    ``spare_live``, so is every run whose folder's owner (netrun.owner) is alive on the
    host's kernel (another controller's, or another journal's, run on a lab host).
    """
    skip = sorted(set(skip))
    for rid in [run_id, *skip]:
        if rid is not None and not RUN_ID.fullmatch(rid):
            raise ValueError(f"not a netrun run id: {rid[:40]!r}")
    base = shlex.quote(remote_tmp.rstrip("/") or "/")
    pattern = f"netrun-{run_id}" if run_id else "netrun-*"
    label = f"netrun.run_id={run_id}" if run_id else "netrun.run_id"
    script = (
        "spared=; "
        f'for d in {base}/{pattern}; do [ -d "$d" ] || continue; '
        + "".join(
            f'case "$d" in */netrun-{rid}) echo "skipped run {rid}: it is still running"; '
            "continue;; esac; "
            for rid in skip
        )
        + (
            f'if {owner.alive_test()}; then r=${{d##*/netrun-}}; spared="$spared $r"; '
            'echo "skipped run $r: it is still running"; continue; fi; '
            if spare_live
            else ""
        )
        + undo.sweep_script('"$d"')
        + 'for f in "$d"/*.pid; do [ -e "$f" ] || continue; p=$(cat "$f" 2>/dev/null); '
        f"if {proc.runs('iperf')}; then "
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
            + (
                ' | while read -r i r; do case " $spared " in *" $r "*) ;; *) echo "$i $r";;'
                " esac; done"
                if spare_live
                else ""
            )
            + " | cut -d' ' -f1); "
            f'if [ -n "$ids" ]; then {d} rm -f $ids >/dev/null 2>&1 && '
            'echo "removed containers: $(echo $ids)"; fi; fi; '
        )
    return script + "true"


def cleanup_command(inventory: Path | str | Sequence[Path], host: str, run_id: str) -> str:
    """The command that removes one run's leftovers on one host, for error messages."""
    paths = [inventory] if isinstance(inventory, Path | str) else list(inventory)
    sources = [arg for path in paths for arg in ("-i", str(path))]
    return shlex.join(["netrun", "cleanup", *sources, "-l", host, "--run-id", run_id])


def docker_command(host: Host) -> str:
    """The docker CLI of a host (``netrun_docker``), for sweeping its labelled containers."""
    return str(host.vars.get("netrun_docker") or "docker")
