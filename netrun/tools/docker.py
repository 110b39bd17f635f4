"""The docker CLI on a host: build its commands and parse what it prints.

netrun drives Docker through the ``docker`` CLI over the SSH connection it already holds,
not through the docker SDK. The SDK's ``ssh://`` transport opens a second SSH connection
of its own per client (with its own host-key handling, bypassing ours and ``sudo``), and
still needs the docker CLI on the host for ``docker system dial-stdio``. The CLI over our
connection keeps one connection per host, one host-key policy, become, and the per-host
``DOCKER_HOST`` environment a real host (or the emulated lab) sets up. Every value goes
into an argv that is quoted with ``shlex.join``; output is read as JSON.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from netrun.errors import ToolError
from netrun.tools.facts import split_sections

#: Docker API 1.25 (engine 1.13) is the oldest with everything used here.
MIN_API = (1, 25)


#: Docker's image reference grammar (distribution/reference): [domain[:port]/]path[:tag][@digest]
_PATH_PART = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN_PART = r"(?:[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_PART}(?:\.{_DOMAIN_PART})*|\[[A-Fa-f0-9:]+\])(?::[0-9]+)?"
IMAGE_RE = re.compile(
    rf"(?P<name>(?:{_DOMAIN}/)?{_PATH_PART}(?:/{_PATH_PART})*)"
    r"(?::[\w][\w.-]{0,127})?"
    r"(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9A-Fa-f]{32,})?",
    re.ASCII,
)
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


def is_image_reference(value: str) -> bool:
    """A reference docker accepts: the grammar above, and a name of at most 255 characters."""
    found = IMAGE_RE.fullmatch(value)
    return found is not None and len(found["name"]) <= 255


class DockerError(ToolError):
    """The engine is missing, stopped or too old, or a docker command failed."""


@dataclass(frozen=True)
class EngineInfo:
    server_version: str
    api_version: str


@dataclass(frozen=True)
class ContainerInfo:
    """What ``docker inspect`` says of one container that netrun needs."""

    id: str
    name: str
    running: bool
    status: str
    exit_code: int | None
    pid: int | None
    image_id: str
    ips: Mapping[str, str]
    error: str


def version_command(docker: str = "docker") -> list[str]:
    return [docker, "version", "--format", "{{json .}}"]


def parse_version(text: str, stderr: str, exited: int, host: str) -> EngineInfo:
    """Engine version, or a DockerError that says what is wrong with the engine on ``host``."""
    if (
        exited == 127
        or "command not found" in stderr
        or ("not found" in stderr.lower() and (not text.strip()))
    ):
        raise DockerError(
            f"{host}: docker is not installed; install docker (apt-get install "
            "docker.io) or set netrun_docker to its path"
        )
    try:
        doc = json.loads(text.strip().splitlines()[-1]) if text.strip() else {}
    except ValueError:
        doc = {}
    server = doc.get("Server") if isinstance(doc, dict) else None
    if not server:
        why = stderr.strip().splitlines()[-1] if stderr.strip() else "no answer"
        raise DockerError(
            f"{host}: the Docker engine is not running or not reachable ({why}); start it "
            "(systemctl start docker) or check DOCKER_HOST and permissions"
        )
    api = str(server.get("ApiVersion", "0.0"))
    if _api_tuple(api) < MIN_API:
        raise DockerError(
            f"{host}: Docker engine {server.get('Version')} (API {api}) is too old; netrun "
            f"needs API {MIN_API[0]}.{MIN_API[1]} or newer"
        )
    return EngineInfo(str(server.get("Version", "?")), api)


def _api_tuple(text: str) -> tuple[int, int]:
    parts = re.findall(r"\d+", text)
    return (int(parts[0]), int(parts[1])) if len(parts) >= 2 else (0, 0)


def image_id_command(image: str, docker: str = "docker") -> list[str]:
    return [docker, "image", "inspect", "--format", "{{.Id}}", image]


def parse_image_id(text: str) -> str | None:
    line = text.strip().splitlines()[-1] if text.strip() else ""
    return line if line.startswith("sha256:") else None


def pull_command(image: str, docker: str = "docker") -> list[str]:
    return [docker, "pull", "--quiet", image]


def load_command(path: str, docker: str = "docker") -> list[str]:
    return [docker, "load", "--quiet", "--input", path]


def network_inspect_command(network: str, docker: str = "docker") -> list[str]:
    return [docker, "network", "inspect", network]


def parse_network(text: str) -> dict[str, Any]:
    """Name, driver, subnets and MTU option of a docker network."""
    try:
        docs = json.loads(text)
    except ValueError as exc:
        raise DockerError("docker network inspect printed no JSON", text) from exc
    if not docs:
        raise DockerError("docker network inspect printed an empty list", text)
    net = docs[0]
    subnets = [c.get("Subnet") for c in (net.get("IPAM", {}).get("Config") or []) if c]
    opts = net.get("Options") or {}
    mtu = opts.get("com.docker.network.driver.mtu")
    return {
        "name": net.get("Name"),
        "driver": net.get("Driver"),
        "subnets": [s for s in subnets if s],
        "mtu": int(mtu) if mtu and str(mtu).isdigit() else None,
    }


def run_command(
    image: str,
    args: Sequence[str] = (),
    *,
    name: str,
    labels: Mapping[str, str],
    docker: str = "docker",
    network: str | None = None,
    env: Mapping[str, str] | None = None,
    volumes: Sequence[str] = (),
    privileged: bool = False,
    net_host: bool = False,
    entrypoint: str | None = None,
) -> list[str]:
    """``docker run -d`` for a long-lived container; privileged only when asked."""
    argv = [docker, "run", "-d", "--name", name]
    for key, value in labels.items():
        argv += ["--label", f"{key}={value}"]
    if net_host:
        argv += ["--network", "host"]
    elif network:
        argv += ["--network", network]
    for key, value in (env or {}).items():
        argv += ["-e", f"{key}={value}"]
    for vol in volumes:
        argv += ["-v", vol]
    if privileged:
        argv.append("--privileged")
    if entrypoint is not None:
        argv += ["--entrypoint", entrypoint]
    return [*argv, image, *args]


def exec_command(container: str, args: Sequence[str], docker: str = "docker") -> list[str]:
    return [docker, "exec", container, *args]


def inspect_command(containers: Sequence[str], docker: str = "docker") -> list[str]:
    return [docker, "container", "inspect", *containers]


def parse_inspect(text: str) -> list[ContainerInfo]:
    try:
        docs = json.loads(text) if text.strip() else []
    except ValueError as exc:
        raise DockerError("docker inspect printed no JSON", text) from exc
    out = []
    for doc in docs:
        state = doc.get("State") or {}
        nets = (doc.get("NetworkSettings") or {}).get("Networks") or {}
        ips = {n: v.get("IPAddress") for n, v in nets.items() if v and v.get("IPAddress")}
        out.append(
            ContainerInfo(
                id=str(doc.get("Id", "")),
                name=str(doc.get("Name", "")).lstrip("/"),
                running=bool(state.get("Running")),
                status=str(state.get("Status", "")),
                exit_code=state.get("ExitCode"),
                pid=state.get("Pid") or None,
                image_id=str(doc.get("Image", "")),
                ips=ips,
                error=str(state.get("Error") or ""),
            )
        )
    return out


def logs_command(container: str, docker: str = "docker", tail: int = 20) -> list[str]:
    return [docker, "logs", "--tail", str(tail), container]


def sh_quoted(text: str) -> str:
    """``text`` as one double-quoted sh word (in a ``case`` pattern, matched literally)."""
    return '"' + re.sub(r'([$`"\\])', r"\\\1", text) + '"'


def grep_literal(text: str) -> str:
    """``text`` as a grep basic regular expression that matches it literally."""
    return re.sub(r"([.\[\]*^$\\])", r"\\\1", text)


#: @@grep@@ and @@case@@ stand for the words its PID 1 prints once it listens (``ready``).
#: @@plain@@ is 1 when they are the same in Docker's json-file log (nothing JSON escapes).
#: Where the host can read that log (the json-file driver, as root), each look greps it
#: every 10 ms and checks PID 1 in /proc: no docker command per look (each costs some
#: 25 ms); else each look asks `docker logs` and `docker inspect`, 50 ms apart.
_READY_BODY = r"""
i=0; ready=; nl='
'
f='{{.State.Pid}} {{.LogPath}}{{println}}[{{json .}}]'
info=$("$d" container inspect -f "$f" "$n" 2>/dev/null)
lp=${info%%"$nl"*}; json=${info#*"$nl"}; [ "$json" != "$info" ] || json=
pid=${lp%% *}; lp=${lp#"$pid"}; lp=${lp# }
case "$pid" in ""|*[!0-9]*) pid=0 ;; esac
{ [ @@plain@@ = 1 ] && [ -n "$lp" ] && [ -r "$lp" ]; } || lp=
while [ "$i" -lt "$steps" ]; do
    if [ -n "$lp" ]; then
        grep -q @@grep@@ "$lp" 2>/dev/null && { ready=1; break; }
        [ "$pid" != 0 ] && [ -d "/proc/$pid" ] || break
        sleep 0.01
        i=$((i + 1))
        continue
    fi
    if "$d" logs --tail 20 "$n" 2>&1 | grep -q @@grep@@; then break; fi
    [ "$("$d" container inspect -f '{{.State.Running}}' "$n" 2>/dev/null)" = false ] && break
    sleep 0.05
    i=$((i + 5))
done
echo ==netrun:inspect==
if [ -n "$ready" ] && [ -n "$json" ]; then
    printf '%s\n' "$json"
else
    "$d" container inspect "$n" 2>/dev/null
fi
if [ -n "$ready" ]; then
    echo ==netrun:logjson==
    logs=$(tail -n 20 "$lp" 2>/dev/null)
else
    echo ==netrun:logs==
    logs=$("$d" logs --tail 20 "$n" 2>&1)
fi
printf '%s\n' "$logs"
echo ==netrun:mtu==
case "$logs" in
*@@case@@*)
    [ "$pid" != 0 ] || pid=$("$d" container inspect -f '{{.State.Pid}}' "$n" 2>/dev/null)
    cat "/proc/$pid/root/sys/class/net/eth0/mtu" 2>/dev/null ||
        "$d" exec "$n" cat /sys/class/net/eth0/mtu 2>/dev/null ;;
esac
true
"""


def ready_script(container: str, docker: str = "docker", wait_s: float = 2.0, *, ready: str) -> str:
    """sh that waits (up to ``wait_s``, on the host) until the server in ``container``
    listens (its log says ``ready``) or the container stopped, then prints its inspect
    JSON, its last log lines and, once it listens, its eth0 MTU (read through
    /proc/PID/root from the host, else with a docker exec), leaving ``$pid`` set to its
    PID 1: one round trip instead of an inspect, a logs and an exec per poll. Read it
    with ``parse_ready``.

    Where the host can read the container's json-file log, one ``docker inspect`` (its
    JSON, PID 1 and log path, taken once the container runs) serves the whole wait: the
    log file is grepped, and once the server listens its last lines are the file's (JSON
    lines: section ``logjson``) and the inspect is that first one (the address and state
    do not change once it started; each docker command costs some 0.04 s). A container
    that never listened is inspected and its logs read again, as they stand then."""
    head = (
        f"d={shlex.quote(docker)}; n={shlex.quote(container)}; "
        f"steps={max(1, math.ceil(wait_s / 0.01))}"
    )
    plain = "1" if json.dumps(ready)[1:-1] == ready else "0"
    body = _READY_BODY.replace("@@grep@@", sh_quoted(grep_literal(ready)))
    return head + body.replace("@@case@@", sh_quoted(ready)).replace("@@plain@@", plain)


@dataclass(frozen=True)
class Readiness:
    """What ``ready_script`` found: the container (None: not created yet), its log tail,
    whether its server listens, and its eth0 MTU."""

    info: ContainerInfo | None
    logs: str
    listening: bool
    mtu: int | None


def parse_ready(text: str, *, ready: str) -> Readiness:
    """What ``ready_script`` printed for a server that says ``ready`` once it listens. The
    output is cut at every ``==netrun:NAME==`` line (tools.facts.split_sections): what a
    probe prints after the script (the host's context, run beside it) stays out of its
    sections."""
    found = split_sections(text, strip=False)
    try:
        infos = parse_inspect(found.get("inspect", ""))
    except DockerError:
        infos = []
    logs = logs_of(found)
    mtu_text = found.get("mtu", "").strip()
    return Readiness(
        infos[0] if infos else None,
        logs,
        ready in logs,
        int(mtu_text) if mtu_text.isdigit() else None,
    )


def logs_of(found: Mapping[str, str]) -> str:
    """A container's last log lines from ``ready_script``'s sections: ``logs`` (docker's
    own), or ``logjson`` (its json-file log's lines, read on the host)."""
    if "logs" in found:
        return found["logs"]
    return json_log_lines(found.get("logjson", "").splitlines())


def json_log_lines(lines: Sequence[str]) -> str:
    """The text of json-file log lines (``{"log": "...\\n", "stream": ...}``) as ``docker
    logs`` shows it; a line that is no such object is kept as it is."""
    out = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            entry = None
        text = entry.get("log") if isinstance(entry, dict) else None
        out.append(text.rstrip("\n") if isinstance(text, str) else line)
    return "\n".join(out)


def rm_command(containers: Sequence[str], docker: str = "docker") -> list[str]:
    return [docker, "rm", "-f", "-v", *containers]


def stop_execs_script(container: str, docker: str = "docker") -> str:
    """sh killing every process in ``container`` but its PID 1, by the host pids
    ``docker top`` lists: what ``docker exec`` runs there (a test's client) ends, and
    the container lives on for the next repeat. Nothing to kill, or no container: a
    no-op."""
    q = shlex.quote
    return (
        f"d={q(docker)}; n={q(container)}; "
        'one=$("$d" inspect -f "{{.State.Pid}}" "$n" 2>/dev/null) || exit 0; '
        'for p in $("$d" top "$n" -o pid 2>/dev/null | tail -n +2); do '
        '[ "$p" = "$one" ] || kill "$p" 2>/dev/null; done; true'
    )
