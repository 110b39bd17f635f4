"""Mode x tool command sequences as data (cases/*.json, as pyinfra keeps its operation
cases): what a whole run sends each host (probe, setup, measure, teardown, undo, sweep),
recorded through scripted hosts that answer with captured output, without root or a lab.
The lab tests prove the same sequences for real.

A failing case means the sequence changed: if that is meant, run ``make cases`` and read
the diff (docs/developer/testing.md).
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from netrun.hosts.host import Host
from netrun.modes import mode_tools
from netrun.testing.recording import Reply
from netrun.testing.scripted import ScriptedTransport
from netrun.tools import tools
from tests.unit.modes.sequences import case_files, commands, load, record

CASES = case_files()


def test_every_mode_and_tool_has_a_case() -> None:
    """One case per registered mode x tool, and per mode with a ``load:`` flow (the load
    is a form of a test: netrun.tools.load): a new mode or tool comes with its cases
    (``make cases`` records them; a pair the mode refuses records the refusal)."""
    have = {p.stem for p in CASES}
    wanted = {f"{m}-{t}" for m in mode_tools() for t in [*tools(), "load"]}
    assert sorted(wanted - have) == [], "add tests/unit/modes/cases/<mode>-<tool>.json"


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_a_run_sends_the_recorded_sequence(path: Path) -> None:
    case = load(path)
    assert "expected" in case, f"{path.name}: no expected part yet; run make cases"
    assert record(case) == case["expected"], f"{path.name}: run make cases and read the diff"


def code(script: str) -> str:
    """``script`` without its comment lines (shlex would read their apostrophes as quotes)."""
    return "\n".join(line for line in script.split("\n") if not line.lstrip().startswith("#"))


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_every_command_parses_as_shell_words(path: Path) -> None:
    for host, line in commands(load(path)["expected"]):
        try:
            shlex.split(code(line))
        except ValueError as exc:
            pytest.fail(f"{path.stem}: {host}: {exc}: {line[:200]}")


def words(line: str, depth: int = 3) -> list[str]:
    """``line``'s shell words (``;``, ``&&``, ``|`` apart), and those of every word that is
    itself a script (sh -c)."""
    lexer = shlex.shlex(code(line), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        found = list(lexer)
    except ValueError:
        return []
    if depth:
        for word in list(found):
            if " " in word:
                found += words(word, depth - 1)
    return found


def test_a_user_supplied_token_reaches_the_hosts_quoted() -> None:
    """The cases with ``user_tokens`` (an option holding a space, quotes and a $): the token
    never appears raw in a command, and it does arrive whole, as one shell word."""
    checked = 0
    for path in CASES:
        case = load(path)
        for token in case.get("user_tokens", []):
            lines = [line for _host, line in commands(case["expected"])]
            assert not [line for line in lines if token in line], f"{path.stem}: unquoted"
            assert any(token in words(line) for line in lines), f"{path.stem}: {token} lost"
            checked += 1
    assert checked


def test_a_scripted_host_answers_each_part_in_the_order_the_command_holds_them() -> None:
    log: list[tuple[str, str]] = []
    host = Host("a")
    host.transport = transport = ScriptedTransport("a", log)
    transport.answer("==two==", Reply("2\n"))
    transport.answer("==one==", Reply("1\n"))
    transport.answer_each("cat log", [Reply(""), Reply("grown\n")])
    assert host.run("echo ==one==; echo ==two==", timeout=1).stdout == "1\n2\n"
    assert [host.run("cat log", timeout=1).stdout for _ in range(3)] == ["", "grown\n", "grown\n"]
    started = transport.start("read -r port; echo ==two==")
    started.send("5201\n")
    assert started.wait(1) == (0, "2\n", "")
    assert [line for _host, line in log][-2:] == ["read -r port; echo ==two==", "<stdin> 5201"]


def test_a_flow_that_fails_before_the_start_line_stops_the_others_in_one_line() -> None:
    """A TURN fan-in whose second tunnel never prints its relayed address: that flow fails
    before the start line, and the flow waiting there stops with one line, never an
    internal error (a BrokenBarrierError once escaped; which flow notices first is a race,
    so this is checked by outcome, not as a recorded sequence)."""
    case = load(next(p for p in CASES if p.stem == "turn-iperf2-fanin"))
    case["answers"]["delta"] = [
        a for a in case["answers"]["delta"] if "relayed" not in a.get("when", "")
    ]
    got = record(case)
    text = "\n".join([*got["errors"], *(s[3] for s in got["samples"]), *got["progress"]])
    assert "internal error" not in text.lower() and "Traceback" not in text, text
    assert any(s[2] == "failed" and s[3] for s in got["samples"]), got["samples"]
