"""The thin command line: parse arguments, call the library, print, choose the exit code.

Exit codes: 0 every test passed; 1 a test failed; 2 bad input; 3 a test regressed against
its baseline; 75 another run measures on a host this run needs (netrun.hosts.lease);
130 Ctrl-C; 143 SIGTERM.
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
from netrun.cli import lifetime
from netrun.cli.logs import setup_log
from netrun.cli.parser import (
    COMMANDS,
    SUBCOMMANDS,
    Parser,
    inventory_option,
    sub_parser,
    unknown_command,
)
from netrun.errors import InputError, Interrupted, LockError, NetrunError
from netrun.job import (
    EXIT_FAILED,
    EXIT_INPUT,
    EXIT_INT,
    EXIT_LOCKED,
    EXIT_OK,
    EXIT_TERM,
)

log = logging.getLogger("netrun")


def run_parser() -> Parser:
    p = Parser(
        prog="netrun",
        description="Run network benchmarks (iperf3) between inventory hosts over SSH.",
        epilog="other commands (netrun COMMAND --help):\n"
        + "".join(f"  {name:<10} {text}\n" for name, text in COMMANDS.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("scenario", type=Path, help="scenario YAML file")
    inventory_option(p)
    p.add_argument("-o", "--output", type=Path, help="results folder (default results/NAME-TIME)")
    p.add_argument("-l", "--limit", help="Ansible host pattern: run only tests within it")
    p.add_argument(
        "-t",
        "--test",
        action="append",
        default=[],
        metavar="NAME",
        help="run only this test: its name as --list-tests shows it, or a glob such as "
        "'rrul-*' (repeatable)",
    )
    p.add_argument(
        "-e",
        "--extra",
        action="append",
        default=[],
        metavar="[TEST.]KEY=VALUE",
        help="override a key for every test that takes it, or for one test (TEST as "
        "--list-tests names it); a key no test takes is an error (repeatable)",
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
    p.add_argument(
        "-q",
        "--quiet",
        action="count",
        default=0,
        help="no progress lines; a summary line first and stderr lines stamped with the time "
        "and run id (for cron); -qq: the summary line instead of the table (in report.txt)",
    )
    p.add_argument(
        "--check-only",
        action="store_true",
        help="validate scenario and inventory, print each test's data addresses, options, "
        "commands and expected time, connect to nothing",
    )
    p.add_argument(
        "--list-tests",
        action="store_true",
        help="print the tests (as --check-only) and the rounds a parallel run plans, connect "
        "to nothing",
    )
    cron = p.add_argument_group("history, baselines and exports (nightly cron)")
    cron.add_argument(
        "--db", type=Path, help="history database (default: $XDG_DATA_HOME/netrun/history.sqlite)"
    )
    cron.add_argument("--no-history", action="store_true", help="do not store this run")
    cron.add_argument(
        "--baseline",
        help="compare with: last (newest matching run of this scenario and tag) | median:N "
        "(median of the last N matching runs) | RUN_ID | results path (overrides the "
        "scenario's baseline:)",
    )
    cron.add_argument(
        "--tag",
        help="label this run (e.g. nightly): --baseline last and "
        "median:N compare only runs of the same tag",
    )
    cron.add_argument("--tolerance", help="throughput tolerance for every test, e.g. 5%%")
    cron.add_argument("--plot", action="store_true", help="write PNG plots into the run folder")
    cron.add_argument(
        "--prometheus", type=Path, metavar="FILE", help="write node_exporter textfile metrics"
    )
    cron.add_argument("--junit", type=Path, metavar="FILE", help="write JUnit XML")
    cron.add_argument(
        "--fail-on-flags",
        action="store_true",
        help="exit 1 (and fail the test in JUnit) when a figure is not what its test asked "
        "for: above-ceiling, same-host, sender-below-target",
    )
    cron.add_argument(
        "--page-on",
        metavar="CAUSES",
        help="the causes of a regression that exit 3, comma-separated, of network, sender, "
        "receiver, host, or all (default network,host: not a busy sender or receiver)",
    )
    cron.add_argument(
        "--no-confirm",
        action="store_true",
        help="exit 3 on the first measurement's regression; by default a regression that "
        "would page is measured again first, and pages only if it repeats",
    )
    cron.add_argument(
        "--wait-for-hosts",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="when another run (of any controller) measures on a host this run needs, wait "
        "up to SECONDS for all of them to be free (default 0: exit 75 at once)",
    )
    # before host leases: one run per history database; now a wait of an hour
    cron.add_argument("--wait-lock", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("-V", "--version", action="version", version=f"netrun {__version__}")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    # paramiko imports invoke (0.02 s of every run's start) only for ssh_config's
    # "Match exec", and netrun reads no ssh_config: it finds invoke absent instead.
    sys.modules.setdefault("invoke", None)  # type: ignore[arg-type]
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        code = _dispatch(args)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
        return code
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


def entry() -> NoReturn:
    """The ``netrun`` command (and ``python -m netrun``): ``main`` with the collector paused
    for the start, then a quick exit (netrun.cli.lifetime). Tests call ``main``."""
    lifetime.pause_collector()
    lifetime.leave(main())


def _dispatch(args: list[str]) -> int:
    if args and args[0] in SUBCOMMANDS:
        lifetime.collect_again()
        ns = sub_parser().parse_args(args)
        handler = _commands()[ns.command]
        return handler(ns)
    if not args or args[0] in ("-h", "--help"):
        run_parser().print_help()
        return EXIT_OK if args else EXIT_INPUT
    unknown = unknown_command(args[0])
    if unknown:
        raise InputError(unknown)
    return cmd_run(run_parser().parse_args(args))


def _save_traceback() -> str:
    import tempfile

    fd, path = tempfile.mkstemp(prefix="netrun-crash-", suffix=".log")
    with open(fd, "w", encoding="utf-8") as fh:
        fh.write(traceback.format_exc())
    return path


def _on_sigterm(signum: int, frame: Any) -> None:
    """SIGTERM becomes an exception, so the same cleanup runs as for Ctrl-C."""
    raise Interrupted(EXIT_TERM, "terminated")


#: What the old ``--wait-lock`` (wait for the run before to end) now waits for hosts.
WAIT_LOCK_S = 3600.0


def cmd_run(ns: argparse.Namespace) -> int:
    """Run a scenario; bad input (2) or a held lock (75) still replaces its exports."""
    seen: dict[str, str] = {}  # the scenario's name and the run id, once known
    try:
        return _cmd_run(ns, seen)
    except (InputError, LockError) as exc:
        from netrun.cli.outcome import nothing_ran, stamped  # publishing's imports: only now

        code = EXIT_LOCKED if isinstance(exc, LockError) else EXIT_INPUT
        said = exc.problems if isinstance(exc, InputError) else [str(exc)]
        lines = [f"netrun: error: {line}" for line in said] if code == EXIT_INPUT else said
        lines = [f"netrun: {line}" for line in said] if code == EXIT_LOCKED else lines
        problems = nothing_ran(ns, seen.get("scenario"), code, said[0] if said else str(exc))
        lines += [f"netrun: error: {line}" for line in problems]
        for line in stamped(lines, seen.get("run_id"), bool(ns.quiet)):
            print(line, file=sys.stderr)
        return code


def _cmd_run(ns: argparse.Namespace, seen: dict[str, str]) -> int:
    if not 0 <= ns.wait_for_hosts <= 7 * 86400:
        raise InputError(f"--wait-for-hosts must be 0..604800 seconds, got {ns.wait_for_hosts:g}")
    req, secrets = _prepare(ns)
    seen.update(scenario=req.scenario.name, run_id=req.run_id)
    if ns.check_only or ns.list_tests:
        from netrun.cli import preflight

        if not ns.check_only:
            print(preflight.list_report(req))
            return EXIT_OK
        text, refused = preflight.check_report(req)
        print(text)
        for line in refused:  # a rule that refuses the test when the run starts
            print(f"netrun: error: {line}", file=sys.stderr)
        return EXIT_INPUT if refused else EXIT_OK
    from netrun.cleanup.journal import Journal, journal_beside
    from netrun.cli.baselines import page_on
    from netrun.history.db import History, HistoryLockedError, default_path
    from netrun.publish import PublishOptions, check_baseline

    db = None if ns.no_history else (ns.db or default_path())
    req.journal = Journal(journal_beside(ns.db or default_path()))
    req.wait_for_hosts = ns.wait_for_hosts or (WAIT_LOCK_S if ns.wait_lock else 0.0)
    opts = PublishOptions(
        db=db,
        baseline=ns.baseline or req.scenario.baseline,
        tolerance=ns.tolerance,
        plot=ns.plot,
        prometheus=ns.prometheus,
        junit=ns.junit,
        tag=ns.tag,
        fail_on_flags=ns.fail_on_flags,
        page_on=page_on(ns.page_on),
        confirm=not ns.no_confirm,
    )
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
    from netrun.run.preconnect import for_run

    # Every input checked: the handshakes overlap the run's own start.
    req.preconnect = for_run(req.scenario, req.inventory, req.settings, req.limit)
    try:
        return _run_and_publish(req, opts, secrets, ns.quiet)
    finally:
        req.preconnect.close()


def job_inputs(ns: argparse.Namespace) -> Any:
    """The run options of the command line, for netrun.job."""
    from netrun.job import JobInputs

    return JobInputs(
        scenario=ns.scenario,
        inventory=ns.inventory,
        extra=ns.extra,
        limit=ns.limit,
        tests=ns.test,
        resume=ns.resume,
        output=ns.output,
        connect_timeout=ns.connect_timeout,
        accept_new_host_keys=ns.accept_new_host_keys,
        parallel=ns.parallel,
        forks=ns.forks,
    )


def _prepare(ns: argparse.Namespace) -> tuple[Any, list[str]]:
    """Load and check every input (netrun.job.prepare); nothing has touched a host yet."""
    from netrun.errors import redact
    from netrun.job import prepare

    req, secrets = prepare(job_inputs(ns))
    if not ns.quiet:  # -q: no progress at all; the table and the errors still come
        from netrun.run.progress import Console

        console = Console(sys.stderr, redact=lambda line: redact(line, secrets))
        req.progress = console.line
        req.events = console
    return req, secrets


def _run_and_publish(req: Any, opts: Any, secrets: list[str], quiet: int) -> int:
    """Run and publish (netrun.job), then print the outcome."""
    from netrun.job import run_and_publish

    try:
        out = run_and_publish(
            req, opts, secrets, on_start=lambda _run: _started(req.outdir, secrets)
        )
    finally:  # the live progress line ends before anything else is printed
        close = getattr(req.events, "close", None)
        if close is not None:
            close()
    from netrun.cli.outcome import print_outcome

    print_outcome(out, req.run_id, quiet)
    return out.code


def _started(outdir: Path, secrets: list[str]) -> None:
    """The run has everything it needs imported and touches its hosts next: its log opens
    and the garbage collector runs again, for a run of hours."""
    setup_log(outdir / "netrun.log", secrets)
    lifetime.collect_again()


def _commands() -> dict[str, Callable[[argparse.Namespace], int]]:
    from netrun.cli import baselines, commands, history

    return {
        "check": commands.cmd_check,
        "inventory": commands.cmd_inventory,
        "lab": commands.cmd_lab,
        "cleanup": commands.cmd_cleanup,
        "report": commands.cmd_report,
        "history": history.cmd_history,
        "diff": commands.cmd_diff,
        "baseline": baselines.cmd_baseline,
    }


if __name__ == "__main__":
    sys.exit(main())
