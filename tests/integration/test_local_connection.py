"""ansible_connection: local runs a host's commands on the controller itself, without sshd.

Both ends of this test are the controller, measuring over loopback: real iperf3, real
shell, no SSH at all.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.helpers import load_results, run_dirs, run_netrun, write_scenario, write_yaml

pytestmark = [pytest.mark.integration]


def test_a_run_between_two_local_hosts(tmp_path: Path) -> None:
    local = {"ansible_connection": "local", "netrun_data_ip": "127.0.0.1"}
    inventory = write_yaml(
        tmp_path / "local.yaml", {"all": {"hosts": {"here": local, "there": local}}}
    )
    scenario = write_scenario(
        tmp_path,
        [  # both ends are this machine: loopback on purpose (else refused as one host)
            {"name": "lo", "mode": "baremetal", "server": "here", "client": "there",
             "allow_same_host": True}
        ],
    )  # fmt: skip
    run = run_netrun([scenario, "-i", inventory, "-o", "out", "--no-history"], cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    doc = load_results(tmp_path / "out")
    (test,) = doc["tests"]
    assert test["status"] == "ok" and test["throughput_bps"] > 0, test
    assert doc["hosts"]["here"]["nic"]["iface"] == "lo"
    assert run_dirs(doc["run_id"]) == []
