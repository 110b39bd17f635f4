"""A host's kernel and processes as netrun's scripts see them (mostly through /proc), in
Python here and in the sh it sends there.

Several scripts ask the same questions of a host: which boot this is (a run's owner
mark, the clock's shared-kernel check, the folder probe), when a process started (to
tell a reused pid apart), whether a process has ended (a kill that waits) and whether
one it started is ready yet (a server's start). Each is written once here, so the
scripts agree on how they ask.
"""

from __future__ import annotations

import math
import shlex
from pathlib import Path

#: The kernel's id for this boot: equal on two hosts only when they are one kernel.
BOOT_ID = "/proc/sys/kernel/random/boot_id"
#: sh printing the boot id (nothing where /proc does not say).
READ_BOOT_ID = f"cat {BOOT_ID} 2>/dev/null"
#: sh printing the shell's network namespace (``net:[4026531840]``; nothing where /proc
#: does not say). Hosts that are namespaces or containers of one machine share a kernel,
#: its boot id and often a filesystem: this is what tells them apart.
READ_NETNS = "readlink /proc/self/ns/net 2>/dev/null"
#: sh printing who this host is on its kernel: boot id and network namespace, one line.
READ_HOST_ID = f'echo "$({READ_BOOT_ID}) $({READ_NETNS})"'


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


def here(pid: str = "$p") -> str:
    """sh condition: the process whose pid is in ``pid`` (a shell expansion) lives in this
    shell's network namespace: on hosts that share a kernel (and so one pid space), a pid
    recorded by another host is that host's, and never to be signalled from this one.
    Where neither can be read (no /proc/PID/ns), it holds, as before namespaces."""
    return f'[ "$(readlink "/proc/{pid}/ns/net" 2>/dev/null)" = "$({READ_NETNS})" ]'


def runs(word: str) -> str:
    """sh condition: the process whose pid is in ``$p`` still runs a command line holding
    ``word`` (it is still what netrun started, not a process that reused its pid) in this
    host's network namespace (``here``)."""
    return f'[ -n "$p" ] && grep -q {shlex.quote(word)} "/proc/$p/cmdline" 2>/dev/null && {here()}'


def polls(seconds: float, poll_s: float) -> int:
    """How many looks, ``poll_s`` apart, fill ``seconds`` (1 s at 0.02 s: 50, not 51)."""
    return math.ceil(seconds / poll_s - 1e-9)


def wait_gone(seconds: float, poll_s: float = 0.02, *, then_kill: str = "") -> str:
    """sh that waits, at most ``seconds`` (looking every ``poll_s``), until the process
    whose pid is in ``$p`` is gone or a zombie (kill -0 still succeeds on a zombie, whose
    parent may never reap it); with ``then_kill`` (a signal, e.g. ``-KILL``), it sends
    that signal if the process still runs then.

    ``read``, a shell builtin, reads the state: no process is started per look. It
    uses the shell variables ``i`` and ``s``.
    """
    steps = polls(seconds, poll_s)
    script = (
        # no pid: /proc//stat would read /proc/stat, the kernel's own, and wait it all out
        f'i=0; while [ -n "$p" ] && [ $i -lt {steps} ]; do '
        '{ read -r s <"/proc/$p/stat"; } 2>/dev/null || break; s=${s##*) }; '
        f"case ${{s%% *}} in Z|X) break ;; esac; sleep {poll_s:g}; i=$((i+1)); done; "
    )
    if then_kill:
        script += f'[ $i -lt {steps} ] || kill {shlex.quote(then_kill)} "$p" 2>/dev/null; '
    return script


def until_ready(pidfile: str, ready: str, seconds: float, poll_s: float = 0.05) -> str:
    """sh that runs ``ready`` every ``poll_s``, at most ``seconds``, until it leaves the
    loop (its ``break`` or ``exit``, once the process is ready), and stops looking at
    once when the process whose pid begins ``pidfile`` (netrun.cleanup.undo.save_pid) is gone."""
    return (
        f"i=0; while [ $i -lt {polls(seconds, poll_s)} ]; do {ready}; "
        f'kill -0 "$(cut -d" " -f1 {shlex.quote(pidfile)})" 2>/dev/null || break; '
        f"sleep {poll_s:g}; i=$((i+1)); done; "
    )


def state_script(pidfile: str, iface: str | None = None, must_contain: str = "iperf") -> str:
    """Print ``NETRUN_STATE <s>`` (the /proc state letter: T is stopped) of the process in
    ``pidfile`` when it is still what we started, and ``NETRUN_LINK <operstate>`` of ``iface``.
    """
    f = shlex.quote(pidfile)
    script = (
        f"p=$(cat {f} 2>/dev/null); "
        f"if {runs(must_contain)}; then "
        's=$(cat "/proc/$p/stat" 2>/dev/null); s=${s##*) }; echo "NETRUN_STATE ${s%% *}"; '
        "else echo NETRUN_STATE gone; fi; "
    )
    if iface:
        link = shlex.quote(f"/sys/class/net/{iface}/operstate")
        script += f'echo "NETRUN_LINK $(cat {link} 2>/dev/null || echo missing)"; '
    return script


def kill_script(pidfile: str, must_contain: str = "iperf", iface: str | None = None) -> str:
    """Kill the process in ``pidfile`` if it is still what we started, then drop the file.

    SIGTERM stays pending on a stopped (SIGSTOP) process, so SIGCONT follows it; whatever
    still lives after a second gets SIGKILL. The state is printed first (``state_script``).
    """
    f = shlex.quote(pidfile)
    return state_script(pidfile, iface, must_contain) + (
        f"if {runs(must_contain)}; then "
        'kill "$p" 2>/dev/null; kill -CONT "$p" 2>/dev/null; '
        + wait_gone(1.0, then_kill="-9")
        + f"fi; rm -f {f}; true"
    )


def read_state(text: str) -> tuple[str | None, str | None]:
    """(process state letter or "gone", link operstate) from ``state_script``'s output."""
    state = link = None
    for line in text.splitlines():
        words = line.split()
        if len(words) == 2 and words[0] == "NETRUN_STATE":
            state = words[1]
        elif len(words) == 2 and words[0] == "NETRUN_LINK":
            link = words[1]
    return state, link
