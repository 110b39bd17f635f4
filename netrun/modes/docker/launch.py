"""A container's start in one round trip per host: checks, record, run, readiness.

Each step used to be a command of its own, one after the other, each paying the host's
login cost: the run's undo record and the engine check, one ``docker image inspect`` per
image, ``docker run`` with its time bound, then readiness polls. Here they are one sh
script, split into sections the controller reads back (``==netrun:NAME==`` lines): the
first script a run sends a host begins with the record, the engine check and the image
checks (``preamble``), and stops right after them when an image is missing (the
controller then pulls or loads it and sends the rest again).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from netrun.hosts import proc
from netrun.tools import docker as dk
from netrun.tools.facts import split_sections

#: The first line of the preamble: its undo record was written.
RECORDED = "NETRUN_RECORDED"
#: The sh function the preamble defines for its lead: ``nr_looked IMAGE`` sets
#: ``nr_look`` to "ID LABELS" (docker's ``{{.Id}} {{json .Config.Labels}}``) of an image
#: it looks up in the background, once that lookup is done; empty for an image it does
#: not look up there, or that is missing. A lead that wants an image's id or labels
#: asks it first (when defined), so the host's first command looks the image up once.
LOOKED = "nr_looked"
#: docker's ``image inspect --format`` of those lookups.
ID_LABELS = "{{.Id}} {{json .Config.Labels}}"


def sections(text: str) -> dict[str, str]:
    """Section name -> its lines, unstripped, from a script's output (what precedes the
    first section is under "")."""
    return split_sections(text, head="", strip=False)


def preamble(
    record: str | None,
    docker: str,
    images: Sequence[str],
    workdir: str,
    pull: bool = False,
    lead: str = "",
) -> str:
    """sh: write the run's per-host undo record (``record``: its write script), check the
    engine and, beside it, look up each image; stop (exit 0, section ``stop``) if any is missing, or
    with ``pull`` (pull: always) in any case, for the controller to pull them. ``lead``
    (ContainerMode.lead) runs once the checks are under way, after the record, so what
    it starts is swept; the caller sends it before the body where this preamble is not."""
    d, w = shlex.quote(docker), shlex.quote(workdir)
    lines = []
    if record is not None:
        lines.append(f"{record} && echo {RECORDED} || {{ echo ==netrun:stop==; exit 0; }}")
    # The engine check and every image lookup but the first run side by side (each docker
    # command some 0.015-0.05 s, most of it the client's own start): the engine's answer
    # still comes first, and a failed one stops the script before the images'.
    lines += [
        f"mkdir -p {w}",
        f"{d} version --format '{{{{json .}}}}' >{w}/engine.out 2>{w}/engine.err & ev=$!",
    ]
    look = f"{d} image inspect --format '{{{{.Id}}}}'"
    later = f"{d} image inspect --format {shlex.quote(ID_LABELS)}"
    for i, image in enumerate(images[1:], start=1):
        lines.append(f"{later} {shlex.quote(image)} >{w}/image{i}.out 2>/dev/null & iv{i}=$!")
    if lead and not pull:  # with pull, the script stops here: the lead goes after the pull
        lines += [_looked(images, w), lead]
    if images:
        lines.append(f"i0=$({look} {shlex.quote(images[0])} 2>/dev/null)")
    lines += [
        f"wait $ev; rc=$?; v=$(cat {w}/engine.out); rm -f {w}/engine.out",
        'echo ==netrun:engine==; echo "$v"; echo ==netrun:enginerc==; echo "$rc"',
        f"echo ==netrun:engineerr==; cat {w}/engine.err; rm -f {w}/engine.err",
    ]
    for i in range(1, len(images)):  # (the lead may have waited already: no message)
        lines.append(
            f"wait $iv{i} 2>/dev/null; i{i}=; read -r i{i} nr_x <{w}/image{i}.out; "
            f"rm -f {w}/image{i}.out"
        )
    lines += [
        '[ "$rc" = 0 ] || { echo ==netrun:stop==; exit 0; }',
        "missing=1" if pull else "missing=",
    ]
    for i in range(len(images)):
        lines.append(f'echo ==netrun:image{i}==; echo "$i{i}"; [ -n "$i{i}" ] || missing=1')
    lines.append('[ -z "$missing" ] || { echo ==netrun:stop==; exit 0; }')
    return "\n".join(lines) + "\n"


def _looked(images: Sequence[str], workdir: str) -> str:
    """sh defining ``LOOKED`` over the preamble's background lookups (images[1:]); it
    waits in this shell, as a command substitution's subshell cannot wait for them."""
    cases = "".join(
        f"{shlex.quote(image)}) wait $iv{i} 2>/dev/null; "
        f"nr_look=$(cat {workdir}/image{i}.out 2>/dev/null) ;; "
        for i, image in enumerate(images[1:], start=1)
    )
    return f'{LOOKED}() {{ nr_look=; case "$1" in {cases}esac; }}'


def image_ids(found: dict[str, str], images: Sequence[str]) -> dict[str, str | None]:
    """Image -> id from the preamble's output (None: not on the host)."""
    return {img: dk.parse_image_id(found.get(f"image{i}", "")) for i, img in enumerate(images)}


def shell_words(argv: Sequence[str], env_vars: Mapping[str, str]) -> str:
    """``shlex.join(argv)``, but each ``env_vars`` token in a word becomes a double-quoted
    reference to its shell variable (a value the host works out in the same script).

    Replaced word by word, between quoted pieces: replacing in the joined line would leave
    the reference inside single quotes, unexpanded, whenever the word needed quoting."""
    if not env_vars:
        return shlex.join(argv)
    found = re.compile("|".join(map(re.escape, env_vars)))
    words = []
    for arg in argv:
        pieces, pos = [], 0
        for m in found.finditer(arg):
            if m.start() > pos:
                pieces.append(shlex.quote(arg[pos : m.start()]))
            pieces.append(f'"${{{env_vars[m.group()]}}}"')
            pos = m.end()
        if pos < len(arg) or not pieces:
            pieces.append(shlex.quote(arg[pos:]))
        words.append("".join(pieces))
    return " ".join(words)


#: The shell variable holding the pid of a container's ``docker run`` started ahead
#: (``Ahead``); ``start`` waits for it instead of running its own.
AHEAD_PID = "nr_av"


@dataclass(frozen=True)
class Ahead:
    """A container's ``docker run`` started in the background beside a mode's own slow
    step (FreeFlow's router): sh for the start (``run``, its pid in ``$nr_av``) and for
    dropping it when that step failed (``drop``). Its entrypoint must wait for what the
    step provides: ``start`` then only waits for the ``docker run`` and, should it have
    failed (an image without sh for the wait), runs the plain one."""

    run: str
    drop: str


def ahead(
    argv: list[str], name: str, docker: str, workdir: str, env_vars: dict[str, str] | None = None
) -> Ahead:
    """The ``Ahead`` of ``argv`` (``docker run -d``), its errors where ``start`` reads them."""
    err = f"{shlex.quote(workdir)}/{shlex.quote(name)}.err"
    rm = shlex.join(dk.rm_command([name], docker))
    return Ahead(
        run=f"{shell_words(argv, env_vars or {})} >/dev/null 2>{err} & {AHEAD_PID}=$!",
        drop=(
            f'[ -z "${{{AHEAD_PID}:-}}" ] || {{ wait "${AHEAD_PID}"; {rm} >/dev/null 2>&1; '
            f"rm -f {err}; {AHEAD_PID}=; }}"
        ),
    )


def gated(extra: str, command: str) -> str:
    """sh: a mode's ``extra``, which sets ``go=1`` for the container to start (and may
    have started it ahead: then it drops it itself when it does not), then ``command``
    (``start``'s) if it may."""
    return f'{AHEAD_PID}=\n{extra}\nif [ "$go" = 1 ]; then\n{command}\nfi'


def start(
    argv: list[str],
    name: str,
    docker: str,
    workdir: str,
    bound: float,
    ready_wait: float,
    extra: str = "",
    env_vars: dict[str, str] | None = None,
    *,
    ready: str,
) -> tuple[str, str]:
    """(command, undo): sh that runs ``argv`` (``docker run -d``) and its time
    bound, then waits up to ``ready_wait`` s on the host for the tool's server in it to
    listen (its log says ``ready``, Tool.resident_ready: dk.ready_script's sections, which
    leave ``$pid`` set to the container's PID 1) and, once it does, runs ``extra``. The
    caller wraps it in an undo record (Mode.recorded_change).

    ``env_vars`` maps a token found in ``argv`` to the shell variable that replaces it
    (a value the host works out in the same script, such as FreeFlow's VNET_PREFIX)."""
    w = shlex.quote(workdir)
    err = f"{w}/{shlex.quote(name)}.err"
    rm = shlex.join([docker, "rm", "-f", name])
    drop = shlex.join(dk.rm_command([name], docker))
    pidfile = f"{workdir}/{name}.watchdog"
    watchdog = f'sleep {int(bound) + 120} & w=$!; trap "kill $w; exit" TERM; wait $w; {rm}'
    run = f"{shell_words(argv, env_vars or {})} >/dev/null 2>{err}; rc=$?"
    wait = dk.ready_script(name, docker, ready_wait, ready=ready)
    command = (
        # a run started ahead (``Ahead``) is waited for; should it have failed, the plain one
        f'rc=1; if [ -n "${{{AHEAD_PID}:-}}" ]; then wait "${AHEAD_PID}" && rc=0; {AHEAD_PID}=; '
        f'[ "$rc" = 0 ] || {drop} >/dev/null 2>&1; fi\n'
        f'[ "$rc" = 0 ] || {{ {run}; }}\n'
        f'echo ==netrun:run==; echo "$rc"; cat {err}; rm -f {err}\n'
        f'if [ "$rc" = 0 ]; then nohup sh -c {shlex.quote(watchdog)} </dev/null >/dev/null 2>&1 &'
        f" {proc.save_pid(pidfile)}\n"
        f"{wait}"
        f'case "$logs" in *{dk.sh_quoted(ready)}*)\n{extra}\n;; esac\nfi\ntrue'
    )
    return command, proc.kill_recorded(pidfile)
