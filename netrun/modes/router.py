"""The FreeFlow router on one host, made sure of in one round trip.

Reuse a running router whose library is in place (unless netrun left it with another
image), or remove what netrun left and start one, then wait on the host until it publishes
the library; and in the same script read the overlay CIDR for VNET_PREFIX (the Flannel
lease, else the docker network's subnet) and the router image's labels (the lab's
stand-in says so). It used to be up to nine commands one after the other. The script sets
``go=1`` when the iperf3 container may start; the controller reads its sections
(``router``, ``routerlogs``, ``vnet``, ``standin``) with ``read``.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import Any

from netrun.errors import ModeError
from netrun.tools import docker as dk

_FORMAT = (
    '{{.State.Running}}|{{.Image}}|{{.Id}}|{{index .Config.Labels "netrun"}}|'
    '{{index .Config.Labels "netrun.run_id"}}'
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


def script(plan: RouterPlan) -> str:
    q = shlex.quote
    d = q(plan.docker)
    want = q(plan.image_id) if plan.image_id else f"$({d} image inspect -f '{{{{.Id}}}}' "
    if not plan.image_id:
        want += f"{q(plan.image)} 2>/dev/null)"
    vnet = (
        q(plan.vnet)
        if plan.vnet
        else f"$(sed -n 's/^FLANNEL_NETWORK=//p' {q(plan.subnet_env)} 2>/dev/null | "
        "tr -d '\"' | head -n 1)"
    )
    return f"""rn={q(plan.name)}; lib={q(plan.library)}; want={want}; go=
st=$({d} container inspect -f {q(_FORMAT)} "$rn" 2>/dev/null) || st=
o=$IFS; IFS='|'; set -- $st; IFS=$o
echo ==netrun:router==
if [ -n "$st" ] && [ "$1" = true ] && {{ [ "$4" != 1 ] || [ -z "$want" ] || [ "$2" = "$want" ]; }} && [ -s "$lib" ]; then
  echo "reused $3 $2 $5"; go=1
elif [ -n "$st" ] && [ "$4" != 1 ]; then
  echo foreign
else
  [ -z "$st" ] || {d} rm -f "$rn" >/dev/null 2>&1
  if ! rm -f "$lib" 2>/dev/null; then echo libstuck
  elif ! out=$({shlex.join(plan.argv)} 2>&1); then echo runfailed; echo "$out" | tail -n 3
  else
    end=$(($(date +%s) + {max(1, int(plan.timeout + 0.999))})); r=true
    while :; do
      r=$({d} container inspect -f '{{{{.State.Running}}}}' "$rn" 2>/dev/null)
      [ "$r" = true ] || break
      if [ -s "$lib" ]; then go=1; break; fi
      [ "$(date +%s)" -lt "$end" ] || break
      sleep 0.05
    done
    if [ "$go" = 1 ]; then echo "started $({d} container inspect -f '{{{{.Id}}}} {{{{.Image}}}}' "$rn")"
    elif [ "$r" = true ]; then echo timeout; else echo exited; fi
    [ "$go" = 1 ] || {{ echo ==netrun:routerlogs==; {d} logs --tail 3 "$rn" 2>&1; }}
  fi
fi
vnet={vnet}
[ -n "$vnet" ] || vnet=$({d} network inspect -f '{{{{range .IPAM.Config}}}}{{{{.Subnet}}}} {{{{end}}}}' {q(plan.network)} 2>/dev/null | cut -d' ' -f1)
case "$vnet" in ''|*[!0-9./]*) vnet=; go= ;; esac
echo ==netrun:vnet==; echo "$vnet"
echo ==netrun:standin==; {d} image inspect --format '{{{{json .Config.Labels}}}}' {q(plan.image)} 2>/dev/null
"""  # noqa: E501


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
    elif outcome == "foreign":
        raise ModeError(
            f"{host}: a container named '{plan.name}' exists but is not a healthy "
            "router (and netrun did not start it); remove it or set router_name"
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
    vnet = found.get("vnet", "").strip()
    if not vnet:
        raise ModeError(f"{host}: cannot tell the overlay CIDR; set vnet_prefix")
    try:
        labels = json.loads(found.get("standin", "").strip() or "{}")
    except ValueError:
        labels = {}
    standin = isinstance(labels, dict) and bool(labels.get("netrun.standin"))
    return RouterState(record, vnet, standin)
