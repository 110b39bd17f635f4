"""tool: netperf end to end on the lab: TCP_RR percentiles, two instances pooled, and
nothing left behind (no netserver, no netperf, no run folder), also after Ctrl-C.

netperf is built once from ../shared/third_party/netperf.bundle (or NETRUN_NETPERF_SRC)
into the lab's cache (netrun.lab.netperf) when no build is cached yet; the inventory names
the build with netrun_netperf and netrun_netserver. Traffic stays between lab namespaces.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from netrun.lab import netperf as lab_netperf
from netrun.lab.system import cmdline, netns_inode, pid_netns_inode
from tests.conftest import ROOT
from tests.integration.conftest import LabHandle
from tests.integration.helpers import (
    assert_nothing_left,
    entry,
    error_lines,
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

SOURCE = Path(
    os.environ.get("NETRUN_NETPERF_SRC")
    or ROOT.parent / "shared" / "third_party" / "netperf.bundle"
)
PERCENTILES = ("latency_p50_us", "latency_p90_us", "latency_p99_us", "latency_p999_us")


@pytest.fixture(scope="module")
def build() -> Path:
    found = lab_netperf.cached()
    if found is None:
        if not SOURCE.exists():
            pytest.skip(f"no netperf build cached and no source at {SOURCE}")
        found = lab_netperf.build(lab_netperf.source(SOURCE))
    return found


@pytest.fixture
def inventory(lab: LabHandle, build: Path, tmp_path: Path) -> Path:
    return write_inventory(tmp_path, lab, all_vars=lab_netperf.host_vars(build))


def lab_programs(lab: LabHandle, *names: str) -> list[str]:
    """netperf/netserver processes inside the lab's namespaces."""
    inodes = {netns_inode(ns) for ns in lab.namespaces} - {None}
    found = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            argv = cmdline(int(p.name))
            if argv and Path(argv[0]).name in names and pid_netns_inode(int(p.name)) in inodes:
                found.append(f"{p.name} {' '.join(argv)}")
    return found


def nothing_of_netperf(lab: LabHandle) -> list[str]:
    return (wait_for(lambda: not lab_programs(lab, "netperf", "netserver"), 5) and []) or (
        lab_programs(lab, "netperf", "netserver"))  # fmt: skip


@pytest.fixture(autouse=True)
def nothing_left(lab: LabHandle, tmp_path: Path) -> Iterator[None]:
    yield
    assert nothing_of_netperf(lab) == []
    assert_nothing_left(lab, tmp_path / "out")


def netrun(tmp: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    res = run_netrun([*args, "-q", "--no-history", "-o", "out"], cwd=tmp, timeout=150)
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr, res.stderr
    return res


def test_tcp_rr_percentiles_and_two_instances_pooled(inventory: Path, tmp_path: Path) -> None:
    scen = write_scenario(tmp_path, [
        entry("rr", tool="netperf", duration=2),
        entry("rr2", tool="netperf", duration=2, instances=2, request_size=64,
              response_size=64),
        entry("stream", tool="netperf", test="TCP_STREAM", duration=2),
    ])  # fmt: skip
    res = netrun(tmp_path, scen, "-i", inventory)
    assert res.returncode == 0, res.stderr
    doc = load_results(tmp_path / "out")
    rr, rr2 = only_test(doc, "rr"), only_test(doc, "rr2")
    stream = only_test(doc, "stream")  # netserver's received rate: the receiver's figure
    assert stream["status"] == "ok", stream["error"]
    assert stream["protocol"] == "tcp" and stream["raw"].endswith(".txt")
    assert stream["throughput_bps"] == stream["metrics"]["throughput_bps"] > 0
    assert stream["sender_bps"] is None
    for sample in (rr, rr2):
        assert sample["status"] == "ok", sample["error"]
        assert sample["protocol"] == "tcp" and sample["raw"].endswith(".txt")
        assert sample["throughput_bps"] is None
        m = sample["metrics"]
        assert m["transactions_per_s"] > 100
        values = [m[name] for name in PERCENTILES]
        assert all(v is not None and v > 0 for v in values), m
        assert values == sorted(values) and values[-1] <= m["latency_max_us"]
        assert m["latency_mean_us"] > 0 and m["connections_per_s"] is None
        raw = (tmp_path / "out" / sample["raw"]).read_text()
        assert "Histogram of request/response times" in raw  # netperf's own output, kept
    d1, d2 = rr["details"], rr2["details"]
    assert d1["instances"] == 1 and d2["instances"] == 2 and len(d2["per_instance"]) == 2
    counts = [p["samples"] for p in d2["per_instance"]]
    assert d2["samples"] == sum(counts) and all(c > 0 for c in counts)
    assert sum(c for _, _, c in d2["histogram_us"]) == d2["samples"]
    assert rr2["metrics"]["transactions_per_s"] == pytest.approx(
        sum(p["throughput"] for p in d2["per_instance"])
    )
    assert "pooled" in d2["percentile_source"]


def test_percentiles_agree_with_netperfs_own_within_one_bucket(
    inventory: Path, tmp_path: Path
) -> None:
    """netperf's own -o P50_LATENCY,P90_LATENCY,P99_LATENCY of the same process (read from
    its finer internal buckets) lie in the printed bucket netrun names for that percentile;
    the report shows the whole bucket, and 2 repeats give no interval."""
    scen = write_scenario(tmp_path, [
        entry("tcp", tool="netperf", duration=2, repeat=2),
        entry("udp", tool="netperf", test="UDP_RR", duration=2, request_size=200,
              response_size=200),
    ])  # fmt: skip
    res = netrun(tmp_path, scen, "-i", inventory)
    assert res.returncode == 0, res.stderr
    doc = load_results(tmp_path / "out")
    for sample in doc["tests"]:
        assert sample["status"] == "ok", sample["error"]
        m, details = sample["metrics"], sample["details"]
        [own] = details["per_instance"]
        for q in ("50", "90", "99"):
            name = f"latency_p{q}_us"
            low, high = details["bucket_us"][name]
            assert m[name] == low and high - low == details["bucket_width_us"][name]
            assert low <= own[f"p{q}_us"] <= high, (sample["name"], q, own, low, high)
    report = (tmp_path / "out" / "report.txt").read_text()
    p50 = next(line for line in report.splitlines() if "latency_p50_us" in line)
    assert " us)" in p50 and "(bucket" in p50, p50
    tcp_max = next(line for line in report.splitlines() if line.startswith("tcp ")
                   and "latency_max_us" in line)  # fmt: skip
    assert tcp_max.rstrip().endswith(" -"), tcp_max  # 2 repeats: no 95% CI


def test_a_missing_netserver_is_one_line_with_its_packages(
    lab: LabHandle, build: Path, tmp_path: Path
) -> None:
    inv = write_inventory(
        tmp_path, lab, all_vars=lab_netperf.host_vars(build),
        host_vars={"alpha": {"netrun_netserver": "/nonexistent/netserver"}},
    )  # fmt: skip
    scen = write_scenario(tmp_path, [entry("rr", tool="netperf")])
    res = netrun(tmp_path, scen, "-i", inv)
    assert res.returncode != 0
    lines = [x for x in error_lines(res.stderr) if "netserver" in x]
    assert lines, res.stderr
    assert "alpha" in lines[0] and "EPEL" in lines[0] and "netrun_netserver" in lines[0]


def test_a_netserver_port_in_use_is_one_line(
    lab: LabHandle, inventory: Path, tmp_path: Path
) -> None:
    ns = lab.host("alpha").namespace
    ip = lab.host("alpha").data_ip
    holder = subprocess.Popen(
        ["ip", "netns", "exec", ns, "python3", "-c",
         "import socket,time;s=socket.socket();s.bind(('" + ip + "',23999));s.listen();"
         "print('up',flush=True);time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "up"
        scen = write_scenario(tmp_path, [entry("rr", tool="netperf", port=23999)])
        res = netrun(tmp_path, scen, "-i", inventory)
    finally:
        holder.kill()
        holder.wait()
    doc = load_results(tmp_path / "out")
    error = only_test(doc, "rr")["error"]
    assert res.returncode != 0 and error and "23999" in error and "in use" in error, error
    assert "\n" not in error


def test_ctrl_c_mid_test_leaves_no_netserver(
    lab: LabHandle, inventory: Path, tmp_path: Path
) -> None:
    scen = write_scenario(tmp_path, [entry("long", tool="netperf", duration=20)])
    args = [scen, "-i", inventory, "-q", "--no-history", "-o", "out"]
    with netrun_process(args, cwd=tmp_path) as proc:
        assert wait_for(lambda: lab_programs(lab, "netperf"), 30), "netperf never started"
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        _out, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    assert nothing_of_netperf(lab) == []
    assert run_dirs(load_results(tmp_path / "out")["run_id"]) == []


def test_a_sigkilled_runs_netperf_is_recorded_for_netrun_cleanup(
    lab: LabHandle, inventory: Path, tmp_path: Path
) -> None:
    """netperf writes to a file, not to the dead controller's channel, so it outlives a
    SIGKILL; it records its pid in the one pid-file format, as every process netrun
    starts, so ``netrun cleanup`` (or the next run's sweep) can stop it by that record
    (whichever ends it first here: that record, or the netserver's undo record)."""
    scen = write_scenario(tmp_path, [entry("long", tool="netperf", duration=20)])
    args = [scen, "-i", inventory, "-q", "--no-history", "-o", "out"]
    with netrun_process(args, cwd=tmp_path) as proc:
        assert wait_for(lambda: lab_programs(lab, "netperf"), 30), "netperf never started"
        time.sleep(0.5)
        os.kill(proc.pid, signal.SIGKILL)
    run_id = load_results(tmp_path / "out")["run_id"]
    time.sleep(0.5)
    left = {int(line.split()[0]) for line in lab_programs(lab, "netperf")}
    assert left, "the killed run's netperf should still run"
    pids = [f.read_text().split() for d in run_dirs(run_id) for f in d.glob("netperf-*.pid")]
    assert left & {int(p[0]) for p in pids if p}, (left, pids)
    res = run_netrun(["cleanup", "-i", inventory, "--run-id", run_id], cwd=tmp_path, timeout=60)
    assert res.returncode == 0 and not error_lines(res.stderr), res.stderr
    assert nothing_of_netperf(lab) == []
    assert run_dirs(run_id) == []


@pytest.mark.parametrize("mode", ["docker", "flannel", "freeflow"])
def test_tcp_rr_in_containers(
    docker_lab: LabHandle, build: Path, tmp_path: Path, mode: str
) -> None:
    """The lab's image carries netperf when the lab has a build: both ends in containers,
    two instances pooled, nothing left (containers, netserver) after."""
    if "netrun_netperf" not in docker_lab.inventory.read_text():
        pytest.skip("the docker lab was started before netperf was built: no netperf in its image")
    scen = write_scenario(tmp_path, [entry("rr", tool="netperf", mode=mode, duration=2,
                                           instances=2)])  # fmt: skip
    res = netrun(tmp_path, scen, "-i", docker_lab.inventory)
    assert res.returncode == 0, res.stderr
    sample = only_test(load_results(tmp_path / "out"), "rr")
    assert sample["status"] == "ok", sample["error"]
    m = sample["metrics"]
    assert m["transactions_per_s"] > 100 and m["latency_p99_us"] >= m["latency_p50_us"] > 0
    assert sample["details"]["samples"] > 0 and sample["details"]["instances"] == 2
    if mode == "flannel":  # the counters around each repeat: its payload crossed the overlay
        details = sample["details"]
        assert details["crossed_overlay"] is True, details["path_check"]
        assert "accelerated" not in details and details["payload_bytes"]["client"] > 0
        assert "client to server" in details["path_check"]
        assert details["path_bytes"]["server"]["overlay"]["rx_bytes"] > 0
    assert nothing_of_netperf(docker_lab) == []
