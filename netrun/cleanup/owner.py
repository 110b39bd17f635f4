"""A run folder's owner: which netrun process a folder on a host belongs to, and whether
it still runs.

``netrun cleanup`` sweeps every ``netrun-*`` folder in a host's remote tmp, and the run
journal that names live runs is this controller's (beside one history database) only.
So each run marks its folder on every host, in the probe's round trip, with its
process's kernel boot id, pid and start time. A sweep on the same kernel (the emulated
lab's hosts, ``ansible_connection: local``) can then see that the owner is alive and
leave its records, pid files and containers alone; on another kernel the boot id
differs and the sweep goes on as before.

The folder also says which host made it (``HOST_FILE``: the host's boot id and network
namespace, netrun.hosts.proc.READ_HOST_ID, written by the host itself). Hosts that share a
filesystem (namespaces or containers of one machine in its /tmp, NFS-mounted homes) see
each other's folders; a sweep acts only on the folders its own host made.
"""

from __future__ import annotations

import os
import shlex

from netrun.hosts.proc import READ_BOOT_ID, READ_HOST_ID, boot_id, process_start, start_time

FILE = "owner"
#: The file naming the host that made the folder (its boot id and network namespace).
HOST_FILE = "host"


def mark_script(workdir: str) -> str:
    """sh that writes the owner file (this process) and the host file (the host running
    it) into ``workdir``."""
    pid = os.getpid()
    line = f"{boot_id() or '-'} {pid} {process_start(pid) or '-'}"
    q = shlex.quote
    return (
        f"mkdir -p {q(workdir)} && {READ_HOST_ID} > {q(workdir + '/' + HOST_FILE)} && "
        f"echo {q(line)} > {q(workdir + '/' + FILE)}"
    )


def mine_test() -> str:
    """sh condition, true when the folder in ``$d`` is this host's: its host file names
    this host (``$nrme``, set by ``ME``), or it has none (a folder of a version before the
    host file). A host file that cannot be read is another's."""
    return (
        f'{{ [ ! -e "$d"/{HOST_FILE} ] || [ "$(cat "$d"/{HOST_FILE} 2>/dev/null)" = "$nrme" ]; }}'
    )


#: sh setting ``$nrme`` to this host's identity, for ``mine_test`` (names no caller's
#: script uses: a sweep may run inside another script, e.g. after a client's ``exit $r``).
ME = f"nrme=$({READ_HOST_ID}); "


def alive_test() -> str:
    """sh condition, true when the owner of the folder in ``$d`` is a live process on this
    very kernel (same boot id, same pid with the same start time)."""
    return (
        f'{{ read -r ob op ost < "$d"/{FILE}; }} 2>/dev/null && '
        f'[ "$ob" = "$({READ_BOOT_ID})" ] && [ -n "$op" ] && '
        f'[ "$({start_time("$op")})" = "$ost" ]'
    )
