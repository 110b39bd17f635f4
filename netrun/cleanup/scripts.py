"""The scripts that remove what a run left behind: undo records, recorded iperf3 servers,
run folders, containers (netrun.cleanup.sweep runs them on hosts).

A run that ends normally cleans up after itself; these also serve after SIGKILL and power
cuts. Only things netrun marked are touched: undo records and processes whose pid a run
recorded in its own folder (``netrun-<run id>-<host>`` under the host's remote tmp), and
containers labelled ``netrun.run_id``. Where hosts share a remote tmp, a host's sweep
acts only on the folders it made (netrun.cleanup.owner.mine_test), and signals a recorded pid
only when it lives in the host's own network namespace (netrun.hosts.proc.here).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path

from netrun.cleanup import owner, undo
from netrun.cleanup.labels import HOST_LABEL, RUN_LABEL
from netrun.hosts import lease, proc
from netrun.hosts.host import Host

#: What a host's early sweep (netrun.tools.savers.sweep) prints on stderr once it worked.
SWEPT = "NETRUN_SWEPT"
#: The stderr line the sweep adds (stripped before iperf3's output is read).
SWEPT_LINE = SWEPT + "\n"
#: What new_run_id makes (use fullmatch: ``$`` would let a trailing newline through).
RUN_ID = re.compile(r"[0-9a-f]{4,32}")


def cleanup_script(
    remote_tmp: str,
    run_id: str | None,
    docker: str | None = "docker",
    skip: Iterable[str] = (),
    spare_live: bool = False,
    host: str | None = None,
) -> str:
    """One sh script: run each folder's undo records (newest first), kill recorded iperf
    pids, remove run folders, end the run's lease, remove labelled containers.

    ``run_id`` stands unquoted in a glob, so anything but a run id is refused (ValueError).
    The runs in ``skip`` (still running) are left alone, folders and containers; with
    ``spare_live``, so is every run whose folder's owner (netrun.cleanup.owner) is alive on the
    host's kernel (another controller's, or another journal's, run on a lab host).
    ``host`` (the host's netrun.hosts.host.folder_key) keeps the containers of other
    hosts on a shared Docker daemon; the folders say themselves whose they are.
    """
    skip = sorted(set(skip))
    for rid in [run_id, *skip]:
        if rid is not None and not RUN_ID.fullmatch(rid):
            raise ValueError(f"not a netrun run id: {rid[:40]!r}")
    base = shlex.quote(remote_tmp.rstrip("/") or "/")
    # netrun-<run id>-<host> (netrun.hosts.host.folder_key); netrun-<run id> of older versions
    patterns = [f"netrun-{run_id}", f"netrun-{run_id}-*"] if run_id else ["netrun-*"]
    label = f"netrun.run_id={run_id}" if run_id else "netrun.run_id"
    script = (
        owner.ME
        + "spared=; "
        + f'for d in {" ".join(f"{base}/{p}" for p in patterns)}; do [ -d "$d" ] || continue; '
        # the run id, and only folders of a run id (not another program's netrun-*)
        + "nrid=${d##*/netrun-}; nrid=${nrid%%-*}; "
        + 'case "$nrid" in ""|*[!0-9a-f]*) continue;; esac; '
        + (
            # a live run's folder, whichever host's: its containers stay too
            f'if {owner.alive_test()}; then spared="$spared $nrid"; {owner.mine_test()} && '
            'echo "skipped run $nrid: it is still running"; continue; fi; '
            if spare_live
            else ""
        )
        # another host's folder (a shared remote tmp): its records are that host's to run
        + f"{owner.mine_test()} || continue; "
        + "".join(
            f'case "$nrid" in {rid}) echo "skipped run {rid}: it is still running"; '
            "continue;; esac; "
            for rid in skip
        )
        + undo.sweep_script('"$d"')
        # every process a run started: the one pid-file format (netrun.hosts.proc.save_pid)
        + 'for f in "$d"/*.pid; do [ -e "$f" ] || continue; '
        f"if {proc.recorded(chr(34) + '$f' + chr(34))}; then "
        'c=; { read -r c <"/proc/$p/comm"; } 2>/dev/null; '
        # and the group it leads (``timeout``'s: the process it bounds is in it)
        'k=; kill -s KILL -- "-$p" 2>/dev/null && k=1; kill -9 "$p" 2>/dev/null && k=1; '
        '[ -z "$k" ] || echo "killed $c pid $p"; fi; done; '
        'rm -rf "$d" && echo "removed $d"; done; '
        # the run's lease on the host (netrun.hosts.lease); without a run id, only the
        # files of holders that are gone
         + f"{{ {lease.release_script(run_id)}; }} 2>/dev/null; "
    )
    if docker:
        d = shlex.quote(docker)
        fmt = f'--format={{{{.ID}}}} {{{{.Label "{RUN_LABEL}"}}}} {{{{.Label "{HOST_LABEL}"}}}}'
        script += (
            f"if command -v {d} >/dev/null 2>&1; then "
            f"ids=$({d} ps -a --filter label={shlex.quote(label)} {shlex.quote(fmt)} 2>/dev/null"
            ' | while read -r nri nrr nrh; do case " $spared "'
            + shlex.quote(" " + " ".join(skip) + " ")
            + ' in *" $nrr "*) continue;; esac; '
            # another host's container, on a Docker daemon hosts share (none: older versions)
            + (f'[ -z "$nrh" ] || [ "$nrh" = {shlex.quote(host)} ] || continue; ' if host else "")
            + 'echo "$nri"; done); '
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
