"""A host's lease: one netrun run measures on a host at a time, from whichever controller.

Two runs measuring one host at once measure each other's traffic. So a run takes each
host's lease in that host's probe (no round trip of its own): an ``flock`` on
``/tmp/netrun-lease.<host id>``, held by a small watcher process the probe leaves behind.
The watcher lives as long as the run's connection to the host (its sshd process; for
``ansible_connection: local``, the controller itself) and ends at once when the run
releases the lease (in the host's last sweep, netrun.cleanup.scripts). A SIGKILLed
controller's connection ends, its watcher follows within ``POLL_S`` and the kernel drops
the flock with it: a crashed run's lease never blocks the next run.

The host id is the kernel's boot id and the network namespace (netrun.hosts.proc), the
same identity run folders carry (netrun.cleanup.owner): hosts that share /tmp (a lab's
namespaces, containers of one machine) each have a lease of their own, and two inventory
names of one host share one. Beside the lock, ``<lock>.<run id>`` (the holder's own file,
so two users' runs never need to write one file) says who holds it: run, controller,
user, pid and start time, for the line that refuses the next run.
"""

from __future__ import annotations

import getpass
import os
import re
import shlex
import socket
from dataclasses import dataclass
from datetime import UTC, datetime

from netrun.hosts.proc import BOOT_ID, start_time

#: The folder every user's runs find the lease in (a fixed one: TMPDIR differs per user).
LEASE_DIR = "/tmp"
#: Marks the lease's answer in a probe's output.
MARK = "NETRUN_LEASE"
#: How often a watcher looks whether its run's connection is still there.
POLL_S = 0.5
#: How long a refused probe waits for a holder whose connection is already gone (its
#: watcher has not noticed yet) before it says the host is held.
STALE_WAIT_S = 4.0
#: A run id (netrun.cleanup.scripts.RUN_ID): it names the holder's file in the scripts.
RUN_ID = re.compile(r"[0-9a-f]{4,32}")


def key_script(folder: str = LEASE_DIR) -> str:
    """sh setting ``$nrl`` to this host's lock file in ``folder``: boot id and network
    namespace inode (the host name where /proc says neither)."""
    # shell builtins where they do (read, expansions): a probe pays each fork
    return (
        f"nrb=; {{ read -r nrb < {BOOT_ID}; }} 2>/dev/null; "
        'case "$nrb" in *[!0-9a-f-]*) nrb=;; esac; '
        "nrn=$(readlink /proc/self/ns/net 2>/dev/null); nrn=${nrn#net:\\[}; nrn=${nrn%\\]}; "
        'case "$nrn" in *[!0-9]*) nrn=;; esac; nrk=$nrb.$nrn; '
        '[ "$nrk" != . ] || nrk=$(uname -n | tr -dc 0-9A-Za-z-); '
        f"nrl={shlex.quote(folder.rstrip('/') or '/')}/netrun-lease.$nrk; "
    )


def running(pid: str) -> str:
    """sh condition: the process whose pid is in ``pid`` (an expansion) runs: it exists
    and is no zombie (a connection's process its parent has not reaped yet is gone)."""
    return (
        f'{{ read -r nrz < "/proc/{pid}/stat"; }} 2>/dev/null && nrz=${{nrz##*) }} && '
        '[ "${nrz%% *}" != Z ]'
    )


#: sh function: true when the lease file in ``$1`` names a live holder (its watcher, by
#: pid and start time, and that watcher's connection); sets ``$nrw`` to who it is.
LIVE = (
    "nrlive() { nrw=; nrp=; nrs=; nrc2=; "
    '{ read -r nrw; read -r nrp nrs nrc2; } < "$1" 2>/dev/null; '
    f'[ -n "$nrp" ] && [ "$({start_time("$nrp")})" = "$nrs" ] && {running("$nrc2")}; }}; '
)

#: sh setting ``$nrc`` to the process that is this command's connection: the first
#: ancestor that is not a shell (sshd's session process; a local run's controller).
CONNECTION = (
    "nrc=$PPID; nrn=0; while [ $nrn -lt 16 ]; do nrn=$((nrn+1)); "
    '{ read -r nrst < "/proc/$nrc/stat"; } 2>/dev/null || break; '
    'nrcm=${nrst#*(}; nrcm=${nrcm%%)*}; case "$nrcm" in '
    "sh|bash|dash|ash|ksh|mksh|zsh|busybox|sudo|su|env|timeout) ;; *) break;; esac; "
    "nrst=${nrst##*) }; nrst=${nrst#* }; nrc=${nrst%% *}; done; "
)


@dataclass(frozen=True)
class Answer:
    """What a host said about its lease: ``taken`` (now ours), ``ours`` (already, under
    another inventory name or an earlier probe), ``held`` (``detail``: by whom) or
    ``none`` (``detail``: why the host cannot hold one)."""

    state: str
    detail: str = ""


def holder(run_id: str) -> str:
    """Who this run is, for the refusal line of another run: one line."""
    when = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    line = (
        f"run {run_id} from {socket.gethostname()} (user {user}, pid {os.getpid()}, started {when})"
    )
    return " ".join(line.split())


def acquire_script(run_id: str, who: str, folder: str = LEASE_DIR) -> str:
    """sh taking the host's lease for ``run_id`` and printing ``NETRUN_LEASE <state>``;
    when another run holds it, the script it is part of ends there (``exit 0``): nothing
    after it runs on a host that another run measures."""
    _check(run_id)
    q = shlex.quote
    # Started by a subshell that ends at once (no job of the script's shell: a later
    # ``wait`` in the same probe, netrun.tools.savers.prestart, must not wait for it), which
    # notes its pid and start time (field 22 of its stat, as proc.start_time reads it)
    # before the script goes on, so a release right after finds it.
    watcher = (
        "( ( trap '' HUP INT; "
        f'while {running("$nrc")} && [ -e "$nrf" ]; do sleep {POLL_S:g} 9<&- 2>/dev/null '
        '|| sleep 1 9<&-; done; rm -f "$nrf" ) </dev/null >/dev/null 2>&1 & '
        'nrp=$!; nrst=; { read -r nrst < "/proc/$nrp/stat"; } 2>/dev/null; nrst=${nrst##*) }; '
        'set -- $nrst; [ $# -ge 20 ] && shift 19; echo "$nrp $1 $nrc" >> "$nrf" ); '
    )
    tries = int(STALE_WAIT_S / 0.1)
    return (
        key_script(folder)
        + f'nrf="$nrl.{run_id}"; '
        + LIVE
        + f'if [ -e "$nrf" ] && nrlive "$nrf"; then echo "{MARK} ours"; '
        + "elif ! command -v flock >/dev/null 2>&1; then "
        + f'echo "{MARK} none: the host has no flock command"; '
        # readable by every user of the host, whatever this one's umask
        + 'else [ -e "$nrl" ] || ( umask 022; touch "$nrl" ) 2>/dev/null; '
        + f'if [ ! -r "$nrl" ]; then echo "{MARK} none: cannot read $nrl"; '
        + 'else exec 9<"$nrl"; nrok=; nrh=; nri=0; '
        + "while :; do if flock -n 9; then nrok=1; break; fi; "
        # a live holder refuses at once; one whose connection is gone is waited for
        + 'nrh=; for nrg in "$nrl".*; do [ -e "$nrg" ] && nrlive "$nrg" && { nrh=$nrw; break; }; '
        + f'done; {{ [ -n "$nrh" ] || [ $nri -ge {tries} ]; }} && break; '
        + "sleep 0.1; nri=$((nri+1)); done; "
        + 'if [ -n "$nrok" ]; then '
        + CONNECTION
        + f'( umask 022; printf "%s\\n" {q(who)} > "$nrf" ); '
        + watcher
        + f'exec 9<&-; echo "{MARK} taken"; '
        + f'else exec 9<&-; echo "{MARK} held ${{nrh:-by a run that did not say who}}"; exit 0; '
        + "fi; fi; fi"
    )


def release_script(run_id: str | None, folder: str = LEASE_DIR) -> str:
    """sh ending ``run_id``'s lease on this host at once (its watcher killed, its file
    removed); with None, removing only the files of holders that are gone."""
    if run_id is None:
        return (
            key_script(folder)
            + LIVE
            + 'for nrg in "$nrl".*; do [ -e "$nrg" ] || continue; '
            + 'nrlive "$nrg" || rm -f "$nrg" 2>/dev/null; done; true'
        )
    _check(run_id)
    return (
        key_script(folder)
        + f'nrf="$nrl.{run_id}"; if [ -e "$nrf" ]; then '
        + '{ read -r nrw; read -r nrp nrs nrc2; } < "$nrf" 2>/dev/null; rm -f "$nrf"; '
        + f'[ -n "$nrp" ] && [ "$({start_time("$nrp")})" = "$nrs" ] && kill "$nrp" 2>/dev/null; '
        + "fi; true"
    )


def _check(run_id: str) -> None:
    if not RUN_ID.fullmatch(run_id):
        raise ValueError(f"not a netrun run id: {run_id[:40]!r}")


def parse(output: str, run_id: str = "") -> Answer | None:
    """The lease's answer in a script's output (None: the script did not get that far).

    ``run_id``: this run's. Two inventory names for one host probe it at once, so one
    name can find the lease the other just took: held by this same run, it is ours."""
    for line in output.splitlines():
        if line.startswith(MARK + " "):
            rest = line[len(MARK) + 1 :].strip()
            state, _, detail = rest.partition(" ")
            state = state.rstrip(":")
            if state in ("taken", "ours", "held", "none"):
                # another user's file may say anything: printable, and one line's worth
                shown = "".join(c for c in detail.strip() if c.isprintable())
                if state == "held" and run_id and shown.startswith(f"run {run_id} "):
                    return Answer("ours", shown[:300])
                return Answer(state, shown[:300])
    return None
