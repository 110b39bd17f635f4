"""The FreeFlow router on one host, made sure of in one round trip.

Reuse a running router whose library is in place (unless netrun left it with another
image), or remove what netrun left and start one, then wait on the host until it publishes
the library; and in the same script read the overlay CIDR for VNET_PREFIX (the Flannel
lease, else the docker network's subnet) and the router image's labels (the lab's
stand-in says so). It used to be up to nine commands one after the other. The host's
subnet (HOST_IP_PREFIX) is read there too, so the router can start in the host's probe
(netrun.modes.docker.savers.probe). The script is two parts: ``begin`` (claim, lookups,
the router's ``docker run`` in the background) runs beside the host's engine and image
checks where they are made (ContainerMode.lead), ``finish`` after them. The script sets
``go=1`` when the iperf3 container may start; the controller reads its sections
(``router``, ``routerlogs``, ``routerpid``, ``vnet``, ``standin``) with ``read``.
``routerpid`` is the router container's PID 1 (docker's State.Pid, from the inspect the
script runs anyway) and the router's own process, its child: every counter reading on
the host reads that process's CPU (netrun.modes.docker.pathbytes, ``details.counters.<end>
.procs.router``), and the start script sets ``nr_p_router`` for the reading in its round trip.

FreeFlow's router socket and library live in the host's freeflow_dir, so two hosts that
see one folder there (namespaces of one machine, a shared filesystem) would break each
other's routers: each host first claims the folder for the run (``claim_script``), and
a host that finds another's claim starts nothing and says so.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import Any

from netrun.errors import ModeError
from netrun.hosts import proc
from netrun.modes.docker import launch
from netrun.tools import docker as dk

_FORMAT = (
    '{{.State.Running}}|{{.Image}}|{{.Id}}|{{index .Config.Labels "netrun"}}|'
    '{{index .Config.Labels "netrun.run_id"}}|{{.State.Pid}}'
)
#: sh setting ``nr_p_router`` to the router's own process: the first child of the router
#: container's PID 1 (``nr_rp``), which is a start script (FreeFlow's own runs the router
#: in a loop, the lab's in the background), else PID 1 itself (an image whose entrypoint
#: is the router). The kernel here has no /proc/PID/task/*/children: every process's stat
#: is read, by cat (which, unlike mawk, reads on past a process gone meanwhile) into one
#: awk, about 5 ms for a few hundred processes (a loop of sh's read took 66 ms for 116).
ROUTER_PID = (
    'nr_p_router=; case "$nr_rp" in ""|*[!0-9]*) nr_rp= ;; esac; '
    '[ -z "$nr_rp" ] || nr_p_router=$(cat /proc/[0-9]*/stat 2>/dev/null | awk -v p="$nr_rp" '
    '\'{ s = $0; sub(/^.*\\) /, "", s); split(s, f, " "); '
    "if (f[2] == p) { print $1; exit } }'); "
    'case "$nr_p_router" in ""|*[!0-9]*) nr_p_router=$nr_rp ;; esac'
)


@dataclass(frozen=True)
class RouterPlan:
    """What the script needs: the router's run command and where things are."""

    docker: str
    name: str
    library: str
    #: ``docker run`` of a new router.
    argv: list[str]
    #: The router image's id when the run checked it already (else looked up there).
    image_id: str | None
    image: str
    timeout: float
    #: vnet_prefix when the scenario sets it; else the lease's network, else the subnet.
    vnet: str | None
    subnet_env: str
    network: str
    #: A file in the run's folder: the router container's state, looked up beside its image.
    scratch: str
    #: The data address whose subnet becomes HOST_IP_PREFIX, worked out on the host
    #: (``PREFIX_TOKEN`` in ``argv``); None when host_ip_prefix sets it.
    data_ip: str | None = None


#: Stands for HOST_IP_PREFIX in the router's ``docker run``: the script replaces it with
#: the subnet of the host's data address, read there (no probe facts needed first).
PREFIX_TOKEN = "@@netrun-hostprefix@@"
#: awk printing the network (a.b.c.d/len) of the `ip -o -4 addr` entry that holds ``ip``.
_NETWORK_AWK = (
    '{ for (i = 1; i < NF; i++) if ($i == "inet") { split($(i + 1), a, "/"); '
    'if (a[1] != ip) continue; n = split(a[1], o, "."); len = a[2] + 0; net = ""; '
    "for (k = 1; k <= 4; k++) { b = len - 8 * (k - 1); b = b < 0 ? 0 : (b > 8 ? 8 : b); "
    'm = 2 ^ (8 - b); net = net (k > 1 ? "." : "") (o[k] - o[k] % m) } '
    'print net "/" len; exit } }'
)


def prefix_script(data_ip: str) -> str:
    """sh setting ``hostprefix`` to the subnet of ``data_ip`` on this host (empty: none)."""
    return (
        f"hostprefix=$(ip -o -4 addr show 2>/dev/null | awk -v ip={shlex.quote(data_ip)} "
        f"{shlex.quote(_NETWORK_AWK)})"
    )


def claim_file(freeflow_dir: str, run_id: str) -> str:
    """The file in freeflow_dir naming the host that uses it in this run."""
    return f"{freeflow_dir.rstrip('/')}/.netrun-{run_id}.host"


def claim_script(path: str, host: str) -> str:
    """sh claiming freeflow_dir for this host (its boot id and network namespace, and
    ``host`` for messages) unless another host did first: then ``ffclaim`` is that
    host's name. The claim is made atomically (noclobber), so of two hosts starting at
    once exactly one wins; the loser waits for the winner's two lines before it reads
    them. A folder netrun cannot write claims nothing (the router's own checks then say
    what is wrong)."""
    q = shlex.quote
    f = q(path)
    return (
        f"ffclaim=; ffme=$({proc.READ_HOST_ID}); "
        f"if ! (set -C; printf '%s\\n%s\\n' \"$ffme\" {q(host)} > {f}) 2>/dev/null "
        f"&& [ -f {f} ]; then "
        # the winner creates the file, then writes it: wait (up to 1 s) for both lines
        f'ffi=0; while [ "$(wc -l < {f} 2>/dev/null)" -lt 2 ] 2>/dev/null && [ $ffi -lt 20 ]; '
        "do sleep 0.05; ffi=$((ffi+1)); done; "
        f"{{ read -r ffcid; read -r ffcname; }} < {f}; "
        f'[ "$ffcid" = "$ffme" ] || ffclaim=${{ffcname:-another host}}; fi'
    )


def unclaim_script(path: str) -> str:
    """The undo of ``claim_script``: remove the claim if it is this host's."""
    f = shlex.quote(path)
    return f'[ "$(head -n 1 {f} 2>/dev/null)" = "$({proc.READ_HOST_ID})" ] && rm -f {f}; true'


def begin(plan: RouterPlan, claim: str = "") -> str:
    """sh making sure of the router up to its start: ``claim`` (the claim on freeflow_dir,
    with its undo record), the lookups, the outcome in ``nr_ro`` and, where a router is to
    start and its image is on the host, its ``docker run`` in the background (pid in
    ``nr_rr``). Sent before the start script (ContainerMode.lead): beside the engine and
    image checks of the host's first command, so the router's start, some 0.1-0.3 s of the
    engine's work, overlaps them rather than the end's own ``docker run``. A missing image
    starts nothing here (the checks stop the script for the controller to pull or load
    it); should the script go on, ``finish`` runs the router's ``docker run`` itself."""
    q = shlex.quote
    d = q(plan.docker)
    # one look at the router image: the id a running router must have (unless known) and
    # its labels (whether it is the lab's stand-in): each docker command costs some 0.04 s,
    # so the preamble's own lookup of it is asked first (launch.LOOKED)
    look = f"{d} image inspect -f {q(launch.ID_LABELS)} {q(plan.image)}"
    looked = launch.LOOKED
    want = q(plan.image_id) if plan.image_id else '"${img%% *}"'
    vnet = (
        q(plan.vnet)
        if plan.vnet
        else f"$(sed -n 's/^FLANNEL_NETWORK=//p' {q(plan.subnet_env)} 2>/dev/null | "
        "tr -d '\"' | head -n 1)"
    )
    subnet = (
        f"{d} network inspect -f '{{{{range .IPAM.Config}}}}{{{{.Subnet}}}} {{{{end}}}}' "
        f"{q(plan.network)}"
    )
    prefix = prefix_script(plan.data_ip) if plan.data_ip else "hostprefix=1"
    run = launch.shell_words(plan.argv, {PREFIX_TOKEN: "hostprefix"})
    state, net, out = q(plan.scratch), q(f"{plan.scratch}.vnet"), q(f"{plan.scratch}.run")
    # the image, the router container and (without a lease) the docker network's subnet
    # asked side by side (a docker command each); the overlay's CIDR is known before the
    # end's container starts (``finish``: started beside the router)
    return f"""rn={q(plan.name)}; lib={q(plan.library)}; go=; nr_rp=; nr_rr=; nr_ro=; vnet={vnet}
nr_router_run() {{ {run}; }}
{claim or ":"}
mkdir -p {q(plan.scratch.rsplit("/", 1)[0] or "/")}
{d} container inspect -f {q(_FORMAT)} "$rn" >{state} 2>/dev/null & nr_sv=$!
[ -n "$vnet" ] || {subnet} >{net} 2>/dev/null & nr_nv=$!
nr_look=; ! command -v {looked} >/dev/null 2>&1 || {looked} {q(plan.image)}
img=$nr_look; [ -n "$img" ] || img=$({look} 2>/dev/null) || img=
wait $nr_sv && st=$(cat {state}) || st=; rm -f {state}
wait $nr_nv; [ -n "$vnet" ] || vnet=$(cut -d' ' -f1 {net} 2>/dev/null); rm -f {net}
case "$vnet" in ''|*[!0-9./]*) vnet= ;; esac
want={want}
o=$IFS; IFS='|'; set -- $st; IFS=$o
if [ -n "${{ffclaim:-}}" ]; then
  nr_ro="shared $ffclaim"
elif [ -n "$st" ] && [ "$1" = true ] && {{ [ "$4" != 1 ] || [ -z "$want" ] || [ "$2" = "$want" ]; }} && [ -s "$lib" ]; then
  nr_ro="reused $3 $2 $5"; go=1; nr_rp=$6
elif [ -n "$st" ] && [ "$4" != 1 ]; then
  nr_ro=foreign
else
  [ -z "$st" ] || {d} rm -f "$rn" >/dev/null 2>&1
  {prefix}
  if [ -z "$hostprefix" ]; then nr_ro=noprefix
  elif ! rm -f "$lib" 2>/dev/null; then nr_ro=libstuck
  else nr_ro=start; [ -z "$img" ] || {{ nr_router_run >{out} 2>&1 & nr_rr=$!; }}
  fi
fi"""  # noqa: E501


def finish(plan: RouterPlan, early: launch.Ahead | None = None) -> str:
    """sh making sure of the router (see the module docstring) once ``begin`` ran earlier
    in the same script. ``early``: the app container's start, whose PID 1 waits for the
    library (FreeFlow.gate_argv), run beside a router being started (the old library is
    gone by then, so the wait cannot pass on it), and dropped when no router came up."""
    q = shlex.quote
    d = q(plan.docker)
    out = q(f"{plan.scratch}.run")
    start_early = f'if [ -n "$vnet" ]; then {early.run}; fi' if early else ":"
    drop_early = f'[ "$go" = 1 ] || {{ {early.drop}; }}' if early else ""
    return f"""echo ==netrun:router==
if [ "$nr_ro" != start ]; then
  echo "$nr_ro"
else
  {start_early}
  if [ -n "$nr_rr" ]; then wait "$nr_rr"; nr_rc=$?; else nr_router_run >{out} 2>&1; nr_rc=$?; fi
  if [ "$nr_rc" != 0 ]; then echo runfailed; tail -n 3 {out}
  else
    end=$(($(date +%s) + {max(1, int(plan.timeout + 0.999))})); r=true; k=0
    while :; do
      if [ -s "$lib" ]; then go=1; break; fi
      if [ $((k % 10)) = 9 ]; then
        r=$({d} container inspect -f '{{{{.State.Running}}}}' "$rn" 2>/dev/null)
        [ "$r" = true ] || break
        [ "$(date +%s)" -lt "$end" ] || break
      fi
      k=$((k + 1)); sleep 0.01
    done
    if [ "$go" = 1 ]; then
      st=$({d} container inspect -f '{{{{.State.Running}}}} {{{{.Id}}}} {{{{.Image}}}} {{{{.State.Pid}}}}' "$rn" 2>/dev/null)
      r=${{st%% *}}; [ "$r" = true ] || go=
    fi
    if [ "$go" = 1 ]; then
      echo "started ${{st#* }}"; nr_rp=${{st##* }}
    elif [ "$r" = true ]; then echo timeout; else echo exited; fi
    [ "$go" = 1 ] || {{ echo ==netrun:routerlogs==; {d} logs --tail 3 "$rn" 2>&1; }}
  fi
  rm -f {out}
fi
[ -n "$vnet" ] || go=
{drop_early}
{ROUTER_PID}
echo ==netrun:routerpid==; echo "$nr_rp $nr_p_router"
echo ==netrun:vnet==; echo "$vnet"
echo ==netrun:standin==; [ -z "$img" ] || printf '%s\\n' "${{img#* }}"
"""  # noqa: E501


def router_pids(text: str) -> dict[str, int]:
    """``pid`` (the router's own process, whose CPU the counter readings read) and
    ``container_pid`` (the router container's PID 1) from the "routerpid" section; empty
    when the host could not tell."""
    words = text.split()
    if len(words) != 2 or not all(w.isdigit() and int(w) > 0 for w in words):
        return {}
    return {"pid": int(words[1]), "container_pid": int(words[0])}


class Pids(dict[str, int]):
    """Host name -> the pid of its router's own process, as last found in the run (one
    per run: RunContext.family): the counter readings of every FreeFlow test on the host
    read its CPU, kept containers' tests and armed clients included."""


@dataclass(frozen=True)
class RouterState:
    """What the script found: the router's record for the details, the VNET_PREFIX, and
    whether the router image is the lab's stand-in."""

    record: dict[str, Any]
    vnet: str
    standin: bool


def read(found: dict[str, str], plan: RouterPlan, host: str, run_id: str) -> RouterState:
    """The router's state from the script's sections; a ModeError says what went wrong."""
    words = found.get("router", "").split()
    outcome = words[0] if words else "missing"
    record: dict[str, Any] = {"name": plan.name, "image": plan.image}
    where = f"{host}: FreeFlow router '{plan.name}'"
    if outcome == "reused" and len(words) >= 3:
        mine = len(words) > 3 and words[3] == run_id
        record.update(reused=not mine, id=words[1], image_id=words[2])
    elif outcome == "started" and len(words) >= 3:
        record.update(reused=False, id=words[1], image_id=words[2])
    elif outcome == "shared":
        other = " ".join(words[1:]) or "another host"
        folder = plan.library.rsplit("/", 1)[0] or "/"
        raise ModeError(
            f"{host}: freeflow_dir {folder} is {other}'s too in this run (one folder seen "
            "by both hosts: FreeFlow's router socket and library there would collide); "
            "give each host its own netrun_freeflow_dir"
        )
    elif outcome == "foreign":
        raise ModeError(
            f"{host}: a container named '{plan.name}' exists but is not a healthy "
            "router (and netrun did not start it); remove it or set router_name"
        )
    elif outcome == "noprefix":
        raise ModeError(
            f"{host}: cannot tell the subnet of data address {plan.data_ip} from "
            "'ip -o -4 addr show'; set host_ip_prefix (inventory netrun_host_ip_prefix)"
        )
    elif outcome == "libstuck":
        raise ModeError(
            f"{host}: cannot remove the old {plan.library} before starting "
            "the router (it belongs to root): set ansible_become: true"
        )
    elif outcome == "runfailed":
        output = found["router"].partition("\n")[2]
        raise dk.DockerError(f"{where}: docker run failed", output)
    elif outcome in ("timeout", "exited"):
        tail = " | ".join(found.get("routerlogs", "").strip().splitlines()[-3:])
        what = (
            "exited at once"
            if outcome == "exited"
            else f"did not publish {plan.library} within {plan.timeout:g}s"
        )
        raise ModeError(
            f"{where} {what}; check the router image {plan.image}"
            + (f" (logs: {tail})" if tail else "")
        )
    else:
        raise ModeError(f"{where}: no answer from the host's router check")
    record.update(router_pids(found.get("routerpid", "")))
    vnet = found.get("vnet", "").strip()
    if not vnet:
        raise ModeError(f"{host}: cannot tell the overlay CIDR; set vnet_prefix")
    try:
        labels = json.loads(found.get("standin", "").strip() or "{}")
    except ValueError:
        labels = {}
    standin = isinstance(labels, dict) and bool(labels.get("netrun.standin"))
    return RouterState(record, vnet, standin)
