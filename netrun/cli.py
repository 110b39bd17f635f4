"""The thin command line: parse arguments, call the library, print, choose the exit code.

Exit codes: 0 every test passed; 1 a test failed; 2 bad input; 3 a test regressed against
its baseline; 75 another run holds the lock; 130 Ctrl-C; 143 SIGTERM.
Expected errors (NetrunError) become one line on stderr; anything else is a bug, shown as a
short note with the traceback kept in the debug log.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from netrun import __version__
from netrun.errors import InputError, Interrupted, LockError, NetrunError
from netrun.job import (  # noqa: F401 - the exit codes are the CLI's too
    EXIT_FAILED,
    EXIT_INPUT,
    EXIT_INT,
    EXIT_LOCKED,
    EXIT_OK,
    EXIT_REGRESSED,
    EXIT_TERM,
)

SUBCOMMANDS = ("inventory", "lab", "cleanup", "report", "history")
FORMATS = ("table", "markdown", "csv", "json", "html")

log = logging.getLogger("netrun")


class RedactingFilter(logging.Filter):
    """Keeps passwords out of the debug log, whatever a library logs."""

    def __init__(self, secrets: Sequence[str]) -> None:
        super().__init__()
        self.secrets = [s for s in secrets if s]

    def filter(self, record: logging.LogRecord) -> bool:
        if self.secrets:
            from netrun.transport import redact

            record.msg = redact(record.getMessage(), self.secrets)
            record.args = None
        return True


class Parser(argparse.ArgumentParser):
    """argparse, but usage errors exit 2 with one line (argparse's own code is 2 too)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_INPUT, f"netrun: error: {message} (see 'netrun --help')\n")


def _inventory_option(parser: argparse.ArgumentParser) -> None:
    """-i, the same on every command that reads an inventory."""
    parser.add_argument(
        "-i",
        "--inventory",
        type=Path,
        action="append",
        required=True,
        help="inventory: Ansible YAML, INI, --list JSON, a script or a directory (repeatable)",
    )


def run_parser() -> Parser:
    p = Parser(
        prog="netrun",
        description="Run network benchmarks (iperf3) between inventory hosts over SSH.",
        epilog="other commands: netrun inventory|lab|cleanup|report --help",
    )
    p.add_argument("scenario", type=Path, help="scenario YAML file")
    _inventory_option(p)
    p.add_argument("-o", "--output", type=Path, help="results folder (default results/NAME-TIME)")
    p.add_argument("-l", "--limit", help="Ansible host pattern: run only tests within it")
    p.add_argument(
        "-e",
        "--extra",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a test key for every test (repeatable)",
    )
    p.add_argument(
        "--accept-new-host-keys",
        action="store_true",
        help="trust and record host keys seen for the first time (a changed key is still refused)",
    )
    p.add_argument("--connect-timeout", type=float, default=10.0, help="SSH connect timeout (s)")
    p.add_argument(
        "-p",
        "--parallel",
        type=int,
        metavar="N",
        help="run up to N tests at once, never two on one host (overrides the scenario's "
        "'parallel'; 1 runs them one after another)",
    )
    p.add_argument(
        "-f",
        "--forks",
        type=int,
        metavar="N",
        help="connect to, probe and sweep up to N hosts at once (as Ansible's -f; overrides "
        "the scenario's 'forks'; default 5)",
    )
    p.add_argument(
        "--resume",
        type=Path,
        metavar="RUN_DIR",
        help="finish an interrupted run in its folder; tests that passed are not repeated",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    p.add_argument(
        "--check-only",
        action="store_true",
        help="validate scenario and inventory, print the resolved tests, connect to nothing",
    )
    cron = p.add_argument_group("history, baselines and exports (nightly cron)")
    cron.add_argument(
        "--db", type=Path, help="history database (default: $XDG_DATA_HOME/netrun/history.sqlite)"
    )
    cron.add_argument("--no-history", action="store_true", help="do not store this run")
    cron.add_argument(
        "--baseline",
        help="compare with: last | RUN_ID | results path (overrides the scenario's baseline:)",
    )
    cron.add_argument("--tolerance", help="throughput tolerance for every test, e.g. 5%%")
    cron.add_argument("--plot", action="store_true", help="write PNG plots into the run folder")
    cron.add_argument(
        "--prometheus", type=Path, metavar="FILE", help="write node_exporter textfile metrics"
    )
    cron.add_argument("--junit", type=Path, metavar="FILE", help="write JUnit XML")
    cron.add_argument(
        "--wait-lock",
        action="store_true",
        help="wait for another run to finish instead of exiting 75",
    )
    p.add_argument("-V", "--version", action="version", version=f"netrun {__version__}")
    return p


def sub_parser() -> Parser:
    p = Parser(prog="netrun")
    p.add_argument("-V", "--version", action="version", version=f"netrun {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)

    inv = sub.add_parser("inventory", help="show the resolved inventory")
    _inventory_option(inv)
    inv.add_argument("--list", action="store_true", help="JSON like ansible-inventory --list")
    inv.add_argument("--host", help="variables of one host")

    lab = sub.add_parser("lab", help="the emulated lab on this machine (root)")
    lab.add_argument("action", choices=["up", "down", "status"])
    lab.add_argument("--hosts", type=int, default=3, help="number of hosts (up)")
    lab.add_argument("--rate", default="1gbit", help="data-plane shaping rate (tc tbf)")
    lab.add_argument("--docker", action="store_true", help="a Docker daemon and overlay per host")
    lab.add_argument("--state-dir", type=Path, default=Path("/run/netrun-lab"))
    lab.add_argument("--prefix", default="nr", help="namespace and bridge name prefix")
    lab.add_argument("--net-index", type=int, default=0, help="address block (0-15)")
    lab.add_argument("--inventory", type=Path, default=Path("inventories/local.yaml"))
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

    clean = sub.add_parser("cleanup", help="remove what a killed run left on the hosts")
    _inventory_option(clean)
    clean.add_argument("--run-id", help="only this run's leftovers")
    clean.add_argument("-l", "--limit")
    clean.add_argument("--accept-new-host-keys", action="store_true")
    clean.add_argument(
        "--db", type=Path, help="the history database the runs used (their journal is beside it)"
    )

    rep = sub.add_parser("report", help="render a saved run again")
    rep.add_argument("run", help="a run folder, its results.json, or a stored run id")
    rep.add_argument("--format", choices=FORMATS, default="table")
    rep.add_argument("--plot", action="store_true", help="write PNG plots into the run folder")
    rep.add_argument("--db", type=Path, help="history database (for run ids)")
    rep.add_argument("-o", "--output", type=Path, help="write to this file instead of stdout")

    hist = sub.add_parser("history", help="stored runs with a trend per test; or import")
    hist.add_argument("action", nargs="?", choices=["list", "import"], default="list")
    hist.add_argument("path", nargs="?", type=Path, help="import: a folder of saved runs")
    hist.add_argument("--scenario")
    hist.add_argument("--test")
    hist.add_argument("--last", type=int, default=20)
    hist.add_argument("--db", type=Path)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        if args and args[0] in SUBCOMMANDS:
            ns = sub_parser().parse_args(args)
            handler = _commands()[ns.command]
            return handler(ns)
        if not args or args[0] in ("-h", "--help"):
            run_parser().print_help()
            return EXIT_OK if args else EXIT_INPUT
        return cmd_run(run_parser().parse_args(args))
    except InputError as exc:
        for line in exc.problems:
            print(f"netrun: error: {line}", file=sys.stderr)
        return EXIT_INPUT
    except LockError as exc:
        print(f"netrun: {exc}", file=sys.stderr)
        return EXIT_LOCKED
    except NetrunError as exc:
        print(f"netrun: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except BrokenPipeError:  # `netrun ... | head`: the reader left; end quietly, as cat does
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("netrun: interrupted", file=sys.stderr)
        return EXIT_INT
    except Interrupted as exc:
        print(f"netrun: {exc}", file=sys.stderr)
        return exc.code
    except Exception as exc:  # a bug: one line here, the traceback in a file
        crash = _save_traceback()
        print(
            f"netrun: internal error: {type(exc).__name__}: {exc} (traceback in {crash}; "
            "please report it)",
            file=sys.stderr,
        )
        return EXIT_FAILED


def _save_traceback() -> str:
    import tempfile

    fd, path = tempfile.mkstemp(prefix="netrun-crash-", suffix=".log")
    with open(fd, "w", encoding="utf-8") as fh:
        fh.write(traceback.format_exc())
    return path


def _on_sigterm(signum: int, frame: Any) -> None:
    """SIGTERM becomes an exception, so the same cleanup runs as for Ctrl-C."""
    raise Interrupted(EXIT_TERM, "terminated")


class LogFile(logging.FileHandler):
    """The debug log, silent when the disk is full.

    logging's default prints a traceback per failed record; the results folder already
    reports the write failure once, as one line.
    """

    def handleError(self, record: logging.LogRecord) -> None:
        pass


def _setup_log(path: Path, secrets: Sequence[str]) -> None:
    try:
        handler = LogFile(path, encoding="utf-8")
    except OSError:  # no log rather than no run; the results folder reports the failure
        return
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    handler.addFilter(RedactingFilter(secrets))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    for noisy in ("paramiko", "invoke", "fabric", "urllib3", "docker"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def cmd_run(ns: argparse.Namespace) -> int:
    from netrun.history import History, HistoryLockedError, default_path
    from netrun.journal import Journal, journal_beside
    from netrun.lock import RunLock
    from netrun.publish import PublishOptions, check_baseline

    req, secrets = _prepare(ns)
    if ns.check_only:
        print(check_report(req))
        return EXIT_OK
    db = None if ns.no_history else (ns.db or default_path())
    lock_at = ns.db or default_path()
    req.journal = Journal(journal_beside(lock_at))
    opts = PublishOptions(
        db=db,
        baseline=ns.baseline or req.scenario.baseline,
        tolerance=ns.tolerance,
        plot=ns.plot,
        prometheus=ns.prometheus,
        junit=ns.junit,
    )
    with RunLock.beside(lock_at, wait=ns.wait_lock):
        history = None
        try:
            history = History.open(db) if db is not None else None  # a corrupt db fails now
        except HistoryLockedError as exc:
            # Passing: measure anyway; publishing says how to store the run later.
            print(f"netrun: warning: {exc}", file=sys.stderr)
        try:
            check_baseline(opts, history, req.scenario)
        finally:
            if history is not None:
                history.close()
        return _run_and_publish(req, opts, secrets)


def job_inputs(ns: argparse.Namespace) -> Any:
    """The run options of the command line, for netrun.job."""
    from netrun.job import JobInputs

    return JobInputs(
        scenario=ns.scenario,
        inventory=ns.inventory,
        extra=ns.extra,
        limit=ns.limit,
        resume=ns.resume,
        output=ns.output,
        connect_timeout=ns.connect_timeout,
        accept_new_host_keys=ns.accept_new_host_keys,
        parallel=ns.parallel,
        forks=ns.forks,
    )


def _prepare(ns: argparse.Namespace) -> tuple[Any, list[str]]:
    """Load and check every input (netrun.job.prepare); nothing has touched a host yet."""
    from netrun.job import prepare
    from netrun.transport import redact

    req, secrets = prepare(job_inputs(ns))

    def progress(line: str) -> None:
        if not ns.quiet:
            print(redact(line, secrets), file=sys.stderr, flush=True)

    req.progress = progress
    return req, secrets


def check_report(req: Any) -> str:
    """--check-only: the tests as resolved against the inventory, one line each."""
    scenario, inventory = req.scenario, req.inventory
    allowed = {h.name for h in inventory.select(req.limit)} if req.limit else None
    sources = " ".join(f"-i {p}" for p in inventory.paths)
    lines = [f"{scenario.path}: {len(scenario.tests)} tests fit {sources}; nothing was contacted"]
    for test in scenario.tests:
        hosts = {role: inventory[name] for role, name in test.roles.items()}
        skipped = allowed is not None and not {h.name for h in hosts.values()} <= allowed
        roles = ", ".join(f"{r} {h.name} ({h.address})" for r, h in hosts.items())
        lines.append(f"  {test.name}: {test.mode}, {roles}" + ("  [outside -l]" if skipped else ""))
    return "\n".join(lines)


def _run_and_publish(req: Any, opts: Any, secrets: list[str]) -> int:
    """Run and publish (netrun.job), then print the outcome."""
    from netrun.job import run_and_publish

    out = run_and_publish(
        req, opts, secrets, on_start=lambda _run: _setup_log(req.outdir / "netrun.log", secrets)
    )
    if out.internal_error:
        print(f"netrun: internal error: {out.internal_error}", file=sys.stderr)
    print(out.table, end="")
    for line in out.errors:
        print(f"netrun: error: {line}", file=sys.stderr)
    for line in out.notes:
        print(f"netrun: {line}", file=sys.stderr)
    for line in out.problems:
        print(f"netrun: error: {line}", file=sys.stderr)
    if out.results is not None:
        print(f"results: {out.results}", file=sys.stderr)
    else:  # the table above is all there is of this run's measurements
        print(f"netrun: error: results not saved: {out.save_error}", file=sys.stderr)
    if out.interrupted:
        print("netrun: interrupted; partial results saved", file=sys.stderr)
    return out.code


def _commands() -> dict[str, Callable[[argparse.Namespace], int]]:
    from netrun import commands

    return {
        "inventory": commands.cmd_inventory,
        "lab": commands.cmd_lab,
        "cleanup": commands.cmd_cleanup,
        "report": commands.cmd_report,
        "history": commands.cmd_history,
    }


if __name__ == "__main__":
    sys.exit(main())
