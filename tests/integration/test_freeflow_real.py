"""The real FreeFlow TCP in the Docker lab: built from source, and proven by byte counters.

`netrun lab up --docker --freeflow-src BUNDLE` builds Microsoft's FreeFlow (tcp and master
branches) into the build cache and points the lab inventory's router_image at the real
router. The bundle is ../shared/third_party/freeflow.bundle beside the repository (or
NETRUN_FREEFLOW_SRC); without it these tests are skipped, and the stand-in tests in
test_container_modes.py still show what a loaded-but-idle library looks like.

The docker_lab fixture's inventory is switched to the real router for this module only
and switched back to the stand-in at its end.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from netrun.lab import core as netrun_lab_core
from netrun.lab import freeflow
from tests.conftest import ROOT
from tests.integration.conftest import LabHandle
from tests.integration.helpers import entry, load_results, run_netrun, write_scenario
from tests.integration.test_container_modes import assert_no_containers_left, netrun

pytestmark = [pytest.mark.integration, pytest.mark.docker]

BUNDLE = Path(
    os.environ.get("NETRUN_FREEFLOW_SRC")
    or ROOT.parent / "shared" / "third_party" / "freeflow.bundle"
)


def skip_reason() -> str | None:
    if not BUNDLE.exists():
        return (
            f"no FreeFlow source at {BUNDLE}: set NETRUN_FREEFLOW_SRC to a clone of "
            "https://github.com/microsoft/Freeflow to test the real FreeFlow"
        )
    for tool, package in freeflow.BUILD_TOOLS.items():
        if shutil.which(tool) is None:
            return f"{tool} not found: apt-get install {package} (FreeFlow's build needs it)"
    return None


def lab_up(lab: LabHandle, tmp: Path, *extra: str) -> str:
    """`netrun lab up` again on the docker lab (the same lab: only repairs); its stderr."""
    cfg = lab.config
    res = run_netrun(
        ["lab", "up", "--docker", "--hosts", str(cfg.hosts), "--rate", cfg.rate,
         "--prefix", cfg.prefix, "--net-index", str(cfg.net_index),
         "--state-dir", lab.state_dir, "--inventory", lab.inventory, *extra],
        cwd=tmp, timeout=1800,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    return res.stderr


@pytest.fixture(scope="module")
def real_lab(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LabHandle, str]]:
    """The docker lab with the real FreeFlow router image; yields it and `lab up`'s stderr."""
    reason = skip_reason()
    if reason:
        pytest.skip(reason)  # before the docker lab is built for nothing
    docker_lab: LabHandle = request.getfixturevalue("docker_lab")
    tmp = tmp_path_factory.mktemp("ffreal")
    try:
        said = lab_up(docker_lab, tmp, "--freeflow-src", str(BUNDLE))
        yield docker_lab, said
    finally:
        netrun_lab_core.up(docker_lab.config)  # back to the stand-in for the other modules


def router_image(lab: LabHandle) -> str:
    for line in lab.inventory.read_text().splitlines():
        if "netrun_router_image:" in line:
            return line.split(":", 1)[1].strip()
    raise AssertionError("no netrun_router_image in the lab inventory")


def measured(res: Any, doc: dict[str, Any], name: str) -> list[dict[str, Any]]:
    """The samples of ``name`` that measured. The real FreeFlow (research code) now and then
    breaks iperf3's control channel ("received an unknown control message"): netrun then
    fails that repeat, with iperf3's words, and the run exits 1. That is netrun doing its
    job; the proof is judged on the repeats that did measure, and at least one must."""
    samples = [t for t in doc["tests"] if t["name"] == name]
    for t in samples:
        if t["status"] != "ok":
            assert t["mode"] == "freeflow" and "iperf3" in (t["error"] or ""), t["error"]
    assert res.returncode in (0, 1), res.stderr
    ok = [t for t in samples if t["status"] == "ok"]
    assert ok, (res.stderr, [t["error"] for t in samples])
    return ok


def test_lab_builds_the_real_router_once(real_lab: tuple[LabHandle, str], tmp_path: Path) -> None:
    lab, said = real_lab
    image = router_image(lab)
    assert image.startswith("netrun-lab/freeflow:tcp-"), image
    labels = lab.docker("alpha", "image", "inspect", "--format", "{{json .Config.Labels}}", image)
    assert "netrun.freeflow.tcp" in labels and "netrun.standin" not in labels
    assert "router image" in said, said
    status = run_netrun(["lab", "status", "--state-dir", lab.state_dir], cwd=tmp_path)
    assert f"freeflow router: built from {BUNDLE}" in status.stdout, status.stdout
    again = lab_up(lab, tmp_path, "--freeflow-src", str(BUNDLE))
    assert "building" not in again, again  # cached by source commit


def test_real_freeflow_is_accelerated_and_beats_flannel(
    real_lab: tuple[LabHandle, str], tmp_path: Path
) -> None:
    lab, _ = real_lab
    shipped = ROOT / "scenarios" / "freeflow.yaml"
    args = ("-e", "duration=3", "-e", "repeat=3")
    res = netrun(tmp_path, shipped, lab.inventory, *args, timeout=400)
    doc = load_results(tmp_path / "out")
    assert all(t["status"] == "ok" for t in doc["tests"] if t["mode"] != "freeflow"), res.stderr
    for ff in measured(res, doc, "freeflow"):
        details = ff["details"]
        assert details["accelerated"] is True, details.get("path_check")
        assert details["crossed_overlay"] is False
        sent = ff["throughput_bps"] * 3 / 8
        for end, direction in (("client", "tx_bytes"), ("server", "rx_bytes")):
            path = details["path_bytes"][end]
            assert path["host_nic"][direction] > 0.9 * sent, path
            assert path["overlay"][direction] < 100_000, path  # setup only: the data left it
            assert path["container"][direction] < 100_000, path
        assert ff["retransmits"] is None
        assert "overlay socket" in details["unavailable"]["retransmits"]
        # the idle overlay socket's RTT, cwnd and 1450 path MTU are not the flow's (issue 26)
        assert ff["metrics"]["pmtu_bytes"] is None and ff["metrics"]["rtt_mean_ms"] is None
        assert "overlay socket" in details["unavailable"]["pmtu_bytes"]
        # the host socket carries the data: its MTU (not the overlay socket's MSS) sets the
        # ceiling, the same as bare metal's
        bare = next(t for t in doc["tests"] if t["mode"] == "baremetal")
        assert ff["goodput_ceiling_mbps"] >= bare["goodput_ceiling_mbps"] - 0.1, ff["ceiling_basis"]
        assert "overlay" not in ff["ceiling_basis"], ff["ceiling_basis"]
        # each end's router is read with the containers (issue 29): its own process, not
        # the start script that is the container's PID 1; over a bulk test it is idle
        # (it sets connections up, the kernel carries the data), so any figure >= 0
        for end in ("client", "server"):
            assert details["counters"][end]["procs"]["router"] >= 0, details["counters"][end]
        for record in details["routers"].values():
            assert record["pid"] != record["container_pid"] > 0, record
    for flannel in (t for t in doc["tests"] if t["name"] == "flannel"):
        assert flannel["details"]["crossed_overlay"] is True
    # How fast FreeFlow is against bare metal and Flannel is a benchmark figure (README),
    # not a timed assertion on a shared 2-core machine; here: it took the host's path.
    report = (tmp_path / "out" / "report.txt").read_text()
    assert "not accelerated" not in report and "unavailable" in report, report
    assert_no_containers_left(lab)


def test_real_freeflow_reverse_is_judged_on_the_servers_sending(
    real_lab: tuple[LabHandle, str], tmp_path: Path
) -> None:
    lab, _ = real_lab
    scenario = write_scenario(tmp_path, [entry("ffrev", mode="freeflow", reverse=True)])
    res = netrun(tmp_path, scenario, lab.inventory, "-e", "repeat=2")
    doc = load_results(tmp_path / "out")
    details = measured(res, doc, "ffrev")[0]["details"]
    assert details["accelerated"] is True, details.get("path_check")
    path = details["path_bytes"]
    # -R: the server (alpha) sends, the client (bravo) receives
    assert path["server"]["host_nic"]["tx_bytes"] > path["client"]["host_nic"]["tx_bytes"]
    assert path["client"]["host_nic"]["rx_bytes"] > 10e6
    assert_no_containers_left(lab)


def test_real_freeflow_netperf_tcp_rr_leaves_the_overlay(
    real_lab: tuple[LabHandle, str], tmp_path: Path
) -> None:
    """netperf TCP_RR through the real router: each netperf names its data port (else
    netserver listens unbound and FreeFlow hands the peer 0.0.0.0), the figures carry the
    path check, and UDP_RR, which FreeFlow's library does not intercept, is refused;
    TCP_CRR's connections show each end's router CPU."""
    lab, _ = real_lab
    if "netrun_netperf:" not in lab.inventory.read_text():
        pytest.skip("no netperf build in the lab's cache (make setup with NETPERF_SRC builds one)")
    scenario = write_scenario(
        tmp_path,
        [entry("ffrr", mode="freeflow", test="TCP_RR"),
         entry("ffudp", mode="freeflow", test="UDP_RR"),
         entry("ffcrr", mode="freeflow", test="TCP_CRR")],
        defaults={"tool": "netperf", "duration": 3},
    )  # fmt: skip
    res = netrun(tmp_path, scenario, lab.inventory)
    doc = load_results(tmp_path / "out")
    rr, udp = (next(t for t in doc["tests"] if t["name"] == n) for n in ("ffrr", "ffudp"))
    assert rr["status"] == "ok", rr["error"]
    details = rr["details"]
    assert details["accelerated"] is True, details.get("path_check")
    assert details["crossed_overlay"] is False and details["data_ports"]
    moved = details["payload_bytes"]
    assert moved["client"] == moved["server"] > 0  # 1-byte requests and responses
    for end in ("client", "server"):
        path = details["path_bytes"][end]
        assert path["host_nic"]["tx_bytes"] > 10 * moved[end], path  # headers on each byte
        assert path["overlay"]["tx_bytes"] < 0.1 * moved[end], path  # setup only
    metrics = rr["metrics"]
    assert metrics["transactions_per_s"] > 0
    assert metrics["latency_p50_us"] <= metrics["latency_p90_us"] <= metrics["latency_p99_us"]
    assert udp["status"] == "failed" and "UDP_RR cannot run in mode freeflow" in udp["error"]
    assert res.returncode == 1, res.stderr
    # TCP_CRR sets every connection up through both routers: their CPU shows (0.2-0.6
    # CPU-s per 3 s on the lab). The research router has died of SIGPIPE after one (the
    # lab's start script then exits): that end then says its router was gone.
    crr = next(t for t in doc["tests"] if t["name"] == "ffcrr")
    assert crr["status"] == "ok", crr["error"]
    seen = []
    for end in ("client", "server"):
        entry_ = crr["details"]["counters"][end]
        if "router" in entry_["procs"]:
            seen.append(entry_["procs"]["router"])
        else:
            assert "gone" in entry_["procs_unavailable"]["router"], entry_
    assert seen and all(cpu > 0 for cpu in seen), crr["details"]["counters"]
    assert_no_containers_left(lab)
