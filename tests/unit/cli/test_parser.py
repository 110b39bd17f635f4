"""The CLI finds its way for a new user: help, unknown commands, empty results."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from netrun import job as cli_job
from netrun.cli import lab_parser
from netrun.cli import main as cli
from netrun.cli import parser as cli_parser
from tests.conftest import RESULTS_FIXTURES


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in cli_parser.COMMANDS:
        assert f"\n  {name} " in out, name
    assert "history" in cli_parser.COMMANDS and "check" in cli_parser.COMMANDS


@pytest.mark.parametrize("name", list(cli_parser.COMMANDS))
def test_every_subcommand_has_help_text(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main([name, "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert cli_parser.COMMANDS[name] in " ".join(out.split())
    sub = next(a for a in cli_parser.sub_parser()._actions if a.dest == "command")
    parser = sub.choices[name]  # type: ignore[index]
    undocumented = [a.dest for a in parser._actions if not a.help]
    assert not undocumented, f"netrun {name}: options without help: {undocumented}"


@pytest.mark.parametrize("action", list(lab_parser.ACTIONS))
def test_each_lab_action_has_its_own_help(action: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main(["lab", action, "--help"])
    assert done.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert lab_parser.ACTIONS[action] in out
    assert ("--prefix PREFIX" in out) == (action == "up")  # only up takes what only up uses
    assert ("--all" in out) == (action == "down")


def test_lab_help_says_the_prefix_rule(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["lab", "--help"])
    assert "'nr' plus up to 4 lowercase letters or digits" in " ".join(
        capsys.readouterr().out.split()
    )


@pytest.mark.parametrize(
    ("word", "hint"),
    [
        ("histroy", "did you mean 'history'?"),
        ("chek", "did you mean 'check'?"),
        ("frobnicate", "commands: check, inventory, lab, cleanup, report, history"),
    ],
)
def test_unknown_command(word: str, hint: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([word]) == cli_job.EXIT_INPUT
    err = capsys.readouterr().err
    assert err.startswith(f"netrun: error: unknown command '{word}'; {hint}"), err
    assert "-i/--inventory" not in err


def test_a_scenario_file_is_not_an_unknown_command(tmp_path: Path) -> None:
    assert cli_parser.unknown_command("scenario.yaml") is None
    assert cli_parser.unknown_command("scenarios/x") is None
    (tmp_path / "plain").write_text("")
    assert cli_parser.unknown_command(str(tmp_path / "plain")) is None


def test_empty_history_names_what_exists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(RESULTS_FIXTURES / "baremetal-4s", runs / "baremetal-4s")
    db = tmp_path / "h.sqlite"
    assert cli.main(["history", "import", str(runs), "--db", str(db)]) == 0
    capsys.readouterr()
    assert cli.main(["history", "--scenario", "nope", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("no stored runs of scenario 'nope'; scenarios with runs: "), out
    assert "baremetal" in out
    scenario = out.strip().rsplit(": ", 1)[1].split(", ")[0]
    assert cli.main(["history", "--scenario", scenario, "--test", "nope", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert f"tests of '{scenario}' with runs: " in out and "tcp-forward" in out, out
