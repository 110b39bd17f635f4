"""What netrun reads of a host's /proc, in Python here and in the sh it sends there.

Several scripts ask the same questions of a host's kernel: which boot this is (a run's
owner mark, the clock's shared-kernel check, the folder probe) and when a process
started (to tell a reused pid apart). Each is written once here, so the scripts agree
on how /proc is read.
"""

from __future__ import annotations

from pathlib import Path

#: The kernel's id for this boot: equal on two hosts only when they are one kernel.
BOOT_ID = "/proc/sys/kernel/random/boot_id"
#: sh printing the boot id (nothing where /proc does not say).
READ_BOOT_ID = f"cat {BOOT_ID} 2>/dev/null"


def boot_id() -> str:
    """This kernel's boot id ("" where /proc does not say)."""
    try:
        return Path(BOOT_ID).read_text().strip()
    except OSError:
        return ""


def process_start(pid: int) -> str | None:
    """The kernel's start time of a process (to tell a reused pid apart), or None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 22, counted after the command name (which may hold spaces and parentheses).
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None


def start_time(pid: str = "$p") -> str:
    """sh printing the start time of the process whose pid is in ``pid`` (a shell
    expansion, e.g. ``$p``), as ``process_start`` reads it; nothing once it is gone."""
    return f'sed "s/.*) //" "/proc/{pid}/stat" 2>/dev/null | cut -d" " -f20'
