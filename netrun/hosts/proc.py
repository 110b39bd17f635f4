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
    return start_in(stat)


def start_in(stat: str) -> str | None:
    """The start time in a /proc/PID/stat line: field 22, counted after the command name
    (which may hold spaces and parentheses: the fields start after the last ")")."""
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None


def start_time(pid: str = "$p", *, builtins: bool = False) -> str:
    """sh printing the start time of the process whose pid is in ``pid`` (a shell
    expansion, e.g. ``$p``), as ``process_start`` reads it; nothing once it is gone.
    With ``builtins``, with shell builtins alone (a container image with sh and no sed
    or cut, as the lab's), as ``save_pid`` reads it."""
    if builtins:
        return (
            f'{{ read -r s <"/proc/{pid}/stat"; }} 2>/dev/null || exit 0; s=${{s##*) }}; '
            'set -- $s; [ $# -ge 20 ] && shift 19 && echo "$1"'
        )
    return f'sed "s/.*) //" "/proc/{pid}/stat" 2>/dev/null | cut -d" " -f20'


def here(pid: str = "$p") -> str:
    """sh condition: the process whose pid is in ``pid`` (a shell expansion) lives in this
    shell's network namespace: on hosts that share a kernel (and so one pid space), a pid
    recorded by another host is that host's, and never to be signalled from this one.
    Where neither can be read (no /proc/PID/ns), it holds, as before namespaces."""
    return f'[ "$(readlink "/proc/{pid}/ns/net" 2>/dev/null)" = "$({READ_NETNS})" ]'


#: sh setting ``$nrs`` to the kernel start time of the process whose pid is in ``$nrp``
#: and ``$nrb`` to the boot id, with shell builtins alone (no process started: it runs in
#: a wrapper on the critical path of a client's start), the way ``process_start`` reads it.
_IDENTIFY = (
    'nrs=; nrb=; { read -r nrs <"/proc/$nrp/stat"; read -r nrb <' + BOOT_ID + "; } 2>/dev/null; "
    "nrs=${nrs##*) }; nrf() { if [ $# -ge 20 ]; then shift 19; nrs=$1; else nrs=; fi; }; "
    "nrf $nrs; "
)


def save_pid(pidfile: str, pid_expr: str = "$!") -> str:
    """sh saving a started process's identity in ``pidfile``, the one pid-file format of
    every process netrun starts: ``pid start boot`` (its pid, its kernel start time from
    /proc/PID/stat, the boot id), for ``recorded`` to tell it from a process that reused
    its pid. ``pid_expr``: ``$!`` after ``&``, or ``$$`` in a wrapper that then execs
    the process (exec keeps the pid and the start time). Sets ``$p`` to the pid."""
    return f'p={pid_expr}; nrp=$p; {_IDENTIFY}echo "$p $nrs $nrb" > {_file(pidfile)}'


def recorded(pidfile: str, *, builtins: bool = False) -> str:
    """sh condition: the process ``save_pid`` recorded in ``pidfile`` is still the one
    netrun started (same pid, start time and boot) and lives in this shell's network
    namespace (``here``): a reused pid, a process of another boot, or another host's on
    a shared kernel fails it, as does a file without the start time. Sets ``$p``.
    ``builtins``: the start time read with shell builtins (``start_time``)."""
    return (
        f'{{ read -r p nrst nrbt <{_file(pidfile)}; }} 2>/dev/null && [ -n "$p" ] && '
        f'[ -n "$nrst" ] && [ "$nrbt" = "$({READ_BOOT_ID})" ] && {here()} && '
        f'[ "$({start_time(builtins=builtins)})" = "$nrst" ]'
    )


def read_pid(pidfile: str) -> str:
    """sh setting ``$p`` to the pid in ``pidfile`` (the file's first word), or empty."""
    return f"p=; {{ read -r p _nr <{_file(pidfile)}; }} 2>/dev/null; "


def _file(pidfile: str) -> str:
    """``pidfile`` for sh: quoted, unless it is already a shell expansion (``"$f"``)."""
    return pidfile if pidfile.startswith('"$') else shlex.quote(pidfile)


def kill_recorded(pidfile: str, grace: float = 2, *, builtins: bool = False) -> str:
    """sh stopping the process recorded in ``pidfile`` (``save_pid``), if it is still
    the one netrun started (``recorded``): SIGTERM (and SIGCONT: a stopped process keeps
    a SIGTERM pending), SIGKILL after ``grace`` seconds if it still runs.

    The process group that pid leads, if it leads one, is stopped too: netrun starts its
    processes under ``timeout``, which leads its own group, and the pid recorded is
    ``timeout``'s. A forking server's children serve on when it is killed, and a server
    slow to end on SIGTERM outlives a ``timeout`` SIGKILLed after the grace (an orphaned
    ``iperf -s`` held its port on the lab): the group is signalled with the pid, and
    killed with it if the leader still runs after the grace (a pid that is gone, and
    may be reused, is never signalled again). A pid that leads no group names none (a
    group's id is its leader's pid, never another's while the group lives). The group
    is named as ``kill -s SIG -- -PGID``, the form dash's kill also takes (it
    refuses ``kill -TERM -- -PGID``, and a record runs under ``sh``). ``builtins``: as
    ``recorded``'s."""
    signal = 'kill -s TERM -- "-$p" 2>/dev/null; kill -TERM "$p" 2>/dev/null; '
    # the group first: while its leader lives, its id names no other group
    last = '{ kill -s KILL -- "-$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; }; '
    return (
        f"{recorded(pidfile, builtins=builtins)} || exit 0; "
        + signal
        + 'kill -CONT "$p" 2>/dev/null; '
        + wait_gone(grace)
        + f"[ $i -lt {polls(grace, 0.02)} ] || "
        + last
        + "true"
    )


def polls(seconds: float, poll_s: float) -> int:
    """How many looks, ``poll_s`` apart, fill ``seconds`` (1 s at 0.02 s: 50, not 51)."""
    return math.ceil(seconds / poll_s - 1e-9)


def wait_gone(seconds: float, poll_s: float = 0.02, *, then_kill: str = "") -> str:
    """sh that waits, at most ``seconds`` (looking every ``poll_s``), until the process
    whose pid is in ``$p`` is gone or a zombie (kill -0 still succeeds on a zombie, whose
    parent may never reap it); with ``then_kill`` (a signal, e.g. ``-KILL``), it sends
    that signal if the process still runs then.

    ``read``, a shell builtin, reads the state: no process is started per look. The
    second look comes after 2 ms, not ``poll_s``: a process just signalled (a time bound
    stopped in a sweep) is mostly gone by then, and the sweep ends some 18 ms sooner.
    It uses the shell variables ``i``, ``s`` and ``nr_w``.
    """
    steps = polls(seconds, poll_s)
    first = min(poll_s, 0.002)
    script = (
        # no pid: /proc//stat would read /proc/stat, the kernel's own, and wait it all out
        f'i=0; nr_w={first:g}; while [ -n "$p" ] && [ $i -lt {steps} ]; do '
        '{ read -r s <"/proc/$p/stat"; } 2>/dev/null || break; s=${s##*) }; '
        f"case ${{s%% *}} in Z|X) break ;; esac; sleep $nr_w; nr_w={poll_s:g}; i=$((i+1)); done; "
    )
    if then_kill:
        script += f'[ $i -lt {steps} ] || kill {shlex.quote(then_kill)} "$p" 2>/dev/null; '
    return script


def until_ready(pidfile: str, ready: str, seconds: float, poll_s: float = 0.05) -> str:
    """sh that runs ``ready`` every ``poll_s``, at most ``seconds``, until it leaves the
    loop (its ``break`` or ``exit``, once the process is ready), and stops looking at
    once when the process whose pid begins ``pidfile`` (``save_pid``) is gone."""
    return (
        f"i=0; while [ $i -lt {polls(seconds, poll_s)} ]; do {ready}; "
        f'kill -0 "$(cut -d" " -f1 {shlex.quote(pidfile)})" 2>/dev/null || break; '
        f"sleep {poll_s:g}; i=$((i+1)); done; "
    )


def state_script(pidfile: str, iface: str | None = None) -> str:
    """Print ``NETRUN_STATE <s>`` (the /proc state letter: T is stopped) of the process in
    ``pidfile`` when it is still what we started (``recorded``), and ``NETRUN_LINK
    <operstate>`` of ``iface``.
    """
    script = (
        f"if {recorded(pidfile)}; then "
        's=$(cat "/proc/$p/stat" 2>/dev/null); s=${s##*) }; echo "NETRUN_STATE ${s%% *}"; '
        "else echo NETRUN_STATE gone; fi; "
    )
    if iface:
        link = shlex.quote(f"/sys/class/net/{iface}/operstate")
        script += f'echo "NETRUN_LINK $(cat {link} 2>/dev/null || echo missing)"; '
    return script


def kill_script(pidfile: str, iface: str | None = None) -> str:
    """Kill the process in ``pidfile`` if it is still what we started (``recorded``), then
    drop the file.

    SIGTERM stays pending on a stopped (SIGSTOP) process, so SIGCONT follows it; whatever
    still lives after a second gets SIGKILL. The state is printed first (``state_script``).
    """
    return state_script(pidfile, iface) + (
        f"if {recorded(pidfile)}; then "
        'kill "$p" 2>/dev/null; kill -CONT "$p" 2>/dev/null; '
        + wait_gone(1.0, then_kill="-9")
        + f"fi; rm -f {_file(pidfile)}; true"
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
