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
from netrun.lab.plan import CNIS, K8S_VERSION

#: Every command but the run itself, with the one line `netrun --help` shows for it.
COMMANDS = {
    "check": "connect to every host a scenario needs and say per host what is not ready",
    "inventory": "show the resolved inventory",
    "lab": "the emulated lab on this machine (root)",
    "cleanup": "remove what a killed run left on the hosts",
    "report": "render a saved run again",
    "history": "stored runs with a trend per test; or import",
    "diff": "two saved runs side by side, test by test",
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

    lab = _command(sub, "lab")
    lab.add_argument(
        "action",
        choices=["up", "down", "status", "inventory", "netperf"],
        help="up; down (only this checkout's share while another checkout uses the lab); "
        "status (hosts, addresses, rate, Docker, inventories); inventory (print it, or -o); "
        "netperf (build netperf from --netperf-src into the cache lab up uses)",
    )
    lab.add_argument("--hosts", type=int, default=3, help="number of hosts (up)")
    lab.add_argument(
        "--rate", default="1gbit", help="data-plane shaping rate (tc tbf), or none: unshaped"
    )
    lab.add_argument(
        "--host-rate",
        action="append",
        default=[],
        metavar="HOST=RATE",
        help="one host's link at its own rate, both ways (e.g. charlie=20mbit: a constrained "
        "TURN relay); repeatable",
    )
    lab.add_argument("--docker", action="store_true", help="a Docker daemon and overlay per host")
    lab.add_argument(
        "--state-dir",
        type=Path,
        default=Path("/run/netrun-lab"),
        help="the lab's own files (/run/netrun-lab); a second lab beside it needs its own, "
        "and its own --prefix and --net-index",
    )
    lab.add_argument("--prefix", default="nr", help="namespace and bridge name prefix")
    lab.add_argument(
        "--net-index", type=int, default=0, help="address block (0-255; 0-15 with --docker)"
    )
    lab.add_argument(
        "--inventory",
        type=Path,
        default=Path("inventories/local.yaml"),
        help="this checkout's inventory of the lab: where up writes it, and whose share "
        "down lets go of (inventories/local.yaml)",
    )
    lab.add_argument(
        "--all",
        action="store_true",
        help="down: remove the lab even while other checkouts' inventories use it",
    )
    lab.add_argument(
        "-o", "--output", type=Path, help="inventory: write to this file instead of stdout"
    )
    lab.add_argument(
        "--login-cost",
        type=float,
        default=0.0,
        metavar="S",
        help="seconds each SSH command's shell spends in an rc file, as on real hosts "
        "(the benchmark lab uses 0.1)",
    )
    lab.add_argument(
        "--freeflow-src",
        type=Path,
        help="a clone (or bundle) of github.com/microsoft/Freeflow: build and use the real "
        "FreeFlow router instead of the stand-in (with --docker; cached by commit)",
    )
    lab.add_argument(
        "--iperf3",
        metavar="VERSION",
        help="give every host this iperf3 release (a tag such as 3.5, 3.9, 3.16), built "
        "from --iperf3-src once and cached; the inventory's netrun_iperf3 names it",
    )
    lab.add_argument(
        "--iperf3-src",
        type=Path,
        help="a clone (or bundle) of github.com/esnet/iperf with its tags, for --iperf3 "
        "(default: $NETRUN_IPERF3_SRC)",
    )
    lab.add_argument(
        "--k8s",
        action="store_true",
        help="a real Kubernetes cluster whose nodes are the hosts (kubelet and containerd "
        "in each), built once from the Go module proxy and cached; lab status names its "
        "kubeconfig",
    )
    lab.add_argument(
        "--k8s-version",
        default=K8S_VERSION,
        metavar="VERSION",
        help=f"the Kubernetes release --k8s builds ({K8S_VERSION})",
    )
    lab.add_argument(
        "--cni",
        default="bridge",
        choices=list(CNIS),
        help="the cluster's pod network: bridge (one subnet per node, routed over the "
        "data links; its MTU in ConfigMap kube-system/netrun-cni)",
    )
    lab.add_argument(
        "--netperf-src",
        type=Path,
        help="a clone (or bundle) of github.com/HewlettPackard/netperf: build netperf and "
        "netserver (cached by commit) for tool: netperf on the lab's hosts",
    )

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
    return p


def unknown_command(word: str) -> str | None:
    """`netrun histroy`: a first word that is neither a command nor a scenario file."""
    if word.startswith("-") or "." in word or "/" in word or Path(word).exists():
        return None
    close = difflib.get_close_matches(word, SUBCOMMANDS, n=1, cutoff=0.6)
    hint = f"did you mean '{close[0]}'?" if close else f"commands: {', '.join(SUBCOMMANDS)}"
    return f"unknown command '{word}'; {hint} (a scenario is a YAML file; see 'netrun --help')"
