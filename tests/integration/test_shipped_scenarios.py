"""Every file in scenarios/ runs on the emulated lab (issue 23): a shipped scenario that
fails fails CI.

Each file runs unchanged through the real CLI on the inventory `netrun lab up` writes (its
groups servers, clients and relays are the roles the files name), shortened with
``-e duration=1 -e repeat=1``. The lab is chosen from the modes the file uses: a mode
whose hosts need `docker` (docker, flannel, freeflow) gets the Docker lab, a file of
`mode: kubernetes` a 2-node Kubernetes lab on Flannel (skipped, with the reason, where the
cluster cannot be built: test_k8s_lab's reasons, NETRUN_K8S_NO_BUILD among them), any other
the plain one, so a new scenario file is covered without a change here. The run must exit 0,
every sample in results.json must be ok, its terminal report must fit one screen (SCREEN
lines, no "not applicable" note), and the lab's hosts must be as before: no new
process in their namespaces (iperf3, iperf2, coturn, the TURN tunnel, containers' shims),
no run folder, no container, every link's MTU, state and qdisc as it was.

Each passing run's HTML page (``netrun report --format html``) is then opened in headless
Chromium (issue 25): every image must load and decode, and a page whose tests all passed
must not say FAILED, in its text or in any word its plots draw. It must fit a 1400-pixel
window without sideways scrolling and open with the counts and the scenario's own table,
the detail below (issue 36); its screenshot (page.png) and plots are left in the test's
folder to look at. Without Chromium the page
test is skipped, with the reason, except in CI (``CI`` set), where it fails.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from netrun.lab import core as netrun_lab_core
from netrun.lab import netperf as lab_netperf
from netrun.lab.system import netns_inode, pid_netns_inode
from netrun.modes import get_mode
from netrun.report.plots.figures import plot_all
from tests.conftest import ROOT
from tests.integration.conftest import LabHandle, start_lab
from tests.integration.helpers import lab_settings, leftovers, load_results, run_netrun, wait_for
from tests.integration.test_k8s_lab import NET_INDEX as K8S_LAB_NET_INDEX
from tests.integration.test_k8s_lab import PREFIX as K8S_LAB_PREFIX
from tests.integration.test_k8s_lab import _skip_reason as k8s_skip_reason
from tests.pages import (
    broken_images,
    chromium,
    figure_texts,
    in_browser,
    inlined_pngs,
    overflow,
    screenshot,
)

pytestmark = pytest.mark.integration

SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))
#: What shortens any scenario: the keys every test takes (a key no test sets is harmless).
SHORT = ["-e", "duration=1", "-e", "repeat=1"]
#: Files known to fail today, each with its issue; strict, so the fix shows as XPASS.
#: Shipped scenarios known to fail, with the issue that tracks each (none today).
KNOWN: dict[str, str] = {}
#: The most lines a shipped scenario's terminal report may print (issue 36: one screen;
#: the full report is `netrun report RUN --detail`).
SCREEN = 40
#: Scenario file -> the run folder of its passing run in this session (for its page test).
RUNS: dict[str, Path] = {}
#: The Kubernetes lab of the files of mode: kubernetes: test_k8s_lab's prefix and net index
#: (a cluster needs one of 0..15, all taken by the slots' labs), free again once those
#: modules took theirs down (module fixtures, one module after another).
K8S_PREFIX, K8S_NET_INDEX = K8S_LAB_PREFIX, K8S_LAB_NET_INDEX
#: A kubernetes file's run restarts the CNI's DaemonSet for each MTU it sets (and once to
#: restore): about 10 s each on the lab, more under load.
K8S_TIMEOUT = 420


@pytest.fixture(scope="module")
def k8s_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabHandle]:
    """Two nodes on Flannel's VXLAN (the pod network the write-up's MTUs are about)."""
    if (why := k8s_skip_reason()) is not None:
        pytest.skip(why)
    where = tmp_path_factory.mktemp("k8slab")
    handle = start_lab(where, hosts=2, prefix=K8S_PREFIX, net_index=K8S_NET_INDEX,
                       rate="400mbit", k8s=True, cni="flannel")  # fmt: skip
    try:
        yield handle
    finally:
        netrun_lab_core.down(handle.state_dir)


def modes_of(path: Path) -> set[str]:
    """The modes a scenario file's tests use (a test without one takes the defaults')."""
    data = yaml.safe_load(path.read_text())
    default = (data.get("defaults") or {}).get("mode")
    return {test.get("mode", default) for test in data["tests"]} - {None}


def lab_for(path: Path, request: pytest.FixtureRequest) -> LabHandle:
    """The lab a file's modes need: Kubernetes, Docker, or the plain one."""
    if "kubernetes" in modes_of(path):
        return request.getfixturevalue("k8s_lab")  # type: ignore[no-any-return]
    name = "docker_lab" if needs_docker(path) else "lab"
    return request.getfixturevalue(name)  # type: ignore[no-any-return]


def needs_docker(path: Path) -> bool:
    """Whether any mode of the file needs docker on a host (so the Docker lab)."""
    return any("docker" in tools for m in modes_of(path) for tools in get_mode(m).needs.values())


def tools_of(path: Path) -> set[str]:
    """The tools a scenario file's tests use (iperf3 where none is named)."""
    data = yaml.safe_load(path.read_text())
    default = (data.get("defaults") or {}).get("tool", "iperf3")
    return {test.get("tool", default) for test in data["tests"]}


def missing_program(path: Path) -> str | None:
    """Why the lab cannot run the file here: a tool the lab builds from source (netperf,
    no Debian 12 package) that this machine has no build of (`make setup` builds it from
    the bundle CI has); None when it can."""
    if "netperf" in tools_of(path) and lab_netperf.cached() is None:
        return "no netperf build in the lab's cache (make setup with NETPERF_SRC builds one)"
    return None


def case(path: Path) -> Any:
    marks = [pytest.mark.xfail(strict=True, reason=KNOWN[path.name])] if path.name in KNOWN else []
    return pytest.param(path, id=path.stem, marks=marks)


def lab_pids(lab: LabHandle) -> set[int]:
    """Every process inside the lab's namespaces (sshd, dockerd, and what a run starts)."""
    inodes = {netns_inode(ns) for ns in lab.namespaces} - {None}
    return {
        int(p.name)
        for p in Path("/proc").iterdir()
        if p.name.isdigit() and pid_netns_inode(int(p.name)) in inodes
    }


def started_since(
    lab: LabHandle, pids: set[int], before: Counter[str], timeout: float = 5.0
) -> list[str]:
    """Processes in the lab that were not there before the run, after polling up to
    ``timeout`` for them to go (one line each). On a Kubernetes lab by command line
    (``before``: ``commands`` before the run): a run that set the CNI's MTU restarted its
    DaemonSet, whose pods are the same commands under new pids (a shim's container id
    aside)."""
    if lab.config.k8s:
        wait_for(lambda: not commands(lab_pids(lab)) - before, 3 * timeout)
        return [f"{n} x {cmd}" for cmd, n in (commands(lab_pids(lab)) - before).items()]
    wait_for(lambda: not described(lab_pids(lab) - pids), timeout)
    return described(lab_pids(lab) - pids)


def commands(pids: set[int]) -> Counter[str]:
    """How many processes run each command line (a container id as ``*``)."""
    found = []
    for pid in pids:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue  # gone meanwhile
        found.append(b" ".join(argv).decode(errors="replace"))
    return Counter(re.sub(r"\b[0-9a-f]{64}\b", "*", cmd)[:200] for cmd in found)


def described(pids: set[int]) -> list[str]:
    found = []
    for pid in sorted(pids):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue  # gone meanwhile
        found.append(f"pid {pid}: {b' '.join(argv).decode(errors='replace')[:120]}")
    return found


@pytest.mark.parametrize("scenario", [case(p) for p in SCENARIOS])
def test_a_shipped_scenario_runs_on_the_lab_and_leaves_nothing(
    scenario: Path, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    if (why := missing_program(scenario)) is not None:
        if os.environ.get("CI"):  # CI builds every program the shipped files need
            pytest.fail(why)
        pytest.skip(why)
    lab = lab_for(scenario, request)
    before = lab_settings(lab)
    pids = lab_pids(lab)
    assert pids, "found no process in the lab's namespaces (not even sshd)"
    cmds = commands(pids)
    out = tmp_path / "out"
    args = [scenario, "-i", lab.inventory, "-o", out, "--no-history", *SHORT]
    run = run_netrun(args, cwd=tmp_path, timeout=K8S_TIMEOUT if lab.config.k8s else 150)
    where = f"\nstdout:\n{run.stdout[-3000:]}\nstderr:\n{run.stderr[-3000:]}"
    left = started_since(lab, pids, cmds) + leftovers(lab, before, out)
    assert run.returncode == 0, f"exit {run.returncode}{where}"
    doc = load_results(out)
    bad = [
        f"{t['name']}: {t['status']} {t.get('error')}" for t in doc["tests"] if t["status"] != "ok"
    ]
    assert doc["tests"] and bad == [], f"{bad}{where}"
    assert left == [], f"left behind: {left}"
    screen = run.stdout.splitlines()
    assert len(screen) <= SCREEN, f"{len(screen)} lines, more than one screen:\n{run.stdout}"
    assert "not applicable" not in run.stdout, run.stdout
    RUNS[scenario.name] = out


@pytest.mark.parametrize("scenario", [case(p) for p in SCENARIOS])
def test_a_shipped_scenarios_page_loads_every_plot_and_fails_no_passing_test(
    scenario: Path, tmp_path: Path
) -> None:
    binary = chromium()
    if binary is None:
        reason = "chromium is not installed (apt-get install chromium; make setup installs it)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    out = RUNS.get(scenario.name)
    if out is None:
        pytest.skip(f"{scenario.name} did not run and pass in this session (its run test)")
    page = out / "report.html"
    run = run_netrun(["report", out, "--format", "html", "-o", page], cwd=tmp_path, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    doc = load_results(out)
    seen = in_browser(page, binary)
    assert seen["imgs"], "the page shows no plot"
    assert broken_images(seen) == []
    # issue 36: one 1400-pixel window wide, the answer first; the screenshot and each plot
    # are kept in the test's folder to look at
    assert overflow(seen) == [], overflow(seen)
    screenshot(page, binary, tmp_path / "page.png")
    for alt, data in inlined_pngs(page.read_text()).items():
        (tmp_path / f"{alt}.png").write_bytes(data)
    text = seen["text"]
    assert text.index("summary") < text.index("detail") < text.index("environment")
    first = next(t["name"] for t in doc["tests"])
    assert text.index(first) < text.index("detail")  # the scenario's table above the detail
    assert "FAILED" not in seen["text"], seen["text"][:3000]
    for name in {t["name"] for t in doc["tests"]}:
        assert name in seen["text"]
    with figure_texts() as texts:  # the same plots, drawn from the same results.json
        plot_all(doc, tmp_path / "plots")
    assert sorted(texts) == sorted(i["alt"] + ".png" for i in seen["imgs"])
    drawn = {plot: [w for w in words if "fail" in w.lower()] for plot, words in texts.items()}
    assert {p: w for p, w in drawn.items() if w} == {}
