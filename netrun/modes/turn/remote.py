"""TURN processes on hosts: the coturn relay netrun manages, and the tunnel on the client.

Both start in the background through ``Mode.change``, so their kill (by recorded pid and
start time) is written on the host first and runs on every exit path, a SIGKILLed run's
included (the next run's sweep, ``netrun cleanup``). Secrets travel only in files uploaded
over SFTP into a 0700 folder: never in a command line, which the log and ``ps`` show.
"""

from __future__ import annotations

import os
import shlex
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from netrun.errors import HostError
from netrun.hosts import proc
from netrun.modes.turn import commands as turn
from netrun.modes.turn import relay
from netrun.tools import ports

if TYPE_CHECKING:
    from netrun.hosts.host import Host
    from netrun.modes.base import Mode

#: Seconds coturn may take to listen, and the tunnel to print its banner (its own TURN
#: transactions give up after ~8 s).
RELAY_WAIT = 5.0
TUNNEL_WAIT = 15.0
LOG_LINES = 60


@dataclass(frozen=True)
class Relay:
    """Where the tunnel finds the TURN server, and (managed) where its log is."""

    address: str
    port: int
    kind: str  # "managed" (coturn netrun started) or "external"
    host: Host | None = None
    logfile: str | None = None


def private_dir(mode: Mode, host: Host, name: str) -> str:
    """A 0700 folder in the run's folder on ``host`` (removed with it, and by an undo)."""
    folder = f"{mode.ctx.workdir(host)}/{name}"
    q = shlex.quote(folder)
    mode.change(
        host,
        f"umask 077 && mkdir -p {q} && chmod 700 {shlex.quote(mode.ctx.workdir(host))} {q}",
        f"rm -rf {q}",
        what=f"remove {name} files",
    )
    return folder


def upload(host: Host, remote: str, text: str | bytes, timeout: float = 30) -> None:
    """A file written over SFTP (into a 0700 folder), from a 0600 local copy removed after."""
    data = text.encode() if isinstance(text, str) else text
    fd, local = tempfile.mkstemp(prefix="netrun-turn-")
    try:
        os.write(fd, data)
        os.close(fd)
        if host.transport is None:
            raise HostError(host.name, "not connected")
        host.transport.put(Path(local), remote, timeout=timeout)
        host.run(["chmod", "600", remote], timeout=15)
    finally:
        Path(local).unlink(missing_ok=True)


def start_relay(mode: Mode, host: Host, *, port: int, peers: list[str], password: str,
                user: str, lifetime: float) -> Relay:  # fmt: skip
    """coturn on ``host``'s data address, relaying only to ``peers``; HostError naming the
    host, the port and the fix when it does not listen."""
    address = host.data_ip
    # coturn listens on both: one round trip asks for a UDP, then a TCP holder
    probe = f"{ports.holder_script(port, 'udp')}; {ports.holder_script(port, 'tcp')}"
    busy = ports.holder(host.run(probe, timeout=15, check=False).stdout)
    if busy is not None:
        raise HostError(
            host.name,
            f"TURN port {port} on {host.name} is already in use (by {busy}): stop that "
            "program or set turn_port: to a free port",
        )
    folder = private_dir(mode, host, "turn-relay")
    conf, logfile = f"{folder}/turnserver.conf", f"{folder}/turnserver.log"
    pidfile = f"{folder}/relay.pid"
    upload(host, conf, relay.config_text(
        listen_ip=address, port=port, user=user, password=password, peers=peers,
        pidfile=f"{folder}/turnserver.pid", logfile=logfile,
    ))  # fmt: skip
    binary = str(host.vars.get("netrun_turnserver") or "turnserver")
    argv = ["timeout", "-k", "5", f"{lifetime:g}", *relay.command(conf, f"{folder}/db", binary)]
    q = shlex.quote
    start = f"{shlex.join(argv)} > {q(folder + '/stdout')} 2>&1 < /dev/null & " + proc.save_pid(
        pidfile
    )
    mode.change(host, start, proc.kill_recorded(pidfile), what=f"stop turnserver :{port}")
    listening = (
        f"ss -Hlnu 'sport = :{port}' | grep -q . && ss -Hlnt 'sport = :{port}' | grep -q . "
        "&& echo NETRUN_READY && exit 0"
    )
    wait = (
        proc.until_ready(pidfile, listening, RELAY_WAIT)
        + f"echo NETRUN_NOT_READY; tail -c 1500 {q(folder + '/stdout')} {q(logfile)} 2>/dev/null"
    )
    res = host.run(wait, timeout=RELAY_WAIT + 15, check=False)
    if "NETRUN_READY" not in res.stdout:
        text = relay.redact(res.stdout.split("NETRUN_NOT_READY", 1)[-1], password, user)
        if "not found" in text or "No such file or directory" in text.split("==>", 1)[0]:
            fix = f"{binary} not found: install coturn (apt-get install coturn)"
        elif "in use" in text.lower() or "cannot bind" in text.lower():
            fix = f"it could not bind: free port {port} or set turn_port:"
        else:
            last = [ln for ln in text.splitlines() if ln.strip()][-1:] or ["no output"]
            fix = f"it did not start ({last[0].strip()[:160]}); see its log"
        raise HostError(host.name, f"turnserver on {address}:{port} does not listen: {fix}")
    return Relay(address, port, "managed", host, logfile)


def relay_log(host: Host, logfile: str, *secrets: str) -> list[str]:
    """The last lines of a managed relay's log, with the run's credentials taken out."""
    q = shlex.quote(logfile)
    res = host.run(f"tail -n {LOG_LINES} {q} 2>/dev/null", timeout=15, check=False)
    return relay.redact(res.stdout, *secrets).splitlines()


@dataclass(frozen=True)
class Tunnel:
    """A started tunnel: its banner (the relayed address) and where its output goes."""

    host: Host
    banner: turn.Banner | None  # None: STUNner's turncat, which prints no relayed address
    out: str
    err: str
    pidfile: str


def install_tunnel(mode: Mode, host: Host, user: str, password: str) -> tuple[str, str]:
    """netrun's tunnel script and a 0600 credentials file on the client host."""
    folder = private_dir(mode, host, "turn-tunnel")
    script, auth = f"{folder}/{turn.SCRIPT_NAME}", f"{folder}/auth"
    upload(host, script, turn.tunnel_script())
    upload(host, auth, turn.auth_file_text(user, password))
    return script, auth


def start_tunnel(mode: Mode, host: Host, argv: list[str], tag: str) -> Tunnel:
    """Start the tunnel and wait for its banner; HostError with its one error line."""
    folder = f"{mode.ctx.workdir(host)}/turn-tunnel"
    out, err, pidfile = (f"{folder}/{tag}.{x}" for x in ("out", "err", "pid"))
    q = shlex.quote
    start = f"{shlex.join(argv)} > {q(out)} 2> {q(err)} < /dev/null & {proc.save_pid(pidfile)}"
    mode.change(host, start, proc.kill_recorded(pidfile), what="stop the TURN tunnel")
    relayed = f"grep -q '^relayed ' {q(out)} 2>/dev/null && break"
    wait = (
        proc.until_ready(pidfile, relayed, TUNNEL_WAIT)
        + f"cat {q(out)}; echo NETRUN_ERR; tail -c 1000 {q(err)}"
    )
    res = host.run(wait, timeout=TUNNEL_WAIT + 15, check=False)
    stdout, _, stderr = res.stdout.partition("NETRUN_ERR")
    banner = turn.parse_banner(stdout)
    if banner is None:
        lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
        said = next((ln for ln in lines if ln.startswith("turn tunnel: error:")), None)
        why = said or (lines[-1][:200] if lines else f"no relayed address in {TUNNEL_WAIT:g}s")
        raise HostError(host.name, f"TURN tunnel did not start: {why}")
    return Tunnel(host, banner, out, err, pidfile)


def start_turncat(
    mode: Mode, host: Host, argv: list[str], port: int, tag: str, *secrets: str
) -> Tunnel:
    """STUNner's turncat (``netrun_turncat``): its argv holds the credentials, so it runs
    from a 0600 script uploaded over SFTP (never in a logged command line); ready once its
    UDP listener is bound. HostError with its last line, credentials taken out."""
    folder = f"{mode.ctx.workdir(host)}/turn-tunnel"
    out, err, pidfile, script = (f"{folder}/{tag}.{x}" for x in ("out", "err", "pid", "sh"))
    upload(host, script, f"exec {shlex.join(argv)}\n")
    q = shlex.quote
    start = f"sh {q(script)} > {q(out)} 2> {q(err)} < /dev/null & {proc.save_pid(pidfile)}"
    mode.change(host, start, proc.kill_recorded(pidfile), what="stop turncat")
    bound = f"ss -Hlnu 'sport = :{int(port)}' | grep -q . && echo NETRUN_READY && exit 0"
    wait = (
        proc.until_ready(pidfile, bound, TUNNEL_WAIT)
        + f"echo NETRUN_ERR; tail -c 1000 {q(err)} {q(out)}"
    )
    res = host.run(wait, timeout=TUNNEL_WAIT + 15, check=False)
    if "NETRUN_READY" not in res.stdout:
        text = relay.redact(res.stdout.split("NETRUN_ERR", 1)[-1], *secrets)
        lines = [ln.strip() for ln in text.splitlines() if ln.strip() and "==>" not in ln]
        why = lines[-1][:200] if lines else f"no UDP listener on port {port} in {TUNNEL_WAIT:g}s"
        raise HostError(host.name, f"turncat did not start: {why}")
    return Tunnel(host, None, out, err, pidfile)


def stop_tunnel(tunnel: Tunnel) -> str:
    """Stop the tunnel (SIGTERM frees its allocation) and return its exit line, if any."""
    q = shlex.quote
    # in a subshell: the undo's "exit 0" for a spared pid must not skip the cat
    script = f"({proc.kill_recorded(tunnel.pidfile)}); cat {q(tunnel.out)}"
    res = tunnel.host.run(script, timeout=30, check=False)
    stats = [ln for ln in res.stdout.splitlines() if ln.startswith("stats ")]
    return stats[-1] if stats else ""


def nic_counters(host: Host, iface: str) -> dict[str, int] | None:
    """rx/tx packets of a host's NIC (/sys/class/net/IFACE/statistics), None if unreadable."""
    base = f"/sys/class/net/{iface}/statistics"
    res = host.run(f"cat {shlex.quote(base)}/rx_packets {shlex.quote(base)}/tx_packets",
                   timeout=15, check=False)  # fmt: skip
    values = res.stdout.split()
    if not res.ok or len(values) != 2 or not all(v.isdigit() for v in values):
        return None
    return {"rx_packets": int(values[0]), "tx_packets": int(values[1])}
