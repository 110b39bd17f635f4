"""A run folder's owner: which netrun process a folder on a host belongs to, and whether
it still runs.

``netrun cleanup`` sweeps every ``netrun-*`` folder in a host's remote tmp, and the run
journal that names live runs is this controller's (beside one history database) only.
So each run marks its folder on every host, in the probe's round trip, with its
process's kernel boot id, pid and start time. A sweep on the same kernel (the emulated
lab's hosts, ``ansible_connection: local``) can then see that the owner is alive and
leave its records, pid files and containers alone; on another kernel the boot id
differs and the sweep goes on as before.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

FILE = "owner"
_BOOT_ID = "/proc/sys/kernel/random/boot_id"


def process_start(pid: int) -> str | None:
    """The kernel's start time of a process (to tell a reused pid apart), or None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 22, counted after the command name (which may hold spaces and parentheses).
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None


def boot_id() -> str:
    """This kernel's boot id ("" where /proc does not say)."""
    try:
        return Path(_BOOT_ID).read_text().strip()
    except OSError:
        return ""


def mark_script(workdir: str, pid: int | None = None) -> str:
    """sh that writes the owner file into ``workdir`` (this process by default)."""
    pid = os.getpid() if pid is None else pid
    line = f"{boot_id() or '-'} {pid} {process_start(pid) or '-'}"
    q = shlex.quote
    return f"mkdir -p {q(workdir)} && echo {q(line)} > {q(workdir + '/' + FILE)}"


def alive_test(folder_var: str = '"$d"') -> str:
    """sh condition, true when the folder's owner is a live process on this very kernel
    (same boot id, same pid with the same start time)."""
    return (
        f"{{ read -r ob op ost < {folder_var}/{FILE}; }} 2>/dev/null && "
        f'[ "$ob" = "$(cat {_BOOT_ID} 2>/dev/null)" ] && [ -n "$op" ] && '
        '[ "$(sed "s/.*) //" "/proc/$op/stat" 2>/dev/null | cut -d" " -f20)" = "$ost" ]'
    )
