"""Container tests of one pair and mode share their containers (netrun.modes.docker.savers.keep).

A sweep over keys that only shape the client (bitrate, reverse, streams...) and every
repeat measure with one server container and one client container; a swept ``mtu``
starts new ones per value; a failed test hands nothing on; and whatever way the run ends
(success, Ctrl-C, SIGKILL then ``netrun cleanup``) nothing is left. Container starts are
counted in the run's debug log: each is one ``docker run -d --name netrun-<run>-...``.
"""

from __future__ import annotations

import re
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LabHandle
from tests.integration.helpers import (
    assert_nothing_left,
    entry,
    load_results,
    netrun_process,
    run_netrun,
    samples_of,
    wait_for,
    write_scenario,
)
from tests.integration.test_container_modes import (
    labelled,
    netrun,
    nothing_left,  # noqa: F401  (the autouse leftovers check)
    run_not_accelerated,
    run_ok,
)

pytestmark = [pytest.mark.integration, pytest.mark.docker]


def starts(outdir: Path, run_id: str) -> dict[str, int]:
    """Container name -> how many times the run started it (its debug log)."""
    text = (outdir / "netrun.log").read_text()
    names = re.findall(rf"run -d --name (netrun-{run_id}-\S+)", text)
    return {n: names.count(n) for n in names}


def ids(samples: list[dict[str, Any]], role: str) -> set[str]:
    return {s["details"]["containers"][role]["id"] for s in samples}


def test_one_pair_of_containers_serves_repeats_and_sweep_values_and_mtu_restarts(
    docker_lab: LabHandle, tmp_path: Path
) -> None:
    tests = [
        entry("s", mode="docker", duration=1, repeat=2,
              sweep={"bitrate": ["100M", "200M"], "reverse": [False, True]}),
        entry("m", mode="docker", duration=1, sweep={"mtu": [1300, 1400]}),
    ]  # fmt: skip
    doc = run_ok(tmp_path, write_scenario(tmp_path, tests), docker_lab.inventory)
    shared = [s for s in doc["tests"] if s["name"].startswith("s[")]
    assert len(shared) == 8 and all(s["status"] == "ok" for s in shared)
    assert len(ids(shared, "server")) == 1 and len(ids(shared, "client")) == 1
    first = "s[bitrate=100M,reverse=false]"
    for sample in shared:
        reused = sample["details"].get("containers_reused")
        assert (reused is None) == (sample["name"] == first), sample["details"]
        if reused:
            assert reused["from"] == first
    swept = [s for s in doc["tests"] if s["name"].startswith("m[")]
    assert [s["status"] for s in swept] == ["ok", "ok"]
    assert len(ids(swept, "server")) == 2 and not ids(swept, "server") & ids(shared, "server")
    assert len({s["details"]["containers"]["server"]["mtu"] for s in swept}) == 2
    counted = starts(tmp_path / "out", doc["run_id"])  # a sweep's tests share a name tag
    run = doc["run_id"]
    assert counted == {
        f"netrun-{run}-t0-server": 1,  # one server and one client for all of s
        f"netrun-{run}-t0-client": 1,
        f"netrun-{run}-t1-server": 2,  # one per mtu value
        f"netrun-{run}-t1-client": 2,
    }, counted


def test_freeflow_sweep_keeps_its_containers_and_proves_each_repeat(
    docker_lab: LabHandle, tmp_path: Path
) -> None:
    tests = [entry("f", mode="freeflow", duration=1, sweep={"streams": [1, 2]})]
    doc = run_not_accelerated(tmp_path, write_scenario(tmp_path, tests), docker_lab.inventory)
    samples = doc["tests"]
    assert len(samples) == 2 and len(ids(samples, "server")) == 1
    for s in samples:
        assert s["details"]["library_loaded"] == {"server": True, "client": True}
        assert s["details"]["crossed_overlay"] is True, s["details"]["path_check"]
        for end in ("client", "server"):  # both ends' counters, every repeat
            assert s["details"]["path_bytes"][end]["overlay"]["rx_bytes"] is not None
    assert samples[1]["details"]["containers_reused"]["from"] == "f[streams=1]"
    log = (tmp_path / "out" / "netrun.log").read_text()
    assert len(re.findall(r"run -d --name freeflow ", log)) == 2  # one router per host


def test_a_failed_test_hands_nothing_on(docker_lab: LabHandle, tmp_path: Path) -> None:
    """The first test's measurement fails (its 2 s run outlives its 0.5 s timeout): the
    next test of the same pair and mode starts its own containers."""
    tests = [
        entry("bad", mode="docker", duration=2, timeout=0.5),
        entry("good", mode="docker", duration=1),
    ]
    res = netrun(tmp_path, write_scenario(tmp_path, tests), docker_lab.inventory)
    assert res.returncode == 1, res.stderr
    doc = load_results(tmp_path / "out")
    (bad,) = samples_of(doc, "bad")
    (good,) = samples_of(doc, "good")
    assert bad["status"] == "failed" and good["status"] == "ok", (bad["error"], good["error"])
    assert "containers_reused" not in good["details"]
    assert len(starts(tmp_path / "out", doc["run_id"])) == 4


def kept_run(tmp_path: Path, lab: LabHandle) -> Path:
    """Two 4 s docker tests of one pair: the second measures with the first's containers."""
    tests = [entry("k", mode="docker", duration=4, sweep={"bitrate": ["100M", "200M"]})]
    return write_scenario(tmp_path, tests)


def second_test_running(out: Path) -> bool:
    """The first test recorded its sample (the second adopted its containers)."""
    try:
        return len(load_results(out)["tests"]) >= 1
    except (OSError, ValueError, KeyError):
        return False


@pytest.mark.faults
def test_ctrl_c_in_a_test_with_kept_containers_leaves_nothing(
    docker_lab: LabHandle, tmp_path: Path
) -> None:
    scenario = kept_run(tmp_path, docker_lab)
    args = [scenario, "-i", docker_lab.inventory, "-o", "out", "-q"]
    with netrun_process(args, cwd=tmp_path) as proc:
        assert wait_for(lambda: second_test_running(tmp_path / "out"), 60)
        time.sleep(0.5)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    doc = load_results(tmp_path / "out")
    assert doc["status"] == "interrupted"
    assert labelled(docker_lab, "netrun") == {}


@pytest.mark.faults
def test_sigkill_with_kept_containers_then_cleanup_leaves_nothing(
    docker_lab: LabHandle, tmp_path: Path
) -> None:
    scenario = kept_run(tmp_path, docker_lab)
    args = [scenario, "-i", docker_lab.inventory, "-o", "out", "-q"]
    with netrun_process(args, cwd=tmp_path) as proc:
        assert wait_for(lambda: second_test_running(tmp_path / "out"), 60)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    run_id = load_results(tmp_path / "out")["run_id"]
    assert set(labelled(docker_lab, f"netrun.run_id={run_id}")) == {"alpha", "bravo"}
    res = run_netrun(
        ["cleanup", "-i", docker_lab.inventory, "--run-id", run_id], cwd=tmp_path, timeout=120
    )
    assert res.returncode == 0, res.stderr
    assert "undone: stop the time bound of container" in res.stdout, res.stdout
    assert labelled(docker_lab, "netrun") == {}
    assert_nothing_left(docker_lab, tmp_path / "out")
