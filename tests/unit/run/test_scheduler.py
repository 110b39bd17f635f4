"""Parallel tests: the scenario key, the scheduler's host exclusivity, the failure summary.

The scheduler is exercised with a stand-in for one test's work (a short sleep that notes
which hosts it holds); SSH and iperf3 are exercised for real in the integration tests.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from netrun.errors import ScenarioError
from netrun.inventory.loader import load_inventory
from netrun.job import failure_lines
from netrun.modes.kubernetes.mode import Kubernetes
from netrun.run.plan import TestPlan
from netrun.run.request import RunRequest
from netrun.run.runner import Run
from netrun.run.scheduler import run_parallel
from netrun.scenario.loader import MAX_PARALLEL, load_scenario

HOSTS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot")


def scenario_file(tmp_path: Path, parallel: str | None, tests: list[tuple[str, str]]) -> Path:
    lines = ["tests:"]
    for i, (server, client) in enumerate(tests):
        lines.append(
            f"  - {{name: t{i}, mode: baremetal, server: {server}, client: {client}, duration: 1}}"
        )
    if parallel is not None:
        lines.append(f"parallel: {parallel}")
    path = tmp_path / "s.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    "text,expected", [(None, 1), ("1", 1), ("4", 4), ("true", MAX_PARALLEL), ("false", 1)]
)
def test_parallel_values(tmp_path: Path, text: str | None, expected: int) -> None:
    path = scenario_file(tmp_path, text, [("alpha", "bravo")])
    assert load_scenario(path, hosts=HOSTS).parallel == expected


@pytest.mark.parametrize("text", ["0", "-2", "many", "1.5", "[2]", str(MAX_PARALLEL + 1)])
def test_bad_parallel_is_named(tmp_path: Path, text: str) -> None:
    path = scenario_file(tmp_path, text, [("alpha", "bravo")])
    with pytest.raises(ScenarioError, match="parallel must be"):
        load_scenario(path, hosts=HOSTS)


def make_run(tmp_path: Path, tests: list[tuple[str, str]], width: int) -> tuple[Run, list]:
    inv = tmp_path / "inv.yaml"
    inv.write_text(
        "all:\n  hosts:\n"
        + "".join(f"    {h}: {{ansible_host: 127.0.0.{i + 1}}}\n" for i, h in enumerate(HOSTS))
    )
    scen = load_scenario(scenario_file(tmp_path, str(width), tests), hosts=HOSTS)
    req = RunRequest(scen, load_inventory(inv), tmp_path / "out")
    return Run(req), list(scen.tests)


class Recorder:
    """Stands in for Run._run_test: holds the test's hosts for a while, notes overlaps."""

    def __init__(self, seconds: float = 0.05) -> None:
        self.seconds = seconds
        self.lock = threading.Lock()
        self.holding: set[str] = set()
        self.clashes: list[str] = []
        self.started: list[str] = []
        self.most = 0
        self.now = 0

    def __call__(self, test: TestPlan, number: int, total: int) -> None:
        hosts = set(test.hosts)
        with self.lock:
            if hosts & self.holding:
                self.clashes.append(test.name)
            self.holding |= hosts
            self.started.append(test.name)
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(self.seconds)
        with self.lock:
            self.holding -= hosts
            self.now -= 1


def test_disjoint_pairs_overlap_and_shared_hosts_wait(tmp_path: Path) -> None:
    pairs = [("alpha", "bravo"), ("charlie", "delta"), ("alpha", "charlie"), ("echo", "foxtrot")]
    run, tests = make_run(tmp_path, pairs, width=4)
    rec = Recorder()
    run._run_test = rec  # type: ignore[method-assign]
    run._run_parallel([run.plans[t.name] for t in tests], 4)
    assert rec.clashes == []
    assert sorted(rec.started) == ["t0", "t1", "t2", "t3"]
    assert rec.most == 3  # t0, t1 and t3 together; t2 waits for both of its hosts
    assert rec.started.index("t3") < rec.started.index("t2")


def test_width_caps_tests_at_once(tmp_path: Path) -> None:
    pairs = [("alpha", "bravo"), ("charlie", "delta"), ("echo", "foxtrot")]
    run, tests = make_run(tmp_path, pairs, width=2)
    rec = Recorder()
    run._run_test = rec  # type: ignore[method-assign]
    run._run_parallel([run.plans[t.name] for t in tests], 2)
    assert rec.most == 2 and len(rec.started) == 3


def test_a_bug_in_a_worker_stops_the_run(tmp_path: Path) -> None:
    run, tests = make_run(tmp_path, [("alpha", "bravo"), ("charlie", "delta")], width=2)

    def broken(test: TestPlan, number: int, total: int) -> None:
        raise RuntimeError("bug")

    run._run_test = broken  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="bug"):
        run._run_parallel([run.plans[t.name] for t in tests], 2)


def test_failure_lines_one_per_distinct_failure() -> None:
    doc = {
        "errors": ["ghost: cannot connect"],
        "tests": [
            {"name": "a", "repeat": 1, "status": "ok", "error": None},
            {"name": "b", "repeat": 1, "status": "failed", "error": "bravo: iperf3 exited 1"},
            {"name": "b", "repeat": 2, "status": "failed", "error": "bravo: iperf3 exited 1"},
            {"name": "c", "repeat": 1, "status": "failed", "error": "ghost: cannot connect"},
        ],
    }
    assert failure_lines(doc) == [  # a test failed by its host's error: on the host's line
        "ghost: cannot connect (failed: test c)",
        "test b failed (repeat 1, 2): bravo: iperf3 exited 1",
    ]


def test_progress_reaches_the_callback_one_line_at_a_time(tmp_path: Path) -> None:
    """Parallel tests report from their own threads; a callback such as the CLI's print()
    (text and newline written separately) must never be entered twice at once."""
    pairs = [("alpha", "bravo"), ("charlie", "delta"), ("echo", "foxtrot")]
    run, tests = make_run(tmp_path, pairs, width=3)
    inside = threading.Semaphore(1)
    overlaps: list[str] = []

    def callback(line: str) -> None:
        if not inside.acquire(blocking=False):
            overlaps.append(line)
            return
        time.sleep(0.002)
        inside.release()

    run.req.progress = callback

    def chatty(test: TestPlan, number: int, total: int) -> None:
        for i in range(20):
            run.progress(f"{test.name}: line {i}")

    run._run_test = chatty  # type: ignore[method-assign]
    run._run_parallel([run.plans[t.name] for t in tests], 3)
    assert overlaps == []


class Item:
    """A test as the scheduler sees it: its hosts, its name, whether it runs alone."""

    def __init__(self, name: str, hosts: tuple[str, ...], solo: bool = False) -> None:
        self.name, self.hosts, self.solo = name, hosts, solo


def test_a_test_that_runs_alone_waits_for_the_others_and_nothing_starts_beside_it() -> None:
    items = [
        Item("t0", ("alpha", "bravo")),
        Item("t1", ("charlie", "delta")),
        Item("cni", ("echo", "foxtrot"), solo=True),  # disjoint hosts, yet alone
        Item("t3", ("alpha", "bravo")),
        Item("t4", ("charlie", "delta")),
    ]
    lock = threading.Lock()
    running: set[str] = set()
    beside: dict[str, set[str]] = {}

    def work(item: Item, number: int, total: int) -> None:
        with lock:
            beside[item.name] = set(running)
            for other in running:
                beside[other].add(item.name)
            running.add(item.name)
        time.sleep(0.05)
        with lock:
            running.discard(item.name)

    run_parallel(items, 4, work, lambda: None, alone=lambda item: item.solo)
    assert beside["cni"] == set()
    assert beside["t0"] == {"t1"} and beside["t3"] == {"t4"}


def test_a_kubernetes_test_that_sets_the_cnis_mtu_runs_alone(tmp_path: Path) -> None:
    path = tmp_path / "k.yaml"
    path.write_text(
        "tests:\n"
        "  - {name: own, mode: kubernetes, server: alpha, client: bravo}\n"
        "  - {name: cni, mode: kubernetes, server: alpha, client: bravo, mtu: 9000}\n"
        "  - {name: host, mode: kubernetes, server: alpha, client: bravo, mtu: 9000,"
        " k8s_network: host}\n"
    )
    by_name = {t.name: t for t in load_scenario(path, hosts=HOSTS).tests}
    assert Kubernetes.alone(by_name["own"]) is None
    assert "CNI's MTU" in str(Kubernetes.alone(by_name["cni"]))
    assert Kubernetes.alone(by_name["host"]) is None  # the nodes' NICs: its own hosts
