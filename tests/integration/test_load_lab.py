"""Latency under load end to end on the lab (issue 28): ``load:`` on a latency test runs
the tool idle, then under a bulk iperf3 flow on the same pair, and keeps both with the
added latency and the load's throughput; a load that fails fails its test with one line
naming the flow and host; nothing is left behind (iperf3, netserver, run folder,
containers).

The lab's data links are shaped by tbf (1 Gbit/s, a 20 ms queue): a bulk TCP flow fills
that queue, so ping's loaded median sits milliseconds above its idle one.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from netrun.lab import netperf as lab_netperf
from tests.integration.conftest import LabHandle, lab_iperf3_pids
from tests.integration.helpers import (
    assert_nothing_left,
    entry,
    lab_containers,
    load_results,
    netrun_process,
    only_test,
    run_dirs,
    run_netrun,
    wait_for,
    write_inventory,
    write_scenario,
)

pytestmark = pytest.mark.integration


def netrun(tmp: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    res = run_netrun([*args, "-q", "--no-history", "-o", "out"], cwd=tmp, timeout=150)
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr, res.stderr
    return res


@pytest.fixture
def nothing_left(lab: LabHandle, tmp_path: Path) -> Iterator[None]:
    yield
    assert_nothing_left(lab, tmp_path / "out")


def test_ping_under_a_bidirectional_load(
    lab: LabHandle, tmp_path: Path, nothing_left: None
) -> None:
    scen = write_scenario(tmp_path, [
        entry("rrul", tool="ping", count=8, interval=0.2,
              load={"streams": 2, "direction": "both"}),
    ])  # fmt: skip
    res = netrun(tmp_path, scen, "-i", write_inventory(tmp_path, lab))
    assert res.returncode == 0, res.stderr
    doc = load_results(tmp_path / "out")
    sample = only_test(doc, "rrul")
    assert sample["status"] == "ok", sample["error"]
    m = sample["metrics"]
    assert m["rtt_p50_ms_loaded"] > m["rtt_p50_ms_idle"] + 0.5, m  # the queue filled
    assert m["latency_added_p50_ms"] == pytest.approx(m["rtt_p50_ms_loaded"] - m["rtt_p50_ms_idle"])
    assert m["latency_added_p99_ms"] is None  # 8 replies: no p99
    assert "100" in sample["details"]["unavailable"]["rtt_p99_ms_idle"]
    assert m["load_throughput_bps"] > 300e6  # both ways over 1 Gbit/s links
    load = sample["details"]["load"]
    assert load["direction"] == "both" and load["streams"] == 2 and len(load["bidir_bps"]) == 2
    assert len(sample["details"]["idle"]["rtts_ms"]) == 8
    assert len(sample["details"]["loaded"]["rtts_ms"]) == 8
    raw = json.loads((tmp_path / "out" / sample["raw"]).read_text())
    assert "ping statistics" in raw["idle"] and "ping statistics" in raw["loaded"]
    assert "sum_received_bidir_reverse" in json.loads(raw["load"])["end"]  # iperf3 JSON
    assert "latency_added_p50_ms" in doc["metrics"]  # declared: reports render it alone
    report = run_netrun(["report", tmp_path / "out", "--plot"], cwd=tmp_path, timeout=60)
    assert report.returncode == 0, report.stderr
    assert "latency under load" in report.stdout and "2+2 tcp" in report.stdout
    assert (tmp_path / "out" / "load.png").stat().st_size > 0


def test_a_load_that_cannot_start_fails_its_test_in_one_line(
    lab: LabHandle, tmp_path: Path, nothing_left: None
) -> None:
    fake = tmp_path / "iperf3"  # answers the probe's --version, fails as a server
    fake.write_text(
        '#!/bin/sh\ncase "$1" in -v|--version) exec iperf3 "$@";; esac\n'
        'echo "iperf3: error - unable to start listener: boom" >&2; exit 1\n'
    )
    fake.chmod(0o755)
    inv = write_inventory(tmp_path, lab, host_vars={"alpha": {"netrun_iperf3": str(fake)}})
    scen = write_scenario(tmp_path, [entry("rrul", tool="ping", count=3, interval=0.2,
                                           load=True)])  # fmt: skip
    res = netrun(tmp_path, scen, "-i", inv)
    assert res.returncode != 0
    error = only_test(load_results(tmp_path / "out"), "rrul")["error"]
    assert error.startswith("load flow bravo -> alpha: ") and "boom" in error, error
    assert "\n" not in error


def test_ctrl_c_under_load_stops_the_load(lab: LabHandle, tmp_path: Path) -> None:
    """Ctrl-C while the loaded phase runs: the load's iperf3 ends are stopped on the hosts
    and the run folder is swept."""
    scen = write_scenario(tmp_path, [entry("long", tool="ping", count=60, interval=0.2,
                                           load=True)])  # fmt: skip
    args = [scen, "-i", write_inventory(tmp_path, lab), "-q", "--no-history", "-o", "out"]
    with netrun_process(args, cwd=tmp_path) as proc:
        assert wait_for(lambda: len(lab_iperf3_pids(lab)) >= 2, 60), "the load never started"
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        _out, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert_nothing_left(lab, tmp_path / "out")
    assert run_dirs(load_results(tmp_path / "out")["run_id"]) == []


@pytest.mark.skipif(lab_netperf.cached() is None, reason="no netperf build in the lab's cache")
def test_tcp_rr_under_load_in_containers(docker_lab: LabHandle, tmp_path: Path) -> None:
    """The load runs in the test's own containers: the server container's address carries
    it, and removing the containers leaves nothing."""
    if "netrun_netperf" not in docker_lab.inventory.read_text():
        pytest.skip("the docker lab was started before netperf was built: no netperf in its image")
    scen = write_scenario(tmp_path, [
        entry("rr", tool="netperf", mode="docker", duration=2,
              load={"streams": 2, "direction": "down"}),
    ])  # fmt: skip
    res = netrun(tmp_path, scen, "-i", docker_lab.inventory)
    assert res.returncode == 0, res.stderr
    sample = only_test(load_results(tmp_path / "out"), "rr")
    assert sample["status"] == "ok", sample["error"]
    m = sample["metrics"]
    assert m["latency_p50_us_idle"] > 0 and m["latency_p50_us_loaded"] > 0
    assert m["latency_added_p99_ms"] is not None and m["load_throughput_bps"] > 100e6
    raw = json.loads((tmp_path / "out" / sample["raw"]).read_text())
    load = json.loads(raw["load"])
    assert load["start"]["test_start"]["reverse"] == 1
    assert load["start"]["connecting_to"]["host"] == sample["details"]["server_ip"]
    assert all(not names for names in lab_containers(docker_lab).values())
    assert_nothing_left(docker_lab, tmp_path / "out")
