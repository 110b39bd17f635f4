"""The CLI's other subcommands: check, inventory, lab, cleanup, report, diff.

Like netrun.cli.main (which parses the arguments and runs scenarios), these print and return
exit codes; the work itself is the library's.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from netrun.errors import InputError
from netrun.job import EXIT_FAILED, EXIT_OK, EXIT_REGRESSED


def cmd_check(ns: argparse.Namespace) -> int:
    """`netrun check`: one ok/FAIL line per host; 0 only when every host is ready."""
    from netrun.hosts.ssh.settings import SSHSettings
    from netrun.inventory.loader import load_inventory
    from netrun.run import check

    settings = SSHSettings.timed(ns.connect_timeout, accept_new_host_keys=ns.accept_new_host_keys)
    if ns.scenario is not None:
        from netrun.job import JobInputs, prepare

        req, _secrets = prepare(JobInputs(ns.scenario, ns.inventory, ns.extra, ns.limit))
        inventory, tests = req.inventory, list(req.scenario.tests)
    else:
        inventory, tests = load_inventory(ns.inventory), None
    hosts, needs, images = check.plan(inventory, tests, ns.limit)
    if not hosts:
        raise InputError("no host to check (the scenario's tests are all outside -l)")
    secrets = [s for h in inventory.hosts.values() for s in h.secrets()]
    from netrun.errors import redact

    results = check.check_hosts(hosts, needs, images, settings)
    for result in results:
        print(redact(result.line(), secrets))
    bad = [r.name for r in results if not r.ok]
    if bad:
        print(f"netrun: {len(bad)} of {len(results)} host(s) not ready: {', '.join(bad)}",
              file=sys.stderr)  # fmt: skip
        return EXIT_FAILED
    print(f"all {len(results)} host(s) ready", file=sys.stderr)
    return EXIT_OK


def cmd_inventory(ns: argparse.Namespace) -> int:
    from netrun.inventory.loader import load_inventory
    from netrun.inventory.values import masked

    inventory = load_inventory(ns.inventory)
    if ns.host:
        shown = masked(inventory.get(ns.host).vars)
        print(json.dumps(shown, indent=2, sort_keys=True, default=str))
    else:
        listing = inventory.to_ansible_list()
        hostvars = listing["_meta"]["hostvars"]
        listing["_meta"]["hostvars"] = {name: masked(v) for name, v in hostvars.items()}
        print(json.dumps(listing, indent=2, default=str))
    return EXIT_OK


def host_rates(values: list[str]) -> tuple[tuple[str, str], ...]:
    """``--host-rate NAME=RATE`` values as pairs; InputError on one without ``=``."""
    pairs = []
    for value in values:
        name, sep, rate = value.partition("=")
        if not sep or not name.strip() or not rate.strip():
            raise InputError(f"--host-rate {value!r}: use HOST=RATE, e.g. charlie=20mbit")
        pairs.append((name.strip(), rate.strip()))
    return tuple(pairs)


def cmd_lab(ns: argparse.Namespace) -> int:
    from netrun.lab import core as lab_core
    from netrun.lab import plan as lab_plan
    from netrun.lab import sharing as lab_sharing
    from netrun.lab import status as lab_status

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    if ns.action == "up":
        cfg = lab_plan.LabConfig(
            hosts=ns.hosts,
            rate=ns.rate,
            state_dir=ns.state_dir,
            inventory=ns.inventory,
            docker=ns.docker,
            prefix=ns.prefix,
            net_index=ns.net_index,
            freeflow_src=ns.freeflow_src,
            host_rates=host_rates(ns.host_rate),
            login_cost=ns.login_cost,
            iperf3=ns.iperf3,
            iperf3_src=ns.iperf3_src,
            k8s=ns.k8s,
            k8s_version=ns.k8s_version,
            cni=ns.cni,
            mtu=ns.mtu,
        )
        st = lab_core.up(cfg, progress, netperf_src=ns.netperf_src)
        print(lab_summary(st))
        return EXIT_OK
    if ns.action == "netperf":
        from netrun.lab import netperf as lab_netperf

        if ns.netperf_src is None:
            raise InputError(
                f"lab netperf needs --netperf-src PATH: a clone (or bundle) of {lab_netperf.HOME}"
            )
        built = lab_netperf.build(lab_netperf.source(ns.netperf_src), progress)
        print(f"netperf: {built / 'bin' / 'netperf'}, {built / 'bin' / 'netserver'}")
        return EXIT_OK
    if ns.action == "turncat":
        from netrun.lab import stunner as lab_stunner

        version = ns.turncat_version or lab_stunner.VERSION
        print(f"turncat: {lab_stunner.build(version, progress)}")
        return EXIT_OK
    if ns.action == "flanneld":
        from netrun.lab import flannel as lab_flannel

        version = ns.flannel_version or lab_flannel.VERSION
        print(f"flanneld: {lab_flannel.build(version, progress)}")
        return EXIT_OK
    if ns.action == "k8s-netperf":
        from netrun.lab import k8s_netperf as lab_knp

        version = ns.k8s_netperf_version or lab_knp.VERSION
        found = lab_knp.cached(version)
        if found is None:
            if ns.k8s_netperf_src is None:
                raise InputError(
                    f"lab k8s-netperf needs --k8s-netperf-src PATH: a clone (or bundle) of "
                    f"{lab_knp.HOME} with the tag {version}"
                )
            found = lab_knp.build(ns.k8s_netperf_src, version, progress)
        print(f"k8s-netperf: {found}")
        if ns.serve:
            kubeconfig = lab_knp.serve(ns.state_dir, ns.client, ns.server, progress)
            print(f"run it: KUBECONFIG={kubeconfig} {found} --iperf --config FILE")
        return EXIT_OK
    if ns.action == "down":
        from netrun.lab.sharing import still_used

        others = [] if ns.all else lab_sharing.release(ns.state_dir, ns.inventory, progress)
        if others:  # another checkout still uses it: only this one's share went
            print(still_used(ns.state_dir.absolute(), ns.inventory.absolute(), others))
            return EXIT_OK
        removed = lab_core.down(ns.state_dir, progress)
        print(f"lab down: removed {len(removed)} item(s)")
        return EXIT_OK
    if ns.action == "inventory":
        if ns.output is None:
            print(lab_core.inventory_text(ns.state_dir), end="")
        else:
            print(
                f"inventory: {lab_core.export_inventory(ns.state_dir, ns.output)}", file=sys.stderr
            )
        return EXIT_OK
    st = lab_status.status(ns.state_dir)
    print(lab_summary(st))
    return EXIT_OK if st.ok else EXIT_FAILED


#: How `lab status` names what became of each inventory file the lab wrote.
INVENTORY_STATES = {
    "written": "",
    "edited": "; edited since: lab down leaves it",
    "replaced": "; written over since (not this lab's now): lab down leaves it",
    "missing": "; gone",
}


def lab_summary(st: Any) -> str:
    """`lab status` (and the end of `lab up`): the lab, a row per host, its inventories."""
    from tabulate import tabulate

    from netrun.lab.plan import DATA_MTU, shaped

    if not st.exists:
        return f"no lab in {st.state_dir} (run: sudo netrun lab up, or name its --state-dir)"
    cfg = st.config
    rate = cfg.rate if shaped(cfg.rate) else "none (unshaped)"
    head = (
        f"lab in {st.state_dir}: {cfg.hosts} host(s), prefix {cfg.prefix}, net {cfg.net_index}, "
        f"rate {rate}, docker {'yes' if cfg.docker else 'no'}"
        + (f", login cost {cfg.login_cost:g} s" if cfg.login_cost else "")
        + (f", data MTU {cfg.mtu}" if cfg.mtu != DATA_MTU else "")
    )
    headers = ["host", "namespace", "management", "data", "rate", "sshd"]
    if cfg.docker:
        headers.append("docker")
    rows = []
    for host in st.hosts:
        own = cfg.rate_for(host.name)
        row = [host.name, host.namespace, host.mgmt_ip, host.data_ip]
        row += [own if shaped(own) else "none", _daemon(host.sshd_pid, host.sshd_answers, host)]
        if cfg.docker:
            row.append(_daemon(host.docker_pid, bool(host.docker_answers), host))
        rows.append(row)
    lines = [head, tabulate(rows, headers=headers, disable_numparse=True)]
    for f in st.inventories:
        how = "lab up" if f.by == "up" else "lab inventory -o"
        lines.append(f"inventory: {f.path} (written by {how}{INVENTORY_STATES[f.state]})")
    if cfg.iperf3:
        lines.append(f"iperf3: {cfg.iperf3}, built from {cfg.iperf3_src} (netrun_iperf3)")
    if cfg.docker:
        src = cfg.freeflow_src
        lines.append(f"freeflow router: built from {src}" if src else "freeflow router: stand-in")
    if cfg.k8s:
        ready = sum(1 for h in st.hosts if h.node_ready)
        lines.append(
            f"kubernetes {cfg.k8s_version} ({cfg.cni} CNI): {ready}/{len(st.hosts)} node(s) "
            f"Ready; kubectl --kubeconfig {st.kubeconfig}"
        )
    problems = st.problems()
    lines += [f"problem: {p}" for p in problems]
    lines.append("lab is up" if not problems else "lab needs 'netrun lab up' to repair")
    return "\n".join(lines)


def _daemon(pid: int | None, answers: bool, host: Any) -> str:
    """One daemon's cell: running and answering, or what is wrong."""
    if not host.namespace_present:
        return "no namespace"
    if pid is None:
        return "not running"
    return f"pid {pid}" if answers else f"pid {pid}, not answering"


def cmd_cleanup(ns: argparse.Namespace) -> int:
    from netrun.cleanup.sweep import cleanup
    from netrun.hosts.ssh.settings import SSHSettings
    from netrun.inventory.loader import load_inventory

    inventory = load_inventory(ns.inventory)
    hosts = inventory.select(ns.limit) if ns.limit else list(inventory.hosts.values())
    settings = SSHSettings(accept_new_host_keys=ns.accept_new_host_keys)
    live = [] if ns.run_id else _live_runs(ns.db)
    for entry in live:
        print(f"skipping run {entry.run_id}: its controller (pid {entry.pid}) is still running")
    report = cleanup(hosts, settings, run_id=ns.run_id, skip=[e.run_id for e in live])
    _forget_swept(hosts, report.failed, ns.run_id, ns.db)
    for line in report.lines:
        print(line)
    pending = _pending_undo(hosts, report.failed, ns.run_id, ns.db)
    for name, err in report.failed.items():
        line = str(err) if str(err).startswith(f"{name}: ") else f"{name}: {err}"
        if pending.get(name):
            line += f"; still to undo there: {', '.join(pending[name])}"
        print(f"netrun: error: {line}", file=sys.stderr)
    return EXIT_FAILED if report.failed else EXIT_OK


def _pending_undo(
    hosts: list[Any], failed: dict[str, Any], run_id: str | None, db: Path | None
) -> dict[str, list[str]]:
    """Host name -> what dead runs changed there and the journal says is not undone yet
    (for hosts cleanup could not reach: the user should know what the host still has)."""
    from netrun.cleanup.journal import Journal, host_key, journal_beside
    from netrun.history.db import default_path

    keys = {host_key(h): h.name for h in hosts if h.name in failed}
    found: dict[str, list[str]] = {}
    for entry in Journal(journal_beside(db or default_path())).stale():
        if run_id is None or entry.run_id == run_id:
            for key, values in entry.hosts.items():
                name = keys.get(key) or (values["name"] if values["name"] in failed else None)
                if name is not None:  # the same address, or the same inventory name
                    found.setdefault(name, []).extend(values.get("undo", {}).values())
    return found


def _live_runs(db: Path | None) -> list[Any]:
    """This controller's runs still measuring (from the journal): cleanup leaves them."""
    from netrun.cleanup.journal import Journal, journal_beside
    from netrun.history.db import default_path

    return Journal(journal_beside(db or default_path())).live()


def _forget_swept(
    hosts: list[Any], failed: dict[str, Any], run_id: str | None, db: Path | None
) -> None:
    """Hosts that `netrun cleanup` swept need no sweep by the next run either."""
    from netrun.cleanup.journal import Journal, host_key, journal_beside
    from netrun.history.db import default_path

    journal = Journal(journal_beside(db or default_path()))
    keys = [host_key(h) for h in hosts if h.name not in failed]
    entries = [e for e in journal.stale() if run_id is None or e.run_id == run_id]
    for entry in entries:
        journal.forget(entry.run_id, keys)


def _load_run(spec: str, db: Path | None) -> dict[str, Any]:
    """A run from a folder, a results.json, or the history by id."""
    from netrun.history.db import History, default_path
    from netrun.results.store import load

    path = Path(spec)
    if path.exists():
        return load(path)
    with History.open(db or default_path()) as history:
        return history.get_run(spec)


def cmd_report(ns: argparse.Namespace) -> int:
    from netrun.report.render import render

    doc = _load_run(ns.run, ns.db)
    plots: list[Path] = []
    if ns.plot:
        from netrun.report.plots import figures as plotting

        run_dir = Path(ns.run) if Path(ns.run).is_dir() else Path(ns.run).parent
        if not Path(ns.run).exists():
            run_dir = Path(doc.get("run_dir") or f"netrun-report-{doc.get('run_id')}")
            run_dir.mkdir(parents=True, exist_ok=True)
        plots = plotting.plot_all(doc, run_dir)
        for p in plots:
            print(f"plot: {p}", file=sys.stderr)
    if ns.format == "html":  # one page with its plots, drawn for it when not asked to keep
        from netrun.report.page import html_page

        text = html_page(doc, doc_verdicts(doc), plots)
    else:
        text = render(doc, ns.format, doc_verdicts(doc), plots, detail=ns.detail, where=ns.run)
    if ns.output:
        from netrun.results.store import atomic_write

        atomic_write(ns.output, text)
        print(f"report: {ns.output}", file=sys.stderr)
    else:
        print(text, end="")
    return EXIT_OK


def cmd_diff(ns: argparse.Namespace) -> int:
    from netrun.report.diff import regressed, render

    a, b = _load_run(ns.run_a, ns.db), _load_run(ns.run_b, ns.db)
    print(render(a, b), end="")
    return EXIT_REGRESSED if regressed(a, b) else EXIT_OK


def doc_verdicts(doc: dict[str, Any]) -> list[Any] | None:
    """Verdicts stored in a results document by its baseline comparison (None: none made)."""
    from netrun.report.why import stored

    return stored(doc) if doc.get("baseline") else None
