#!/usr/bin/env python3
"""Benchmark how netrun's controller cost grows with the number of hosts (issue 14).

On a lab of its own (prefix nrb, bare metal, 32 hosts, a 0.1 s login cost per SSH command
as on real hosts), for N = 4, 8, 16, 32 it runs a mesh-once of 1-second tests with
``parallel: true`` (every unordered pair once, N-1 rounds for even N) and reports:
- the wall time against the ideal, rounds x duration;
- the connect-and-probe time (from "connecting to" to the first test's first line);
- the overhead per round: the test phase (first test's first line to the last result)
  minus rounds x duration, per round;
- the controller's peak RSS (wait4's ru_maxrss), its peak threads and open files
  (sampled from /proc every 20 ms).
Then a 32-host ordered mesh (992 tests) stored in a history database, and how long
``netrun report`` takes to render it.

Writes docs/scale.md and prints it. Run as root: `make bench` or `python3 bench/scale.py`.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from netrun.lab import core as netrun_lab_core  # noqa: E402
from netrun.lab import plan as netrun_lab_plan  # noqa: E402

DURATION = 1


#: The head of a progress line: "2026-12-01T02:17:27Z [3/28 samples, 0:04 elapsed, ETA 0:09] ".
PROGRESS_HEAD = re.compile(r"^(\S+Z )?\[[^\]]*\] ")


def round_robin(hosts: list[str]) -> list[list[tuple[str, str]]]:
    """Every unordered pair once, in rounds where no host plays twice (the circle method):
    N-1 rounds for even N, N for odd N (one host sits out each round)."""
    ring: list[str | None] = list(hosts) + ([None] if len(hosts) % 2 else [])
    n = len(ring)
    rounds = []
    for _ in range(n - 1):
        pairs = [(ring[i], ring[n - 1 - i]) for i in range(n // 2)]
        rounds.append([(a, b) for a, b in pairs if a is not None and b is not None])
        ring = [ring[0], ring[-1], *ring[1:-1]]
    return rounds


def mesh_tests(hosts: list[str], ordered: bool) -> tuple[list[dict[str, Any]], int]:
    """The tests of a mesh-once (or, ``ordered``, a mesh: both directions) in round order,
    and its number of rounds. Until ``pairs:`` (issue 14a) is on main, they are written out."""
    rounds = round_robin(hosts)
    if ordered:
        rounds = rounds + [[(b, a) for a, b in r] for r in rounds]
    tests = [
        {"name": f"mesh.{c}.{s}", "mode": "baremetal", "server": s, "client": c}
        for r in rounds
        for c, s in r
    ]
    return tests, len(rounds)


def write_scenario(path: Path, tests: list[dict[str, Any]]) -> Path:
    doc = {
        "name": path.stem,
        "parallel": True,
        "defaults": {"duration": DURATION},
        "tests": tests,
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@dataclass
class Sample:
    """What one netrun command cost."""

    wall: float = 0.0
    lines: list[tuple[float, str]] = field(default_factory=list)
    peak_threads: int = 0
    peak_fds: int = 0
    maxrss_mb: float = 0.0
    code: int = 0

    def messages(self) -> list[tuple[float, str]]:
        """The progress lines without their "TIME [samples, elapsed, ETA]" head."""
        return [(t, PROGRESS_HEAD.sub("", line)) for t, line in self.lines]

    def first(self, prefix: str) -> float | None:
        return next((t for t, line in self.messages() if line.startswith(prefix)), None)

    def first_test(self) -> float | None:
        """When the first test started (its "NAME (mode, ...): setting up" line)."""
        return next((t for t, line in self.messages() if line.endswith(": setting up")), None)

    def last_result(self) -> float | None:
        found = [t for t, line in self.messages() if "Mbit/s" in line]
        return found[-1] if found else None


def env() -> dict[str, str]:
    """netrun from this tree, with its bytecode cached (as an installed netrun has it)."""
    out = dict(os.environ, PYTHONPATH=str(ROOT))
    out.pop("PYTHONDONTWRITEBYTECODE", None)
    out["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "nrbench-pycache")
    # its own history, run lock and journal: no wait on, or sweep for, anyone else's runs
    out["XDG_DATA_HOME"] = str(Path(tempfile.gettempdir()) / "nrbench-data")
    return out


def measure(args: list[str], cwd: Path) -> Sample:
    """Run the CLI; its progress lines with arrival times, and its peak resources."""
    s = Sample()
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "netrun", *args],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env(),
    )
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            try:
                status = Path(f"/proc/{proc.pid}/status").read_text()
                fds = len(os.listdir(f"/proc/{proc.pid}/fd"))
            except OSError:
                break
            for line in status.splitlines():
                if line.startswith("Threads:"):
                    s.peak_threads = max(s.peak_threads, int(line.split()[1]))
            s.peak_fds = max(s.peak_fds, fds)
            done.wait(0.02)

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    assert proc.stderr is not None
    for line in proc.stderr:
        s.lines.append((time.monotonic() - started, line.rstrip("\n")))
    _, status, usage = os.wait4(proc.pid, 0)
    s.wall = time.monotonic() - started
    done.set()
    watcher.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    s.code = proc.returncode
    s.maxrss_mb = usage.ru_maxrss / 1024
    return s


def run_size(work: Path, inv: Path, hosts: list[str], forks: int) -> dict[str, Any]:
    tests, rounds = mesh_tests(hosts, ordered=False)
    scen = write_scenario(work / f"mesh-once-{len(hosts)}.yaml", tests)
    out = work / f"run-{len(hosts)}-f{forks}"
    s = measure([str(scen), "-i", str(inv), "-o", str(out), "--no-history", "-f", str(forks)], work)
    if s.code != 0:
        tail = "\n".join(line for _, line in s.lines[-5:])
        raise SystemExit(f"netrun failed on {len(hosts)} hosts ({s.code}):\n{tail}")
    t_conn, t_first, t_last = s.first("connecting to"), s.first_test(), s.last_result()
    assert t_conn is not None and t_first is not None and t_last is not None
    ideal = rounds * DURATION
    return {
        "hosts": len(hosts),
        "forks": forks,
        "tests": len(tests),
        "rounds": rounds,
        "ideal_s": ideal,
        "wall_s": s.wall,
        "connect_probe_s": t_first - t_conn,
        "per_round_s": (t_last - t_first - ideal) / rounds,
        "rss_mb": s.maxrss_mb,
        "threads": s.peak_threads,
        "fds": s.peak_fds,
    }


def run_big(work: Path, inv: Path, hosts: list[str]) -> dict[str, Any]:
    """A 32-host ordered mesh stored in history; then how long `netrun report` takes."""
    tests, rounds = mesh_tests(hosts, ordered=True)
    scen = write_scenario(work / "mesh-32.yaml", tests)
    out = work / "run-mesh-32"
    db = work / "history.sqlite"
    s = measure([str(scen), "-i", str(inv), "-o", str(out), "--db", str(db), "-q"], work)
    if s.code != 0:
        raise SystemExit(f"netrun failed on the 32-host mesh ({s.code})")
    renders = []
    for fmt in ("table", "markdown", "html"):
        r = measure(["report", str(out), "--format", fmt, "--db", str(db)], work)
        if r.code != 0:  # said in the table; the sizes measured so far are kept
            tail = " ".join(line for _, line in r.lines[-2:])[:200]
            print(f"netrun report --format {fmt} failed ({r.code}): {tail}", file=sys.stderr)
        renders.append((fmt, r.wall if r.code == 0 else None))
    return {
        "tests": len(tests),
        "rounds": rounds,
        "wall_s": s.wall,
        "rss_mb": s.maxrss_mb,
        "results_mb": (out / "results.json").stat().st_size / 1e6,
        "db_mb": db.stat().st_size / 1e6,
        "report_s": renders,
    }


def render(rows: list[dict[str, Any]], big: dict[str, Any] | None, rate: str) -> str:
    lines = [
        "# netrun at scale",
        "",
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `bench/scale.py` on the emulated "
        f"lab (bare metal, tbf {rate}, 0.1 s login cost per SSH command), {platform.machine()},",
        f"{os.cpu_count()} cores shared with other work. A mesh-once of {DURATION}-second tests, "
        "`parallel: true`; `-f` is forks (5 is the default).",
        "",
        "| hosts | -f | tests | rounds | wall (s) | ideal (s) | connect+probe (s) "
        "| overhead/round (s) | peak RSS (MB) | threads | open files |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['hosts']} | {r['forks']} | {r['tests']} | {r['rounds']} | {r['wall_s']:.1f} "
            f"| {r['ideal_s']} | {r['connect_probe_s']:.2f} | {r['per_round_s']:.2f} "
            f"| {r['rss_mb']:.0f} | {r['threads']} | {r['fds']} |"
        )
    lines += [
        "",
        "Goals: connect and probe 32 hosts in at most 2 s; at most 0.3 s of overhead per round; "
        "at most 250 MB RSS at 32 hosts.",
        "",
    ]
    if big:
        reports = ", ".join(
            f"{fmt} {sec:.2f} s" if sec is not None else f"{fmt} FAILED"
            for fmt, sec in big["report_s"]
        )
        lines += [
            f"A 32-host ordered mesh ({big['tests']} tests, {big['rounds']} rounds) ran in "
            f"{big['wall_s']:.0f} s at {big['rss_mb']:.0f} MB peak RSS, stored results.json "
            f"({big['results_mb']:.1f} MB) and history ({big['db_mb']:.1f} MB); "
            f"`netrun report` rendered it in: {reports} (goal: at most 2 s).",
            "",
        ]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[4, 8, 16, 32])
    ap.add_argument("--forks", type=int, nargs="+", default=[5, 32])
    ap.add_argument("--rate", default="100mbit", help="per-host tbf rate (low: CPU for all)")
    ap.add_argument("--no-big", action="store_true", help="skip the 992-test mesh")
    ap.add_argument("--output", type=Path, default=ROOT / "docs" / "scale.md")
    ap.add_argument("--prefix", default="nrb", help="the bench lab's name prefix")
    ap.add_argument("--net-index", type=int, default=3, help="the bench lab's address block")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="nrbench-scale-"))
    cfg = netrun_lab_plan.LabConfig(
        hosts=max(args.sizes),
        rate=args.rate,
        prefix=args.prefix,
        net_index=args.net_index,
        state_dir=work / "state",
        inventory=work / "inventory.yaml",
        login_cost=0.1,
    )
    status = netrun_lab_core.up(cfg)
    rows, big = [], None
    inv = cfg.inventory  # lab hosts have their own tmp (netrun_remote_tmp)
    try:
        names = [h.name for h in status.hosts]
        for n in args.sizes:
            for forks in sorted({min(f, n) for f in args.forks}):
                rows.append(run_size(work, inv, names[:n], forks))
                print(rows[-1], file=sys.stderr, flush=True)
        if not args.no_big and len(names) >= 32:
            big = run_big(work, inv, names[:32])
    finally:
        netrun_lab_core.down(cfg.state_dir)
        shutil.rmtree(work, ignore_errors=True)  # its run folders: keep /tmp as it was
    text = render(rows, big, args.rate)
    args.output.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
