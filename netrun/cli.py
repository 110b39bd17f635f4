"""The thin command line: parse arguments, call the library, print, choose the exit code.

Exit codes: 0 every test passed; 1 a test failed; 2 bad input; 130 Ctrl-C; 143 SIGTERM.
Expected errors (NetrunError) become one line on stderr; anything else is a bug, shown as a
short note with the traceback kept in the debug log.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from netrun import __version__
from netrun.errors import InputError, Interrupted, NetrunError

EXIT_OK, EXIT_FAILED, EXIT_INPUT, EXIT_INT, EXIT_TERM = 0, 1, 2, 130, 143
SUBCOMMANDS = ("inventory", "lab", "cleanup", "report")

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


def run_parser() -> Parser:
    p = Parser(
        prog="netrun",
        description="Run network benchmarks (iperf3) between inventory hosts over SSH.",
        epilog="other commands: netrun inventory|lab|cleanup|report --help",
    )
    p.add_argument("scenario", type=Path, help="scenario YAML file")
    p.add_argument("-i", "--inventory", type=Path, required=True, help="Ansible YAML inventory")
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
        "--resume",
        type=Path,
        metavar="RUN_DIR",
        help="finish an interrupted run in its folder; tests that passed are not repeated",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    p.add_argument("-V", "--version", action="version", version=f"netrun {__version__}")
    return p


def sub_parser() -> Parser:
    p = Parser(prog="netrun")
    p.add_argument("-V", "--version", action="version", version=f"netrun {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)

    inv = sub.add_parser("inventory", help="show the resolved inventory")
    inv.add_argument("-i", "--inventory", type=Path, required=True)
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

    clean = sub.add_parser("cleanup", help="remove what a killed run left on the hosts")
    clean.add_argument("-i", "--inventory", type=Path, required=True)
    clean.add_argument("--run-id", help="only this run's leftovers")
    clean.add_argument("-l", "--limit")
    clean.add_argument("--accept-new-host-keys", action="store_true")

    rep = sub.add_parser("report", help="render a saved run again")
    rep.add_argument("run", type=Path, help="a run folder or its results.json")
    rep.add_argument("--format", choices=["table", "markdown", "json"], default="table")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        if args and args[0] in SUBCOMMANDS:
            ns = sub_parser().parse_args(args)
            handler: Callable[[argparse.Namespace], int] = COMMANDS[ns.command]
            return handler(ns)
        if not args or args[0] in ("-h", "--help"):
            run_parser().print_help()
            return EXIT_OK if args else EXIT_INPUT
        return cmd_run(run_parser().parse_args(args))
    except InputError as exc:
        for line in exc.problems:
            print(f"netrun: error: {line}", file=sys.stderr)
        return EXIT_INPUT
    except NetrunError as exc:
        print(f"netrun: error: {exc}", file=sys.stderr)
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


def _setup_log(path: Path, secrets: Sequence[str]) -> None:
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    handler.addFilter(RedactingFilter(secrets))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    for noisy in ("paramiko", "invoke", "fabric", "urllib3", "docker"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def cmd_run(ns: argparse.Namespace) -> int:
    from netrun.inventory import check_netrun_vars, load_inventory
    from netrun.modes import all_options
    from netrun.report import render_table
    from netrun.results import default_dir
    from netrun.runner import Run, RunRequest, exit_code
    from netrun.scenario import load_scenario, parse_overrides
    from netrun.transport import SSHSettings, redact

    inventory = load_inventory(ns.inventory)
    problems = check_netrun_vars(inventory, [f"netrun_{o.name}" for o in all_options()])
    overrides = parse_overrides(ns.extra)
    scenario = load_scenario(ns.scenario, hosts=list(inventory.hosts), overrides=overrides)
    if problems:
        raise InputError(problems)
    if ns.limit:
        inventory.select(ns.limit)  # a pattern matching nothing is bad input, before connecting
    secrets = [s for h in inventory.hosts.values() for s in h.secrets()]
    previous = None
    if ns.resume:
        from netrun.results import load

        previous = load(ns.resume)
        if previous.get("scenario") != scenario.name:
            raise InputError(
                f"--resume {ns.resume}: that run is of scenario {previous.get('scenario')!r}, "
                f"not {scenario.name!r}"
            )
        outdir = ns.resume if ns.resume.is_dir() else ns.resume.parent
    else:
        outdir = ns.output or default_dir(scenario.name)
    settings = SSHSettings(
        connect_timeout=ns.connect_timeout,
        banner_timeout=ns.connect_timeout,
        auth_timeout=ns.connect_timeout,
        accept_new_host_keys=ns.accept_new_host_keys,
    )

    def progress(line: str) -> None:
        if not ns.quiet:
            print(redact(line, secrets), file=sys.stderr, flush=True)

    req = RunRequest(scenario, inventory, outdir, settings, ns.limit, progress=progress)
    if previous is not None:
        req.resume = previous
        req.run_id = str(previous.get("run_id") or req.run_id)
    run = Run(req)
    _setup_log(outdir / "netrun.log", secrets)
    progress(
        f"netrun {__version__}: scenario {scenario.name}, run {req.run_id}, results in {outdir}"
    )
    code: int | None = None
    interrupted = False
    try:
        doc = run.execute()
    except KeyboardInterrupt:
        doc, code, interrupted = run.doc, EXIT_INT, True
    except Interrupted as exc:
        doc, code, interrupted = run.doc, exc.code, True
    except NetrunError:
        raise
    except Exception as exc:  # a bug: keep the traceback in the log, say one line
        log.error("internal error\n%s", traceback.format_exc())
        print(
            f"netrun: internal error: {type(exc).__name__}: {redact(str(exc), secrets)} "
            f"(traceback in {outdir / 'netrun.log'})",
            file=sys.stderr,
        )
        doc, code = run.doc, EXIT_FAILED
    text = redact(render_table(doc), secrets)
    run.out.save_report(text)
    print(text, end="")
    print(f"results: {outdir / 'results.json'}", file=sys.stderr)
    if interrupted:
        print("netrun: interrupted; partial results saved", file=sys.stderr)
    if code is not None:
        return code
    return exit_code(doc)


def cmd_inventory(ns: argparse.Namespace) -> int:
    from netrun.inventory import load_inventory

    inventory = load_inventory(ns.inventory)
    if ns.host:
        print(json.dumps(inventory.get(ns.host).vars, indent=2, sort_keys=True, default=str))
    else:
        print(json.dumps(inventory.to_ansible_list(), indent=2, default=str))
    return EXIT_OK


def cmd_lab(ns: argparse.Namespace) -> int:
    from netrun import lab

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    if ns.action == "up":
        cfg = lab.LabConfig(
            hosts=ns.hosts,
            rate=ns.rate,
            state_dir=ns.state_dir,
            inventory=ns.inventory,
            docker=ns.docker,
            prefix=ns.prefix,
            net_index=ns.net_index,
        )
        st = lab.up(cfg, progress)
        print(_lab_summary(st))
        return EXIT_OK
    if ns.action == "down":
        removed = lab.down(ns.state_dir, progress)
        print(f"lab down: removed {len(removed)} item(s)")
        return EXIT_OK
    st = lab.status(ns.state_dir)
    print(_lab_summary(st))
    return EXIT_OK if st.ok else EXIT_FAILED


def _lab_summary(st: Any) -> str:
    if not st.exists:
        return "no lab (run: sudo netrun lab up)"
    lines = [f"inventory: {st.inventory}"]
    problems = st.problems()
    lines += [f"problem: {p}" for p in problems]
    lines.append("lab is up" if not problems else "lab needs 'netrun lab up' to repair")
    return "\n".join(lines)


def cmd_cleanup(ns: argparse.Namespace) -> int:
    from netrun.cleanup import cleanup
    from netrun.inventory import load_inventory
    from netrun.transport import SSHSettings

    inventory = load_inventory(ns.inventory)
    hosts = inventory.select(ns.limit) if ns.limit else list(inventory.hosts.values())
    settings = SSHSettings(accept_new_host_keys=ns.accept_new_host_keys)
    report = cleanup(hosts, settings, run_id=ns.run_id)
    for line in report.lines:
        print(line)
    for name, err in report.failed.items():
        print(f"netrun: error: {name}: {err}", file=sys.stderr)
    return EXIT_FAILED if report.failed else EXIT_OK


def cmd_report(ns: argparse.Namespace) -> int:
    from netrun.report import render_table
    from netrun.results import load

    doc = load(ns.run)
    if ns.format == "json":
        print(json.dumps(doc, indent=2))
    else:
        print(render_table(doc, "github" if ns.format == "markdown" else "simple"), end="")
    return EXIT_OK


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "inventory": cmd_inventory,
    "lab": cmd_lab,
    "cleanup": cmd_cleanup,
    "report": cmd_report,
}

if __name__ == "__main__":
    sys.exit(main())
