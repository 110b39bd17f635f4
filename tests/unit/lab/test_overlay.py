"""netrun.lab.overlay's plan: the network config put into etcd, and how each host's
flanneld and the lab's etcd are started (run for real by the Docker lab's tests)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from netrun.lab import overlay
from netrun.lab.plan import LabConfig, plan

LAB = plan(LabConfig(hosts=3, prefix="nrt", net_index=2, state_dir=Path("/s"), docker=True))


def test_the_network_config_is_the_flannel_docs_one_for_the_labs_slash_20() -> None:
    assert overlay.network_config(LAB) == {
        "Network": "10.244.32.0/20",
        "SubnetLen": 24,
        "SubnetMin": "10.244.32.0",  # all 16 /24s: a Docker lab has up to 16 hosts
        "Backend": {"Type": "vxlan"},
    }
    json.dumps(overlay.network_config(LAB))  # what etcdctl put receives


def test_etcd_and_flanneld_listen_and_write_where_this_lab_says() -> None:
    assert overlay.etcd_url(LAB) == "http://10.201.2.1:4001"
    argv = overlay.etcd_argv(LAB)
    assert argv[argv.index("--data-dir") + 1] == "/s/etcd/data"
    assert argv[argv.index("--initial-cluster") + 1] == "nrt=http://10.201.2.1:7001"
    bravo = LAB.host("bravo")
    argv = overlay.flanneld_argv(LAB, bravo, Path("/c/flanneld"))
    assert argv[:3] == ["nsenter", "--net=/run/netns/nrt-bravo", "/c/flanneld"]
    assert argv[argv.index("--subnet-file") + 1] == "/s/hosts/bravo/flannel/subnet.env"
    assert argv[argv.index("--iface") + 1] == "data0"


def test_subnet_env_as_flanneld_writes_it(tmp_path: Path) -> None:
    path = tmp_path / "subnet.env"
    assert overlay.read_subnet_env(path) == {}  # not written yet
    path.write_text((Path(__file__).parents[2] / "fixtures" / "flannel" / "start-sections.txt")
                    .read_text().split("==netrun:vtep==")[0].split("\n", 1)[1])  # fmt: skip
    env = overlay.read_subnet_env(path)
    assert env["FLANNEL_SUBNET"] == "10.244.128.1/24" and env["FLANNEL_MTU"] == "1450"


def test_running_tells_a_zombie_from_a_live_process() -> None:
    assert overlay.running(os.getpid())
    child = subprocess.Popen(["true"])
    stat = Path(f"/proc/{child.pid}/stat")
    while stat.read_text().rpartition(")")[2].split()[0] != "Z":
        time.sleep(0.01)
    assert not overlay.running(child.pid)  # exited, not yet reaped
    child.wait()
    assert not overlay.running(child.pid)
