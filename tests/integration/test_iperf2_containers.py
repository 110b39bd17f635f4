"""tool: iperf2 in the container modes, on the docker lab: the lab's image carries iperf.

The server container runs ``iperf -s -u -e`` as PID 1 and each repeat docker-execs the
client; the server's report, read from its log, must show the client container's address
as the peer (the traffic crossed the docker network, not the hosts' own addresses).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from netrun.tools.iperf2 import parse as iperf2
from tests.integration.conftest import LabHandle
from tests.integration.helpers import entry, load_results, run_netrun, samples_of, write_scenario

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("mode", ["docker", "flannel"])
def test_iperf2_between_containers(docker_lab: LabHandle, tmp_path: Path, mode: str) -> None:
    scenario = write_scenario(
        tmp_path,
        [entry("lat", mode=mode, tool="iperf2", bitrate="2000pps", length=100, repeat=2)],
        defaults={"duration": 2},
    )
    run = run_netrun([scenario, "-i", docker_lab.inventory, "-o", "out", "--no-history"],
                     cwd=tmp_path, timeout=240)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "latency ms" in run.stdout  # the one-screen table; latency_avg_ms in --detail
    samples = samples_of(load_results(tmp_path / "out"), "lat")
    assert len(samples) == 2
    for sample in samples:
        assert sample["status"] == "ok", sample["error"]
        assert set(sample["metrics"]) == set(iperf2.METRIC_NAMES)
        assert sample["metrics"]["pps"] > 1500
        client_ips = sample["details"]["containers"]["client"]["ips"].values()
        assert sample["details"]["peer_seen"] in client_ips, sample["details"]
    # nothing of the test is left: the containers went with the test
    names = docker_lab.docker("alpha", "ps", "-aq", "--filter", "label=netrun").split()
    assert names == []
