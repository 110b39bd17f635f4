"""Shared helpers for CLI integration tests: run netrun, build inputs, check nothing is left.

The tests drive ``python -m netrun`` in a subprocess, exactly as a user would, and judge the
run by its exit code, its stderr error lines and results.json, never by progress lines.
The lab's hosts are network namespaces on this machine, so their files are ours: a run's
folder ``<host's netrun_remote_tmp>/netrun-<run id>`` can be checked here directly.
"""

from __future__ import annotations

import copy
import fcntl
import json
import os
import pty
import re
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from netrun.hosts.lease import LEASE_DIR
from netrun.hosts.lease import POLL_S as LEASE_POLL_S
from tests.integration.conftest import LabHandle, lab_iperf3_pids

NETRUN = [sys.executable, "-m", "netrun"]
#: Where hosts keep run folders when an inventory sets no netrun_remote_tmp.
REMOTE_TMP = Path("/tmp")
#: Where the test labs' hosts keep them: `lab up` gives each host its own netrun_remote_tmp
#: (<state>/hosts/<name>/tmp), so one run's cleanup never meets another lab's records.
LAB_REMOTE_TMPS = "pytest-of-*/pytest-*/*/state/hosts/*/tmp"


def run_netrun(
    args: Sequence[str | Path], *, timeout: float = 120, cwd: Path
) -> subprocess.CompletedProcess[str]:
    """Run the CLI to the end; a hang past ``timeout`` fails the test (and kills netrun)."""
    return subprocess.run(
        [*NETRUN, *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=_env(),
    )


def start_netrun(args: Sequence[str | Path], *, cwd: Path) -> subprocess.Popen[str]:
    """Start the CLI in the background (for signal tests); the caller must reap it."""
    return subprocess.Popen(
        [*NETRUN, *map(str, args)],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )


def run_netrun_on_terminal(
    args: Sequence[str | Path], *, cwd: Path, timeout: float, columns: int | None = None
) -> tuple[int, str]:
    """Run the CLI with a terminal (a pty) as stderr, as a user at a shell would; return its
    exit code and everything the terminal got, redraws included."""
    master, slave = pty.openpty()
    if columns:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "netrun", *map(str, args)],
        cwd=cwd, stdout=subprocess.PIPE, stderr=slave, text=True,
    )  # fmt: skip
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    proc.wait(timeout=timeout)
    os.close(master)
    return proc.returncode, seen.decode(errors="replace")


@contextmanager
def netrun_process(args: Sequence[str | Path], *, cwd: Path) -> Iterator[subprocess.Popen[str]]:
    """start_netrun that SIGKILLs the process on the way out if the test left it running."""
    proc = start_netrun(args, cwd=cwd)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONWARNINGS", None)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def wait_for(predicate: Callable[[], Any], timeout: float, interval: float = 0.05) -> Any:
    """Poll until ``predicate()`` is truthy; return its last value (falsy on timeout)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


# -- inputs -----------------------------------------------------------------------------------
def write_yaml(path: Path, data: Any) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def entry(name: str, server: str = "alpha", client: str = "bravo", **opts: Any) -> dict[str, Any]:
    """One scenario test (bare metal unless ``mode`` is given)."""
    mode = opts.pop("mode", "baremetal")
    return {"name": name, "mode": mode, "server": server, "client": client, **opts}


def write_scenario(
    tmp: Path,
    tests: Sequence[Mapping[str, Any]],
    *,
    defaults: Mapping[str, Any] | None = None,
    name: str = "it",
    file: str = "scenario.yaml",
) -> Path:
    """A scenario file; durations default to 1 s so the suite stays short on 2 cores."""
    data: dict[str, Any] = {"name": name, "defaults": {"duration": 1, **(defaults or {})}}
    data["tests"] = [dict(t) for t in tests]
    return write_yaml(tmp / file, data)


def lab_inventory_data(lab: LabHandle) -> dict[str, Any]:
    """The lab's own inventory as data, to copy and change."""
    data = yaml.safe_load(lab.inventory.read_text())
    assert isinstance(data, dict)
    return data


def write_inventory(
    tmp: Path,
    lab: LabHandle,
    *,
    host_vars: Mapping[str, Mapping[str, Any]] | None = None,
    all_vars: Mapping[str, Any] | None = None,
    file: str = "inventory.yaml",
) -> Path:
    """A copy of the lab's inventory with some host or all-group variables changed or added.

    A host named in ``host_vars`` that the lab does not have is added (give it ansible_host).
    """
    data = copy.deepcopy(lab_inventory_data(lab))
    hosts = data["all"]["hosts"]
    for name, values in (host_vars or {}).items():
        hosts.setdefault(name, {}).update(values)
    data["all"]["vars"].update(all_vars or {})
    return write_yaml(tmp / file, data)


def load_results(outdir: Path) -> dict[str, Any]:
    doc = json.loads((outdir / "results.json").read_text())
    assert isinstance(doc, dict)
    return doc


def samples_of(doc: Mapping[str, Any], name: str) -> list[dict[str, Any]]:
    return [t for t in doc["tests"] if t["name"] == name]


def only_test(doc: Mapping[str, Any], name: str) -> dict[str, Any]:
    found = samples_of(doc, name)
    assert len(found) == 1, f"expected one sample of {name!r}, got {len(found)}: {doc['tests']}"
    return found[0]


#: What -q adds to each stderr line: the time and the run id (netrun.cli.outcome.stamp).
STAMP = re.compile(r" \[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ (?:run [0-9a-f]+|no run)\]$")


def plain_lines(stderr: str) -> list[str]:
    """The CLI's stderr lines without -q's stamp (`` [time run id]``)."""
    return [STAMP.sub("", line) for line in stderr.splitlines()]


def error_lines(stderr: str) -> list[str]:
    """The CLI's one-line errors ("netrun: error: ..."), without -q's stamp."""
    return [line for line in plain_lines(stderr) if line.startswith("netrun: error: ")]


# -- leftovers --------------------------------------------------------------------------------
def remote_tmps() -> list[Path]:
    """Every folder a host of a test lab (or an inventory without netrun_remote_tmp) keeps
    run folders in; run ids are random, so a run's folders are found among all of them."""
    found = [REMOTE_TMP, *REMOTE_TMP.glob(LAB_REMOTE_TMPS)]
    base = os.environ.get("NETRUN_TEST_BASETEMP")  # a --basetemp outside /tmp/pytest-of-*
    if base:
        found += Path(base).glob(LAB_REMOTE_TMPS.split("/", 2)[2])
    return list(dict.fromkeys(p.resolve() for p in found))  # pytest's labcurrent -> lab0


def run_dirs(run_id: str | None) -> list[Path]:
    """This run's folders on the hosts (netrun-<run id>-<host>); all netrun-* when run_id
    None."""
    patterns = [f"netrun-{run_id}", f"netrun-{run_id}-*"] if run_id else ["netrun-*"]
    return sorted(d for tmp in remote_tmps() for p in patterns for d in tmp.glob(p))


def iperf3_left(lab: LabHandle, timeout: float = 2.0) -> list[int]:
    """iperf3 pids still in the lab after polling up to ``timeout`` for them to go."""
    wait_for(lambda: not lab_iperf3_pids(lab), timeout)
    return lab_iperf3_pids(lab)


def leases_held(run_id: str) -> list[Path]:
    """The run's host leases still held (netrun.hosts.lease: the holder's file in /tmp)."""
    return sorted(Path(LEASE_DIR).glob(f"netrun-lease.*.{run_id}"))


def assert_nothing_left(lab: LabHandle, outdir: Path | None = None) -> None:
    """No iperf3 in the lab, and no run folder nor host lease for the run whose results
    are in ``outdir``."""
    left = iperf3_left(lab)
    assert left == [], f"iperf3 left running in the lab: pids {left}"
    if outdir is not None and (outdir / "results.json").exists():
        run_id = load_results(outdir)["run_id"]
        dirs = run_dirs(run_id)
        assert dirs == [], f"run folder left behind: {dirs}"
        # a killed run's watcher ends within its poll once the connection has gone
        wait_for(lambda: not leases_held(run_id), 2 * LEASE_POLL_S + 1)
        assert leases_held(run_id) == [], f"host lease left held: {leases_held(run_id)}"


# -- the fault suite's four promises ------------------------------------------------------------
#: Set by bench/reliability.py: every check_fault appends one JSON line here (for the doc).
FAULT_LOG_ENV = "NETRUN_FAULT_LOG"


def lab_settings(lab: LabHandle) -> dict[str, Any]:
    """What a run could change on the lab's hosts: each link's MTU and state, and qdiscs.

    Compared before and after a fault: netrun must restore anything it changes, and the
    test must undo its own injection, so the two snapshots are equal.
    """
    from netrun.lab.system import ip_json

    found: dict[str, Any] = {}
    for name in lab.hosts:
        ns = lab.host(name).namespace
        links = {
            link["ifname"]: (link.get("mtu"), "UP" in link.get("flags", []))
            for link in ip_json("link", "show", netns=ns)
            # a cluster's pod bridge and the pods' veths come and go with its pods (the
            # CNI's own), not with a run's changes
            if not (lab.config.k8s and link["ifname"].startswith(("veth", "cni0")))
        }
        qdiscs = sorted(
            (q.get("dev", ""), q.get("kind", "")) for q in ip_json("qdisc", "show", netns=ns)
        )
        found[name] = {"links": links, "qdiscs": qdiscs}
    return found


def lab_containers(lab: LabHandle) -> dict[str, list[str]]:
    """Containers labelled by netrun on each host of a Docker lab ({} on a plain lab)."""
    if not lab.config.docker:
        return {}
    found: dict[str, list[str]] = {}
    for name in lab.hosts:
        out = lab.docker(name, "ps", "-a", "--filter", "label=netrun", "--format", "{{.Names}}")
        if out.split():
            found[name] = out.split()
    return found


def leftovers(lab: LabHandle, before: Mapping[str, Any], outdir: Path | None) -> list[str]:
    """Everything a run left behind, one line each (the suite requires an empty list)."""
    found = [f"iperf3 pid {pid}" for pid in iperf3_left(lab, timeout=5.0)]
    if outdir is not None and (outdir / "results.json").exists():
        run_id = load_results(outdir).get("run_id")
        if run_id:
            found += [f"run folder {d}" for d in run_dirs(str(run_id))]
    for host, names in lab_containers(lab).items():
        found += [f"container {n} on {host}" for n in names]
    after = lab_settings(lab)
    for host, settings in before.items():
        if after.get(host) != settings:
            found.append(f"settings changed on {host}: {settings} -> {after.get(host)}")
    return found


@dataclass
class FaultRun:
    """One netrun invocation under an injected fault, timed."""

    proc: subprocess.CompletedProcess[str]
    elapsed: float
    outdir: Path


def run_under_fault(
    args: Sequence[str | Path], *, cwd: Path, outdir: Path, timeout: float = 120
) -> FaultRun:
    started = time.monotonic()
    proc = run_netrun(args, cwd=cwd, timeout=timeout)
    return FaultRun(proc, time.monotonic() - started, outdir)


def stopped_run(
    lab: LabHandle,
    args: Sequence[str | Path],
    *,
    cwd: Path,
    outdir: Path,
    ready: Callable[[], Any],
    sig: signal.Signals,
    what: str,
) -> FaultRun | None:
    """Run netrun, send ``sig`` once ``ready()`` holds; the FaultRun to check, or (SIGKILL)
    None once `netrun cleanup` on the lab's inventory left no iperf3 behind."""
    argv = [*NETRUN, *map(str, args)]
    proc = subprocess.Popen(
        argv, cwd=cwd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert wait_for(ready, timeout=40), what
        sent = time.monotonic()
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=60)
        elapsed = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
    if sig == signal.SIGKILL:
        cleanup = subprocess.run(
            [*NETRUN, "cleanup", "-i", str(lab.inventory)],
            cwd=cwd,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert cleanup.returncode == 0, cleanup.stderr
        assert not lab_iperf3_pids(lab), "cleanup left an iperf3 behind"
        return None
    done = subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)
    return FaultRun(proc=done, elapsed=elapsed, outdir=outdir)


def check_fault(
    lab: LabHandle,
    run: FaultRun,
    *,
    fault: str,
    before: Mapping[str, Any],
    max_seconds: float,
    statuses: Mapping[str, str],
    host: str | None,
    exit_code: int | None = 1,
    error_has: str | None = None,
) -> dict[str, Any]:
    """Assert the suite's four promises for one fault; return results.json.

    1. the run ended within ``max_seconds``;
    2. each test in ``statuses`` has that status in every sample of results.json;
    3. a one-line error (on stderr and in results.json) names ``host`` (and ``error_has``);
    4. nothing is left on any lab host: iperf3, run folder, container, changed setting.
    The outcome is logged for docs/reliability.md whether or not the checks pass.
    """
    left = leftovers(lab, before, run.outdir)
    log_fault(fault, run.elapsed, left)
    proc = run.proc
    where = f"\nstdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
    assert run.elapsed <= max_seconds, f"{fault}: took {run.elapsed:.1f}s > {max_seconds}s{where}"
    if exit_code is not None:
        assert proc.returncode == exit_code, f"{fault}: exit {proc.returncode}{where}"
    assert "Traceback" not in proc.stderr, f"{fault}: traceback{where}"
    doc = load_results(run.outdir)
    for name, status in statuses.items():
        samples = samples_of(doc, name)
        assert samples, f"{fault}: no sample of {name} in results.json{where}"
        got = {s["status"] for s in samples}
        assert got == {status}, f"{fault}: {name} status {got}, expected {status}{where}"
        for s in samples:
            assert "\n" not in (s.get("error") or ""), f"{fault}: multi-line error {s['error']!r}"
    if host is not None:
        lines = [ln for ln in error_lines(proc.stderr) if host in ln]
        if error_has is not None:
            lines = [ln for ln in lines if error_has in ln]
        assert lines, f"{fault}: no error line naming {host!r} ({error_has!r}){where}"
        errors = [s.get("error") or "" for s in doc["tests"]] + list(doc.get("errors", []))
        assert any(host in e for e in errors), f"{fault}: results.json names no {host!r}{where}"
    assert left == [], f"{fault}: left behind: {left}"
    return doc


def log_fault(fault: str, elapsed: float, left: list[str]) -> None:
    """Record one fault's outcome for docs/reliability.md (check_fault does it for you)."""
    path = os.environ.get(FAULT_LOG_ENV)
    if not path:
        return
    record = {
        "fault": fault,
        "test": os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0],
        "elapsed_s": round(elapsed, 2),
        "leftovers": len(left),
    }
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record) + "\n")
