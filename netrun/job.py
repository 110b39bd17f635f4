"""One netrun job from start to end: check every input, run, publish, decide the exit code.

This is what ``netrun SCENARIO -i INVENTORY`` does, as a library: a cron wrapper, a
notebook or a test gets the same checks and the same outcome as the CLI. Nothing here
prints; the CLI prints ``Outcome`` and exits with its code.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from netrun import __version__
from netrun.errors import InputError, Interrupted, NetrunError, redact

if TYPE_CHECKING:
    from netrun.publish import Published, PublishOptions
    from netrun.run.request import RunRequest
    from netrun.run.runner import Run

EXIT_OK, EXIT_FAILED, EXIT_INPUT, EXIT_REGRESSED, EXIT_LOCKED = 0, 1, 2, 3, 75
EXIT_INT, EXIT_TERM = 130, 143

log = logging.getLogger("netrun")


@dataclass
class JobInputs:
    """What a run is asked to do, before any of it is checked (the CLI's run options)."""

    scenario: Path
    inventory: Path | Sequence[Path]  # every -i, merged in order
    extra: Sequence[str] = ()
    limit: str | None = None
    #: --test: run only the tests these names or globs match (all when empty).
    tests: Sequence[str] = ()
    resume: Path | None = None
    output: Path | None = None
    connect_timeout: float = 10.0
    accept_new_host_keys: bool = False
    parallel: int | None = None
    #: Hosts connected and probed at once (``-f``); None: the scenario's ``forks``, else 5.
    forks: int | None = None
    progress: Callable[[str], None] = lambda _line: None


def prepare(inputs: JobInputs) -> tuple[RunRequest, list[str]]:
    """Load and check every input; nothing has touched a host yet. The request, and the
    secrets (passwords) that must never be shown."""
    # Here, not at the top: the CLI imports this module as it starts (its EXIT_ codes), and
    # these bring paramiko, yaml and every mode and tool (some 200 modules, 0.25-0.4 s),
    # which every netrun command, --help and lab too, would then pay.
    from netrun.cleanup.scripts import RUN_ID
    from netrun.core.options import parse_overrides
    from netrun.hosts.group import DEFAULT_FORKS
    from netrun.hosts.ssh.settings import SSHSettings
    from netrun.inventory.loader import load_inventory
    from netrun.inventory.model import check_netrun_vars, resolve_role
    from netrun.modes import all_options, scoped_options
    from netrun.results.store import default_dir, load
    from netrun.run.needs import programs
    from netrun.run.request import RunRequest
    from netrun.run.resume import differences
    from netrun.scenario.loader import MAX_FORKS, MAX_PARALLEL, load_scenario
    from netrun.scenario.only import only
    from netrun.scenario.validator import COMMON_OPTIONS

    inventory = load_inventory(inputs.inventory)
    settable = [o.name for o in COMMON_OPTIONS if o.from_inventory]  # netrun_port
    settable += [o.name for o in all_options()]
    settable += list(scoped_options(COMMON_OPTIONS))  # netrun_docker_network: one mode's
    paths = [p.var for p in programs().values() if p.var]  # netrun_netperf: a tool's program
    problems = check_netrun_vars(inventory, [f"netrun_{name}" for name in settable] + paths)
    overrides = parse_overrides(inputs.extra)
    if inputs.limit:
        inventory.select(inputs.limit)  # a pattern matching nothing is bad input, up front

    def resolve(role: str) -> str:  # server: servers -> the group's one host (within -l)
        return resolve_role(inventory, role, inputs.limit).name

    def select(
        pattern: str,
    ) -> list[str]:  # hosts: PATTERN of generated pairs (netrun.scenario.pairs)
        return [h.name for h in inventory.select(pattern)]

    scenario = load_scenario(inputs.scenario, overrides=overrides, resolve=resolve, select=select)
    scenario = only(scenario, inputs.tests)
    problems += inventory_option_problems(inventory, all_options())
    if problems:
        raise InputError(problems)
    secrets = [s for h in inventory.hosts.values() for s in h.secrets()]
    if os.environ.get("NETRUN_TURN_PASSWORD"):  # an external TURN server's (mode: turn)
        secrets.append(os.environ["NETRUN_TURN_PASSWORD"])
    previous = None
    if inputs.resume:
        previous = load(inputs.resume)
        if previous.get("scenario") != scenario.name:
            raise InputError(
                f"--resume {inputs.resume}: that run is of scenario "
                f"{previous.get('scenario')!r}, not {scenario.name!r}"
            )
        outdir = inputs.resume if inputs.resume.is_dir() else inputs.resume.parent
        changed = differences(previous, scenario.tests)
        if changed:
            raise InputError(
                f"--resume {inputs.resume}: the run it resumes measured with other options: "
                f"{'; '.join(changed)}; resume with the same scenario and -e, or start a new run"
            )
    else:
        outdir = inputs.output or default_dir(scenario.name)
    if inputs.forks is not None and not 1 <= inputs.forks <= MAX_FORKS:
        raise InputError(f"--forks must be 1..{MAX_FORKS}, got {inputs.forks}")
    settings = SSHSettings.timed(
        inputs.connect_timeout,
        accept_new_host_keys=inputs.accept_new_host_keys,
        forks=inputs.forks or scenario.forks or DEFAULT_FORKS,
    )
    if inputs.parallel is not None and not 1 <= inputs.parallel <= MAX_PARALLEL:
        raise InputError(f"--parallel must be 1..{MAX_PARALLEL}, got {inputs.parallel}")
    req = RunRequest(scenario, inventory, outdir, settings, inputs.limit, progress=inputs.progress)
    req.parallel = inputs.parallel
    if previous is not None:
        req.resume = previous
        run_id = previous.get("run_id") or req.run_id
        if not RUN_ID.fullmatch(run_id):  # it names folders and labels in remote shells
            raise InputError(
                f"--resume {inputs.resume}: run_id {run_id[:40]!r} is not a netrun run id "
                "(hex digits); resume a results.json netrun wrote"
            )
        req.run_id = run_id
    return req, secrets


def inventory_option_problems(inventory: Any, options: Any) -> list[str]:
    """Check netrun_<option> inventory values before anything runs (bad input: exit 2)."""
    # Here, not at the top, as in prepare: the validator brings every mode and tool.
    from netrun.core.options import problem
    from netrun.modes import scoped_options
    from netrun.scenario.validator import COMMON_OPTIONS

    named = [(o.name, o) for o in (*COMMON_OPTIONS, *options) if o.from_inventory]
    named += list(scoped_options(COMMON_OPTIONS).items())  # netrun_<mode>_<option>
    found = []
    for name, option in named:
        var = f"netrun_{name}"
        for host in inventory.hosts.values():
            if var in host.vars:
                bad = problem(option, var, host.vars[var])
                if bad:
                    found.append(f"{inventory.path}: host '{host.name}': {bad}")
    return list(dict.fromkeys(found))


@dataclass
class Outcome:
    """How a run ended, everything the CLI shows: the table, the one-line errors and notes,
    where the results went, and the exit code."""

    doc: dict[str, Any]
    code: int
    table: str = ""
    #: What failed (failure_lines), then what publishing said and what went wrong in it.
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    #: A bug's one line (its traceback is in the run's log).
    internal_error: str | None = None
    results: Path | None = None
    save_error: str | None = None
    interrupted: bool = False


def run_and_publish(
    req: RunRequest,
    opts: PublishOptions,
    secrets: list[str],
    on_start: Callable[[Run], None] = lambda _run: None,
) -> Outcome:
    """Run, publish (history, baseline, exporters), render the table; the outcome.

    ``on_start`` gets the Run before it touches a host (the CLI opens its log file there).
    """
    # Here, not at the top, as in prepare: the runner and publishing bring paramiko,
    # sqlite and every mode and tool.
    from netrun.publish import export, publish
    from netrun.run.runner import Run

    req.measuring = warm_report  # its import loads while the first test runs
    run = Run(req)
    on_start(run)
    req.progress(
        f"netrun {__version__}: scenario {req.scenario.name}, run {req.run_id}, "
        f"results in {req.outdir}"
    )
    code: int | None = None
    interrupted = False
    internal = None
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
        internal = (
            f"{type(exc).__name__}: {redact(str(exc), secrets)} "
            f"(traceback in {req.outdir / 'netrun.log'})"
        )
        doc, code = run.doc, EXIT_FAILED
    again = Again(req, secrets, lambda: run.out.save(doc))
    published = publish(doc, req.outdir, opts, again if code is None else None)
    if again.interrupted is not None:  # Ctrl-C while measuring again: the run keeps its own
        code, interrupted = again.interrupted, True
    elif published.interrupted is not None:  # Ctrl-C while publishing: the table still prints
        code, interrupted = published.interrupted, True
    # Only now, not with the imports above: warm_report loads it (tabulate, wcwidth) in a
    # thread while the first test runs, so the run's start does not wait for it.
    from netrun.report.render import render

    run.out.save(doc)  # with the baseline verdicts, if any
    verdicts = published.verdicts if published.baseline_id else None
    # the terminal gets the one-screen report; report.txt the full one (every metric, note)
    text = redact(render(doc, "table", verdicts, detail=False, where=str(req.outdir)), secrets)
    run.out.save_report(redact(render(doc, "table", verdicts), secrets))
    if published.plots:
        html = render(doc, "html", verdicts, published.plots)
        run.out.save_report(redact(html, secrets), "report.html")
    out = Outcome(doc, EXIT_OK, text, internal_error=internal, interrupted=interrupted)
    out.errors = [redact(line, secrets) for line in failure_lines(doc)]
    out.notes = list(published.notes)
    out.problems = list(published.problems)
    if run.out.error is None:
        out.results = req.outdir / "results.json"
    else:  # the table is all there is of this run's measurements
        out.save_error = str(run.out.error)
    out.code = code if code is not None else outcome_code(doc, opts, published, out, secrets)
    if run.out.error is not None and code is None:  # nothing else matters as much
        out.code = EXIT_FAILED
    try:
        export(doc, opts, published, out.code)
    except (KeyboardInterrupt, Interrupted) as exc:  # the table and results.json stand
        out.code = exc.code if isinstance(exc, Interrupted) else EXIT_INT
        out.interrupted = True
        published.problems.append(
            f"exports interrupted by {'SIGTERM' if out.code == EXIT_TERM else 'SIGINT'}: "
            "the Prometheus textfile or the JUnit XML may be the previous run's"
        )
    if len(published.problems) > len(out.problems):  # an export was not written
        out.problems = list(published.problems)
        out.code = EXIT_FAILED if out.code == EXIT_OK else out.code
    return out


class Again:
    """Measures the named tests again into the run's ``confirm`` folder (a regression
    pages only when a second measurement repeats it: netrun.history.confirm): a run of
    its own (its own id, cleanup and results), on the same hosts, journal and settings.
    An interrupt is kept (``interrupted``, the exit code) for the first run's outcome;
    ``save`` writes the first run's results.json before (with the verdicts that stand if
    netrun is killed meanwhile: netrun.publish.KILLED)."""

    def __init__(
        self, req: RunRequest, secrets: list[str], save: Callable[[], object] = lambda: None
    ) -> None:
        self.req, self.secrets, self.save = req, secrets, save
        self.interrupted: int | None = None

    def __call__(self, names: list[str]) -> tuple[dict[str, Any] | None, Path | None, str]:
        # Here, not at the top, as in prepare: the runner brings paramiko and every mode.
        from netrun.run.progress import Events
        from netrun.run.request import new_run_id
        from netrun.run.runner import Run

        req = self.req
        outdir = req.outdir / "confirm"
        tests = tuple(t for t in req.scenario.tests if t.name in names)  # exactly: no globs
        sub = replace(
            req, scenario=replace(req.scenario, tests=tests), outdir=outdir, run_id=new_run_id(),
            resume=None, events=Events(), measuring=lambda: None, preconnect=None,
        )  # fmt: skip
        try:  # an interrupt from here on is the second measurement's, saying so
            self.save()
            req.progress(
                f"measuring {', '.join(names)} again: a regression pages only if it repeats"
            )
            return Run(sub).execute(), outdir / "results.json", ""
        except KeyboardInterrupt:
            self.interrupted = EXIT_INT
            return None, None, "interrupted by SIGINT"
        except Interrupted as exc:
            self.interrupted = exc.code
            return None, None, "interrupted by SIGTERM" if exc.code == EXIT_TERM else str(exc)
        except NetrunError as exc:
            return None, None, redact(str(exc), self.secrets)
        except Exception as exc:  # a bug: the first run's figures and verdicts still stand
            log.error("internal error measuring again\n%s", traceback.format_exc())
            return None, None, f"internal error: {type(exc).__name__}"


def outcome_code(
    doc: dict[str, Any],
    opts: PublishOptions,
    published: Published,
    out: Outcome,
    secrets: list[str],
) -> int:
    """The exit code of a run that was not interrupted: failed (1) before regressed (3)."""
    from netrun.run.sample import exit_code  # here, as in run_and_publish: the runner's imports

    code = exit_code(doc)
    if opts.fail_on_flags and published.flagged:  # a figure not what its test asked for
        out.errors += [redact(line, secrets) for line in published.flagged]
        code = code if code != EXIT_OK else EXIT_FAILED
    if code == EXIT_OK and published.regressed:
        code = EXIT_REGRESSED
    elif code == EXIT_OK and published.problems:
        code = EXIT_FAILED
    return code


def warm_report() -> None:
    """Import the report renderer in a thread of its own: the run's end needs it, and
    while a test runs the controller only waits (0.02 s less after the last test)."""
    threading.Thread(
        target=importlib.import_module, args=("netrun.report.render",), daemon=True, name="warm"
    ).start()


def failure_lines(doc: dict[str, Any]) -> list[str]:
    """One line per distinct failure of the run, for cron mail: what failed and why.

    Run-level errors (a host that could not be reached, a cleanup problem) come first;
    then each failed test once per distinct error, with the repeats it hit.
    """
    run_errors = [str(err) for err in doc.get("errors", [])]
    seen: dict[tuple[str, str], list[int]] = {}
    for sample in doc.get("tests", []):
        if sample.get("status") != "ok":
            key = (str(sample.get("name")), str(sample.get("error") or "failed"))
            seen.setdefault(key, []).append(int(sample.get("repeat") or 1))
    # A test that failed because its host did (charlie lacks iperf3) is named on the host's
    # line: the same error is printed once.
    hit: dict[str, list[str]] = {}
    lines = []
    for (name, error), repeats in seen.items():
        which = f" (repeat {', '.join(map(str, repeats))})" if len(repeats) > 1 else ""
        if error in run_errors:
            hit.setdefault(error, []).append(name + which)
        else:
            lines.append(f"test {name} failed{which}: {error}")
    head = [
        err + (f" (failed: test {', '.join(hit[err])})" if err in hit else "") for err in run_errors
    ]
    return list(dict.fromkeys(head + lines))
