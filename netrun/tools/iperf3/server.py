"""Starting an iperf3 server in one round trip: a shell script and the line it answers.

Split from tools/iperf3/command.py and parse.py: the script makes the run's folder,
finds a free port, starts ``iperf3 -s`` with a lifetime bound and waits until it listens;
``parse_server_ready`` reads its NETRUN_READY / NETRUN_FAIL line.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Sequence

from netrun.hosts import proc
from netrun.tools.iperf3.result import Iperf3Error

#: The first QUICK looks for the server's socket, QUICK_S apart: iperf3 listens some 5-10 ms
#: after its start, and the test's client waits for it (the first test's start is on the
#: critical path of a single test). Then POLL_S apart, so a slow host is not kept busy.
QUICK, QUICK_S, POLL_S = 8, 0.004, 0.02

_SERVER_BODY = r"""
fail() { echo "NETRUN_FAIL $*"; exit 1; }
# the reason (mkdir's or chmod's own line) asked again only on failure: no fork otherwise
mkwork() { mkdir -p "$dir" && chmod 700 "$dir"; }
mkwork 2>/dev/null || fail "cannot create work directory $dir: $(mkwork 2>&1 | tail -n 1)"
command -v "$bin" >/dev/null 2>&1 || fail "iperf3 not found: $bin is not installed or not in PATH"
can_check=1
if command -v ss >/dev/null 2>&1; then
    listening() { [ -n "$(ss -ltnH "sport = :$1" 2>/dev/null)" ]; }
elif [ -r /proc/net/tcp ]; then
    listening() {
        cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk -v h="$(printf ':%04X' "$1")" \
            '$4 == "0A" && substr($2, length($2) - 4) == h { f = 1 } END { exit !f }'
    }
else
    can_check=0
    listening() { return 1; }
fi
alive() {
    if [ -r "/proc/$1/stat" ]; then
        # read, a builtin: no process per look (the state follows the last ") ")
        { read -r st <"/proc/$1/stat"; } 2>/dev/null || return 1
        st=${st##*) }; st=${st%% *}
        [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
    else
        kill -0 "$1" 2>/dev/null
    fi
}
holder() {
    h=$(ss -ltnpH "sport = :$1" 2>/dev/null \
        | sed -n 's/.*users:(("\([^"]*\)",pid=\([0-9]*\).*/\1 \2/p' | head -n 1)
    echo "NETRUN_BUSY $1 $h"
}
# Listening, but by our server? Two scripts that found one port free at once both start a
# server there; the one that lost the bind exits ("Address already in use") and tries the
# next port. Such a start beside ours (a fan-in's servers, a load's) is in this run folder,
# and its pid file is written before its iperf3 runs: with none, the port, free when looked
# at, is ours (leases keep other runs off the host), and ss -p, which reads every process's
# descriptors, is not run. Without ss -p's pids (another user's socket), the port counts as
# ours.
ours() {
    beside=
    for f in "$dir"/*."$1".pid; do
        if [ -e "$f" ] && [ "$f" != "$pidfile" ]; then beside=1; fi
    done
    [ -n "$beside" ] || return 0
    line=$(ss -ltnpH "sport = :$1" 2>/dev/null) || return 0
    case "$line" in *users:*) ;; *) return 0 ;; esac
    mine=; { read -r mine _nr <"$pidfile"; } 2>/dev/null
    [ -n "$mine" ] && case "$line" in *"pid=$mine,"*) return 0 ;; esac
    return 1
}
# a session of its own (setsid) is out of reach of a hangup; nohup where there is no setsid
detach=nohup
command -v setsid >/dev/null 2>&1 && detach=setsid
bound=
if [ -n "$lifetime" ] && command -v timeout >/dev/null 2>&1; then
    bound="timeout -k 5 $lifetime"
fi
busy=
for p in $ports; do
    if listening "$p"; then busy="$busy $p"; holder "$p"; continue; fi
    log="$dir/$tag.$p.log"
    pidfile="$dir/$tag.$p.pid"
    # iperf3 records its own pid (sh execs it): under timeout, $! is timeout's pid.
    $detach $bound sh -c '@SAVE_SELF@ && exec "$@"' "$pidfile" \
        "$bin" -s -1 $json -B "$bind" -p "$p" </dev/null >"$log" 2>&1 &
    pid=$!
    i=0
    state=wait
    while [ "$i" -lt "$steps" ]; do
        if listening "$p" && ours "$p"; then state=ready; break; fi
        if ! alive "$pid"; then state=dead; break; fi
        # iperf3 listens some 5-10 ms after its start: look often at first, then less
        if [ "$i" -lt @QUICK@ ]; then sleep @QUICK_S@; else sleep @POLL_S@; fi
        i=$((i + 1))
    done
    if [ "$state" = dead ]; then
        rm -f "$pidfile"
        if grep -q "Address already in use" "$log" 2>/dev/null; then
            busy="$busy $p"; holder "$p"; rm -f "$log"; continue
        fi
        fail "iperf3 server on port $p exited: $(tail -n 3 "$log" 2>/dev/null | tr '\n' ' ')"
    fi
    if [ "$state" = wait ] && ! { [ "$can_check" = 0 ] && alive "$pid"; }; then
        kill "$pid" 2>/dev/null
        rm -f "$pidfile"
        fail "iperf3 server on port $p not listening after ${wait_s}s:" \
            "$(tail -n 3 "$log" 2>/dev/null | tr '\n' ' ')"
    fi
    if [ -s "$pidfile" ]; then { read -r pid _nr <"$pidfile"; } 2>/dev/null; fi
    echo "NETRUN_READY $pid $p $log"
    exit 0
done
fail "all ports busy:$busy"
"""


def server_script(
    *,
    binary: str,
    bind_ip: str,
    ports: Sequence[int],
    workdir: str,
    tag: str,
    wait_s: float,
    lifetime: float | None = None,
    json: bool = False,
) -> str:
    """A POSIX sh script that starts one iperf3 server on the first free port of ``ports``
    (with ``json``, writing JSON: -J).

    It prints ``NETRUN_READY <pid> <port> <logfile>`` once the server really listens, or
    ``NETRUN_FAIL <reason>``; read it with ``parse_server_ready``. A port found taken gets a
    ``NETRUN_BUSY <port> [<program> <pid>]`` line (the holder when ``ss -p`` can tell).
    The server's identity (netrun.hosts.proc.save_pid: pid, start time, boot) is also
    written to ``<workdir>/<tag>.<port>.pid`` so a later sweep can stop what a killed run
    left, and never a process that reused its pid.
    """
    if not ports:
        raise ValueError("server_script needs at least one port")
    # QUICK looks QUICK_S apart, then POLL_S apart: wait_s in all
    steps = QUICK + max(1, math.ceil((wait_s - QUICK * QUICK_S) / POLL_S))
    q = shlex.quote
    head = [
        "set -u",
        'PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"; export PATH',
        f"bin={q(binary)}",
        f"bind={q(bind_ip)}",
        f"dir={q(workdir)}",
        f"tag={q(tag)}",
        f"ports={q(' '.join(str(int(p)) for p in ports))}",
        f"steps={steps}",
        f"wait_s={q(f'{wait_s:g}')}",
        # with a lifetime the server runs under timeout: it ends even if netrun vanished
        f"lifetime={math.ceil(lifetime) if lifetime else ''}",
        f"json={'-J' if json else ''}",
    ]
    body = _SERVER_BODY.replace("@SAVE_SELF@", proc.save_pid('"$0"', "$$"))
    body = body.replace("@QUICK@", str(QUICK)).replace("@QUICK_S@", f"{QUICK_S:g}")
    return "\n".join(head) + body.replace("@POLL_S@", f"{POLL_S:g}")


def parse_server_ready(text: str) -> tuple[int, int, str]:
    """(pid, port, logfile) from ``server_script``'s output, or ``Iperf3Error``.

    A "busy" error carries ``busy``: each taken port and who holds it ("iperf3 1234"), if known.
    """
    busy: dict[int, str | None] = {}
    for line in text.splitlines():
        words = line.split(maxsplit=2)
        if words[:1] == ["NETRUN_BUSY"] and len(words) >= 2 and words[1].isdigit():
            busy[int(words[1])] = words[2].strip() if len(words) == 3 else None
    for line in reversed(text.splitlines()):
        words = line.strip().split(maxsplit=3)
        if words[:1] == ["NETRUN_READY"] and len(words) == 4:
            try:
                return int(words[1]), int(words[2]), words[3]
            except ValueError:
                break
        if words[:1] == ["NETRUN_FAIL"]:
            reason = line.strip()[len("NETRUN_FAIL") :].strip()
            if reason.startswith("iperf3 not found"):
                kind = "missing"
            elif reason.startswith("all ports busy"):
                kind = "busy"
            else:
                kind = "error"
            err = Iperf3Error(kind, f"iperf3 server did not start: {reason}", text)
            err.busy = busy
            raise err
    raise Iperf3Error("bad-output", "iperf3 server start printed no NETRUN_READY line", text)
