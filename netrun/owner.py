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

from netrun.proc import READ_BOOT_ID, boot_id, process_start, start_time

FILE = "owner"


def mark_script(workdir: str) -> str:
    """sh that writes the owner file (this process) into ``workdir``."""
    pid = os.getpid()
    line = f"{boot_id() or '-'} {pid} {process_start(pid) or '-'}"
    q = shlex.quote
    return f"mkdir -p {q(workdir)} && echo {q(line)} > {q(workdir + '/' + FILE)}"


def alive_test() -> str:
    """sh condition, true when the owner of the folder in ``$d`` is a live process on this
    very kernel (same boot id, same pid with the same start time)."""
    return (
        f'{{ read -r ob op ost < "$d"/{FILE}; }} 2>/dev/null && '
        f'[ "$ob" = "$({READ_BOOT_ID})" ] && [ -n "$op" ] && '
        f'[ "$({start_time("$op")})" = "$ost" ]'
    )
