"""Mode x tool command sequences as data: run one case's scenario through scripted hosts.

A case (cases/<mode>-<tool>.json) holds a scenario, the inventory's hosts, what each fake
host answers (captured output from tests/fixtures, matched by a pattern found in the
command), and what the run sent: each host's commands in order, the progress lines and
each sample's status. ``record`` runs the whole netrun run (connect, probe, lease, setup,
measure, teardown, undo, sweep) with netrun.testing.scripted.ScriptedTransport standing in
for SSH, so nothing runs and no root is needed; test_sequences.py compares, regen.py
rewrites the expected part from the current code.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

from netrun.errors import NetrunError
from netrun.hosts.host import Host
from netrun.hosts.proc import boot_id, process_start
from netrun.inventory.loader import load_inventory
from netrun.run.runner import Run, RunRequest
from netrun.scenario.loader import load_scenario
from netrun.testing.recording import Reply
from netrun.testing.scripted import ScriptedTransport
from tests.conftest import FIXTURES

#: More commands than any test sends: a poll that never saw what it waits for.
MOST = 1000
CASES = Path(__file__).resolve().parent / "cases"
#: Every case's run id: the folders, labels and lease files it names are stable.
RUN_ID = "1a2b3c4d"
#: Run-specific tokens and what stands for them in a case (besides the local folder).
TOKENS: tuple[tuple[re.Pattern[str], str], ...] = (
    # who holds a host's lease (netrun.hosts.lease): this machine, user, pid and time
    (
        re.compile(rf"run {RUN_ID} from [^()']*\(user [^()']*, pid \d+, started [^()']*\)"),
        f"run {RUN_ID} from <controller>",
    ),
)
# No rule hides a generated credential (mode: turn's relay user): one that reached a command
# would differ between two recordings, and make cases refuses such a case.


def case_files() -> list[Path]:
    return sorted(CASES.glob("*.json"))


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def save(path: Path, case: dict[str, Any]) -> None:
    path.write_text(json.dumps(case, indent=1, ensure_ascii=False) + "\n")


class ScriptedHosts:
    """Stands in for netrun.run.preconnect.Preconnect: each host's connection is a
    ScriptedTransport answering with the case's captured outputs, all sharing one log."""

    def __init__(self, answers: dict[str, list[dict[str, Any]]]) -> None:
        self.answers = answers
        self.log: list[tuple[str, str]] = []

    def take(self, host: Host) -> ScriptedTransport:
        transport = ScriptedTransport(host.name, self.log)
        for answer in [*self.answers.get(host.name, []), *self.answers.get("*", [])]:
            if "each" in answer:  # one answer per match, in order: a log that grows
                transport.answer_each(answer["when"], [reply(a) for a in answer["each"]])
            else:
                transport.answer(answer["when"], reply(answer))
        return transport

    def close(self) -> None:
        """Nothing was opened."""


class Instant(threading.Event):
    """The run's stop flag, whose timed waits (a load's ramp, a busy port's backoff, a
    log's poll) return at once: scripted hosts answer at once, and the commands a wait
    spaces out are the same without it."""

    def wait(self, timeout: float | None = None) -> bool:
        return self.is_set()


def reply(answer: dict[str, Any]) -> Reply:
    """An answer's reply: a fixture file's text (``fixture``, under tests/fixtures; each
    ``replace`` pair applied, e.g. the container address of another host) between the
    lines netrun's own scripts print before it (``head``) and after it (``stdout``)."""
    out = (FIXTURES / answer["fixture"]).read_text() if "fixture" in answer else ""
    for old, new in answer.get("replace", []):  # the capture as another host sees it
        out = out.replace(old, new)
    text = answer.get("head", "") + out + answer.get("stdout", "")
    return Reply(text, answer.get("stderr", ""), answer.get("exited", 0))


def record(case: dict[str, Any], planned: Callable[[], None] = lambda: None) -> dict[str, Any]:
    """Run the case; what it sent and said, normalized (the case's ``expected``). A pair
    the inventory or scenario check refuses sends nothing: its one line is the expected.
    ``planned`` is called once the run planned its tests (netrun.run.plan), before any
    host is reached."""
    with tempfile.TemporaryDirectory(prefix="netrun-case-") as tmp:
        local = Path(tmp)
        normal = Normal(tmp)
        (local / "inventory.yaml").write_text(yaml.safe_dump({"all": {"hosts": case["hosts"]}}))
        (local / "scenario.yaml").write_text(case["scenario"])
        try:
            inventory = load_inventory(local / "inventory.yaml")
            scenario = load_scenario(local / "scenario.yaml", hosts=list(case["hosts"]))
        except NetrunError as exc:
            return {"refused": normal(str(exc))}
        hosts = ScriptedHosts(case["answers"])
        said: list[str] = []
        req = RunRequest(
            scenario, inventory, local / "out", run_id=RUN_ID, progress=said.append,
            preconnect=hosts,
        )  # fmt: skip
        run = Run(req)
        planned()
        run.ctx.stopping = Instant()
        doc = run.execute()
        if len(hosts.log) > MOST:
            (line, times), *_ = Counter(line for _host, line in hosts.log).most_common(1)
            raise AssertionError(
                f"{len(hosts.log)} commands, {times} x {line[:200]!r}: a poll "
                "never saw what it waits for; answer it"
            )
        log = hosts.log
        if case.get("unordered"):  # a deferred undo rides on whichever command comes first
            log = [(name, part) for name, line in log for part in deferred(line)]
        commands: dict[str, list[str | list[str]]] = {}
        # hosts run at once: undo records are numbered per host, and not at all where flows
        # run at once on one host (their order is a race)
        each = {name: Normal(tmp, numbered=not case.get("unordered")) for name in case["hosts"]}
        for name, line in log:
            commands.setdefault(name, []).append(shown(each[name](line)))
        if case.get("unordered"):  # flows start at once: their order on one host is a race
            commands = {name: sorted(lines, key=joined) for name, lines in commands.items()}
        return {
            "commands": dict(sorted(commands.items())),
            "progress": [normal(line) for line in said],
            "samples": [
                [s["name"], s.get("repeat"), s["status"], normal(s.get("error") or "")]
                for s in doc["tests"]
            ],
            "errors": [normal(e) for e in doc["errors"]],
        }


#: How Host.defer puts the scripts it holds before a host's next command.
DEFERRED = "\n} >/dev/null 2>&1; "


def deferred(line: str) -> list[str]:
    """``line`` as the lines of the deferred scripts riding on it (``<deferred> ...``: one
    block or several, by timing) and its command."""
    head, found, rest = line.partition(DEFERRED)
    if not (found and head.startswith("{ ")):
        return [line]
    return [*(f"<deferred> {part}" for part in head[2:].split("\n")), rest]


def controller() -> list[tuple[str, str]]:
    """This process as run folders name their owner (netrun.cleanup.owner): boot id, pid,
    start time; then the boot id alone."""
    pid = os.getpid()
    boot = boot_id() or "-"
    return [(f"{boot} {pid} {process_start(pid) or '-'}", "<controller>"), (boot, "<boot-id>")]


#: An undo record's file name (netrun.cleanup.undo): the clock's nanoseconds and a counter.
UNDO_FILE = re.compile(r"\b\d{20}-\d{6}\.sh\b")


#: A file sent from this machine (ScriptedTransport logs ``put LOCAL REMOTE``): a temp file.
PUT = re.compile(r"^put \S+ ")


class Normal:
    """Replaces run-specific tokens: the local folder, this controller process, and each
    undo record's file name by its number in order of appearance."""

    def __init__(self, local: str, numbered: bool = True) -> None:
        self.local = local
        self.numbered = numbered
        self.undo: dict[str, str] = {}

    def __call__(self, text: str) -> str:
        text = PUT.sub("put <local-file> ", text.replace(self.local, "<local>"))
        for token, shown in controller():
            text = text.replace(token, shown)
        for pattern, token in TOKENS:
            text = pattern.sub(token, text)
        return UNDO_FILE.sub(self._undo, text)

    def _undo(self, found: re.Match[str]) -> str:
        if not self.numbered:
            return "<undo>.sh"
        return self.undo.setdefault(found[0], f"<undo-{len(self.undo) + 1}>.sh")


def shown(line: str) -> str | list[str]:
    """A command as a case keeps it: a script as its lines (a diff then names the line)."""
    return line.split("\n") if "\n" in line else line


def joined(command: str | list[str]) -> str:
    return "\n".join(command) if isinstance(command, list) else command


def commands(expected: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(host, command line) of every command a case expects."""
    for host, lines in expected.get("commands", {}).items():  # a refused pair sends none
        for command in lines:
            yield host, joined(command)
