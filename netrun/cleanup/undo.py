"""Undo records: what a run changed on a host, written down on that host before the change.

Whatever a run changes (a mode's sysctl, file or process, a test's MTU) it first records
how to undo, as one small sh file in the run's folder on the host (``<workdir>/undo/``),
and in the controller's run journal; the controller holds the record in its run's one
ledger (netrun.cleanup.ledger), in a scope (the test's, one kept for the next test, the
run's), until it runs. Running a record deletes its file once it worked; a record still
there when the run ends (the run was SIGKILLed, the controller lost power) is run by the
next run's stale sweep or by ``netrun cleanup``, newest first, before the folder is
removed. The record is written first, so there is no moment when a change exists that
nothing knows how to undo.
"""

from __future__ import annotations

import itertools
import shlex
import threading
import time
from dataclasses import dataclass

FOLDER = "undo"
_counter = itertools.count()
_lock = threading.Lock()


@dataclass(frozen=True)
class Record:
    """One undo step on one host: where its file is, and the command it runs."""

    host: str
    path: str
    command: str
    what: str
    #: Run with sudo (as the change was); a sweep runs it with the sweep's privilege.
    sudo: bool = False


def guarded(record: Record, command: str) -> str:
    """sh writing ``record``, then running ``command`` only if the record was written."""
    return write_script(record) + " && {\n" + command + "\n}"


def new_path(workdir: str) -> str:
    """A record file name that sorts after every earlier one of this run (newest last)."""
    with _lock:
        seq = next(_counter)
    return f"{workdir}/{FOLDER}/{time.time_ns():020d}-{seq:06d}.sh"


def write_script(record: Record) -> str:
    """sh that writes the record (atomically: a half-written undo must never run)."""
    q = shlex.quote
    folder = record.path.rsplit("/", 1)[0]
    what = " ".join(record.what.split())  # one comment line: a newline would start a command
    body = f"# {what}\n{record.command}\n"
    return (
        f"mkdir -p {q(folder)} && printf %s {q(body)} > {q(record.path + '.new')} && "
        f"mv {q(record.path + '.new')} {q(record.path)}"
    )


def run_script(record: Record) -> str:
    """sh that runs one record and deletes it once it worked (a record that is gone has
    already run; one that failed stays for the run's final sweep to try again)."""
    p = shlex.quote(record.path)
    return f"if [ -f {p} ]; then sh {p} && rm -f {p}; fi"


def sweep_script(folder_var: str = '"$d"') -> str:
    """sh (for cleanup_script's loop over run folders) running every record left, newest
    first, each echoed as "undone: <what>" (or "undo failed: <what>": the folder, and so
    the record, is removed next whatever happens)."""
    return (
        f"for u in $(ls -r {folder_var}/{FOLDER} 2>/dev/null); do "
        f'u={folder_var}/{FOLDER}/"$u"; case "$u" in *.sh) ;; *) continue;; esac; '
        'w=$(sed -n "1s/^# //p" "$u"); '
        'if sh "$u" >/dev/null 2>&1; then echo "undone: $w"; else echo "undo failed: $w"; fi; '
        'rm -f "$u"; done; '
    )
