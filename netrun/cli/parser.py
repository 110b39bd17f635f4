"""The subcommands' arguments and help: what `netrun --help` and `netrun COMMAND --help` say.

Kept apart from netrun.cli.main (which runs scenarios and turns errors into exit codes) so the
CLI module stays about running; every subcommand and option here carries its help text,
and a first word that is no command is named with the closest one.
"""

from __future__ import annotations

import argparse
import difflib
from pathlib import Path
from typing import Any, NoReturn

from netrun import __version__
from netrun.job import EXIT_INPUT

#: Every command but the run itself, with the one line `netrun --help` shows for it.
COMMANDS = {
    "check": "connect to every host a scenario needs and say per host what is not ready",
    "inventory": "show the resolved inventory",
    "lab": "the emulated lab on this machine (root)",
    "cleanup": "remove what a killed run left on the hosts",
    "report": "render a saved run again",
    "history": "stored runs with a trend per test; or import",
    "diff": "two saved runs side by side, test by test",
    "baseline": "accept a run's level as the new baseline, or pin a golden run",
}
SUBCOMMANDS = tuple(COMMANDS)
FORMATS = ("table", "markdown", "csv", "json", "html")


class Parser(argparse.ArgumentParser):
    """argparse, but usage errors exit 2 with one line (argparse's own code is 2 too)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_INPUT, f"netrun: error: {message} (see 'netrun --help')\n")


def inventory_option(parser: argparse.ArgumentParser) -> None:
    """-i, the same on every command that reads an inventory."""
    parser.add_argument(
        "-i",
        "--inventory",
        type=Path,
        action="append",
        required=True,
        help="inventory: Ansible YAML, INI, --list JSON, a script or a directory (repeatable)",
    )


def _command(sub: Any, name: str) -> Parser:
    """A subcommand whose help text shows in `netrun --help` and in `netrun NAME --help`."""
    parser: Parser = sub.add_parser(name, help=COMMANDS[name], description=COMMANDS[name])
    return parser


def sub_parser() -> Parser:
    # Here, not at the top: a run (run_parser) needs none of it, and the lab's defaults
    # bring netrun.lab.plan, 0.005 s of every run's start.
    from netrun.cli import lab_parser

    p = Parser(prog="netrun")
    p.add_argument("-V", "--version", action="version", version=f"netrun {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)

    chk = _command(sub, "check")
    inventory_option(chk)
    chk.add_argument("scenario", nargs="?", type=Path, help="only the hosts this scenario needs")
    chk.add_argument("-l", "--limit", help="Ansible host pattern: only these hosts")
    chk.add_argument(
        "-e", "--extra", action="append", default=[], metavar="[TEST.]KEY=VALUE",
        help="override a key, as for a run (roles, images...; TEST.KEY for one test)",
    )  # fmt: skip
    chk.add_argument(
        "--accept-new-host-keys", action="store_true", help="trust host keys seen the first time"
    )
    chk.add_argument("--connect-timeout", type=float, default=10.0, help="SSH connect timeout (s)")

    inv = _command(sub, "inventory")
    inventory_option(inv)
    inv.add_argument("--list", action="store_true", help="JSON like ansible-inventory --list")
    inv.add_argument("--host", help="variables of one host")

    lab_parser.add(sub, Parser, COMMANDS["lab"])

    clean = _command(sub, "cleanup")
    inventory_option(clean)
    clean.add_argument("--run-id", help="only this run's leftovers")
    clean.add_argument("-l", "--limit", help="Ansible host pattern: only these hosts")
    clean.add_argument(
        "--accept-new-host-keys", action="store_true", help="trust host keys seen the first time"
    )
    clean.add_argument(
        "--db", type=Path, help="the history database the runs used (their journal is beside it)"
    )

    rep = _command(sub, "report")
    rep.add_argument("run", help="a run folder, its results.json, or a stored run id")
    rep.add_argument("--format", choices=FORMATS, default="table", help="output format (table)")
    rep.add_argument(
        "--detail",
        action="store_true",
        help="table: the full report (every metric, TCP internals, every note) instead of "
        "the one-screen answer",
    )
    rep.add_argument("--plot", action="store_true", help="write PNG plots into the run folder")
    rep.add_argument("--db", type=Path, help="history database (for run ids)")
    rep.add_argument("-o", "--output", type=Path, help="write to this file instead of stdout")

    hist = _command(sub, "history")
    hist.add_argument(
        "action", nargs="?", choices=["list", "import"], default="list", help="list (default)"
    )
    hist.add_argument("path", nargs="?", type=Path, help="import: a folder of saved runs")
    hist.add_argument("--scenario", help="only runs of this scenario")
    hist.add_argument("--test", help="only this test's trend")
    hist.add_argument("--last", type=int, default=20, help="at most this many runs (20)")
    hist.add_argument("--db", type=Path, help="history database (default: XDG data folder)")

    diff = _command(sub, "diff")
    diff.add_argument("run_a", help="run A: a run folder, its results.json, or a stored run id")
    diff.add_argument("run_b", help="run B, compared with A")
    diff.add_argument("--db", type=Path, help="history database (for run ids)")

    base = _command(sub, "baseline")
    base.add_argument(
        "action",
        choices=["accept", "pin", "unpin"],
        help="accept: a regressed run's level is right; pin: compare --baseline last with "
        "this run; unpin: the scenario and tag of this run compare with the newest again",
    )
    base.add_argument("run", help="a stored run id (or a unique prefix)")
    base.add_argument("--db", type=Path, help="history database (default: XDG data folder)")
    return p


def unknown_command(word: str) -> str | None:
    """`netrun histroy`: a first word that is neither a command nor a scenario file."""
    if word.startswith("-") or "." in word or "/" in word or Path(word).exists():
        return None
    close = difflib.get_close_matches(word, SUBCOMMANDS, n=1, cutoff=0.6)
    hint = f"did you mean '{close[0]}'?" if close else f"commands: {', '.join(SUBCOMMANDS)}"
    return f"unknown command '{word}'; {hint} (a scenario is a YAML file; see 'netrun --help')"
