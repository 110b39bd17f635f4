"""The emulated lab: plan (no root needed) and the real thing (root, sshd, iperf3)."""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import time
from pathlib import Path

import paramiko
import pytest
import yaml

from netrun.errors import NetrunError
from netrun.lab import core as netrun_lab_core
from netrun.lab import inventory, network
from netrun.lab import plan as netrun_lab_plan
from netrun.lab import status as netrun_lab_status
from netrun.lab.system import cmdline, netns_exists, pids_in_netns
from tests.integration.conftest import SLOT, LabHandle, lab_iperf3_pids, lab_skip_reason, start_lab


# -- the plan: pure, runs anywhere ------------------------------------------------------
def test_host_names_follow_nato_then_number() -> None:
    assert [netrun_lab_plan.host_name(i) for i in (0, 1, 2, 25, 26)] == [
        "alpha",
        "bravo",
        "charlie",
        "zulu",
        "node27",
    ]


def test_plan_addresses_and_names() -> None:
    cfg = netrun_lab_plan.LabConfig(hosts=2, prefix="nrt", net_index=1, state_dir=Path("/s"))
    lab = netrun_lab_plan.plan(cfg)
    alpha, bravo = lab.hosts
    assert (alpha.namespace, alpha.mgmt_ip, alpha.data_ip) == (
        "nrt-alpha",
        "10.201.1.10",
        "10.202.1.10",
    )
    assert bravo.routed == "10.245.17.0/24"  # docker mode's; flanneld leases the overlay's
    assert (lab.mgmt_bridge, lab.mgmt_gateway, lab.switch_namespace) == (
        "nrtmgmt",
        "10.201.1.1",
        "nrt-switch",
    )
    assert lab.overlay_network == "10.244.16.0/20"
    assert alpha.docker_sock == Path("/s/hosts/alpha/docker.sock")


@pytest.mark.parametrize(("rate", "mbps"), [("1gbit", 1000), ("400mbit", 400), ("2.5gbit", 2500)])
def test_rate_mbps(rate: str, mbps: float) -> None:
    assert netrun_lab_plan.rate_mbps(rate) == mbps


def test_bad_config_reports_every_problem() -> None:
    cfg = netrun_lab_plan.LabConfig(hosts=0, prefix="ceo", rate="fast", net_index=300)
    with pytest.raises(NetrunError) as err:
        netrun_lab_plan.plan(cfg)
    text = str(err.value)
    assert "hosts" in text and "prefix" in text and "rate" in text and "net_index" in text


def test_tbf_burst_grows_with_rate() -> None:
    assert network.tbf_args("1gbit") == [
        "tbf",
        "rate",
        "984395kbit",  # 1 Gbit/s of wire: tbf counts 1514 of each 1538-byte frame
        "burst",
        "256kb",
        "latency",
        "20ms",
    ]
    assert network.tbf_args("10gbit")[4] == "2560kb"


def test_inventory_is_ansible_shaped() -> None:
    cfg = netrun_lab_plan.LabConfig(hosts=2, state_dir=Path("/s"), inventory=Path("/i.yaml"))
    text = inventory.render(netrun_lab_plan.plan(cfg))
    assert text.startswith(inventory.HEADER)
    data = yaml.safe_load(text)["all"]
    assert data["vars"] == {
        "ansible_user": "root",
        "ansible_ssh_private_key_file": "/s/id_ed25519",
        "netrun_known_hosts": "/s/known_hosts",
        "netrun_link_speed_mbps": 1000,
    }
    assert data["hosts"]["bravo"] == {
        "ansible_host": "10.201.0.11",
        "netrun_data_ip": "10.202.0.11",
        "netrun_iface": "data0",
        "netrun_remote_tmp": "/s/hosts/bravo/tmp",  # its own: no other lab's run folders
    }
    assert list(data["children"]["lab"]["hosts"]) == ["alpha", "bravo"]
    # the roles scenarios/*.yaml name (server: servers, client: clients), one host each
    assert {g: list(data["children"][g]["hosts"]) for g in ("servers", "clients")} == {
        "servers": ["alpha"],
        "clients": ["bravo"],
    }


# -- the real lab -------------------------------------------------------------------------
def ssh(lab: LabHandle, name: str, command: str) -> str:
    """Run `command` on lab host `name` the way netrun connects: key + strict known_hosts."""
    client = paramiko.SSHClient()
    client.load_host_keys(str(lab.known_hosts))
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    client.connect(
        lab.host(name).mgmt_ip,
        username="root",
        key_filename=str(lab.key_file),
        look_for_keys=False,
        allow_agent=False,
        timeout=10,
    )
    try:
        _, stdout, stderr = client.exec_command(command, timeout=30)
        out = stdout.read().decode()
        assert stdout.channel.recv_exit_status() == 0, stderr.read().decode()
        return out
    finally:
        client.close()


def tx_bytes(namespace: str, dev: str) -> int:
    out = subprocess.run(
        ["ip", "-n", namespace, "-j", "-s", "link", "show", "dev", dev],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return int(json.loads(out)[0]["stats64"]["tx"]["bytes"])


@pytest.mark.integration
def test_ssh_reaches_each_host_in_its_own_namespace(lab: LabHandle) -> None:
    for name in lab.hosts:
        host = lab.host(name)
        out = ssh(lab, name, "hostname; readlink /proc/self/ns/net; ip -o addr show")
        hostname, netns, addrs = out.split("\n", 2)
        assert hostname == name
        assert netns == f"net:[{os.stat(f'/run/netns/{host.namespace}').st_ino}]"
        assert f"mgmt0    inet {host.mgmt_ip}/24" in addrs
        assert f"data0    inet {host.data_ip}/24" in addrs
        assert "eth0" not in addrs


@pytest.mark.integration
def test_bin_dir_shadows_a_tool_on_one_host_only(lab: LabHandle) -> None:
    fake = lab.bin_dir("alpha") / "iperf3"
    fake.write_text("#!/bin/sh\necho fake iperf3\n")
    fake.chmod(0o755)
    try:
        assert ssh(lab, "alpha", "iperf3 --version").strip() == "fake iperf3"
        assert ssh(lab, "bravo", "command -v iperf3").strip() == "/usr/bin/iperf3"
    finally:
        fake.unlink()


@pytest.mark.integration
def test_iperf3_between_data_ips_runs_at_the_shaped_rate(lab: LabHandle) -> None:
    alpha, bravo = lab.host("alpha"), lab.host("bravo")
    server = subprocess.Popen(
        ["ip", "netns", "exec", bravo.namespace, "iperf3", "-s", "-1", "-B", bravo.data_ip],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        before = tx_bytes(alpha.namespace, "data0")
        for _ in range(50):  # the server needs a moment to listen; retry the connect
            client = subprocess.run(
                [
                    "ip",
                    "netns",
                    "exec",
                    alpha.namespace,
                    "iperf3",
                    "-c",
                    bravo.data_ip,
                    "-t",
                    "2",
                    "-J",
                ],
                capture_output=True,
                text=True,
                timeout=30,
            )
            # iperf3 3.12 exits 0 even when the connect is refused: look for its error key
            refused = '"error"' in client.stdout and "connect" in client.stdout
            if not refused:
                break
            time.sleep(0.05)
        assert client.returncode == 0, client.stdout[-500:]
        bps = json.loads(client.stdout)["end"]["sum_received"]["bits_per_second"]
        assert 0.85e9 <= bps <= 1.01e9
        assert tx_bytes(alpha.namespace, "data0") - before > 100e6  # it went via data0
    finally:
        server.kill()
        server.wait()
    assert lab_iperf3_pids(lab) == []


@pytest.mark.integration
def test_up_again_changes_nothing_and_repairs_what_is_missing(lab: LabHandle) -> None:
    before = netrun_lab_status.status(lab.state_dir)
    again = netrun_lab_core.up(lab.config)
    assert again.ok
    assert [h.sshd_pid for h in again.hosts] == [h.sshd_pid for h in before.hosts]

    charlie = lab.host("charlie")
    subprocess.run(
        ["tc", "-n", charlie.namespace, "qdisc", "del", "dev", "data0", "root"], check=True
    )
    os.kill(before.host("charlie").sshd_pid or 0, 15)
    repaired = netrun_lab_core.up(lab.config)
    assert repaired.ok, repaired.problems()
    assert network.has_tbf(charlie.namespace, "data0")
    assert "charlie" in ssh(lab, "charlie", "hostname")


@pytest.mark.integration
def test_up_refuses_a_different_lab_on_the_same_state(lab: LabHandle) -> None:
    """It says what differs; only as the lab's one user is `lab down` offered."""
    with pytest.raises(NetrunError, match=r"\(--hosts: running 3 vs asked 2\).*down first$"):
        netrun_lab_core.up(
            netrun_lab_plan.LabConfig(
                hosts=2,
                prefix=lab.config.prefix,
                net_index=lab.config.net_index,
                state_dir=lab.state_dir,
                inventory=lab.inventory,
            )
        )


@pytest.mark.integration
def test_down_removes_everything_even_half_made(tmp_path: Path) -> None:
    reason = lab_skip_reason()
    if reason:
        pytest.skip(reason)
    small = start_lab(tmp_path, hosts=2, prefix=f"nrtx{SLOT or ''}", net_index=40 + 2 * SLOT)
    px = small.config.prefix
    status = netrun_lab_status.status(small.state_dir)
    pids = [h.sshd_pid for h in status.hosts]
    subprocess.run(["ip", "netns", "del", small.host("bravo").namespace], check=True)

    removed = netrun_lab_core.down(small.state_dir)

    assert f"namespace {px}-alpha" in removed and f"link {px}mgmt" in removed
    for name in (f"{px}-alpha", f"{px}-bravo", f"{px}-switch"):
        assert not netns_exists(name)
    assert not network.link_exists(f"{px}mgmt") and not network.link_exists(f"{px}m0")
    assert all(pid and not cmdline(pid) for pid in pids)
    assert not small.state_dir.exists() and not small.inventory.exists()
    assert netrun_lab_core.down(small.state_dir) == []
    assert netrun_lab_status.status(small.state_dir).problems() == [
        f"no lab in {small.state_dir}: run netrun lab up"
    ]


@pytest.mark.integration
def test_down_ends_sessions_still_open_in_the_lab(tmp_path: Path) -> None:
    """A session whose controller is still connected (or vanished) does not outlive the lab."""
    reason = lab_skip_reason()
    if reason:
        pytest.skip(reason)
    small = start_lab(tmp_path, hosts=1, prefix=f"nrtw{SLOT or ''}", net_index=41 + 2 * SLOT)
    alpha = small.host("alpha")
    ssh = subprocess.Popen(
        [
            "ssh", "-i", str(small.key_file), "-o", f"UserKnownHostsFile={small.known_hosts}",
            "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
            f"root@{alpha.mgmt_ip}", "sleep 600",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 10
        inside: list[int] = []
        while time.monotonic() < deadline:
            inside = [p for p in pids_in_netns(alpha.namespace) if "sleep" in " ".join(cmdline(p))]
            if inside:
                break
            time.sleep(0.05)
        assert inside, "the session never started"
        session = pids_in_netns(alpha.namespace)
        removed = netrun_lab_core.down(small.state_dir)
        assert any(line.startswith("process ") for line in removed), removed
        assert [p for p in session if cmdline(p)] == []
    finally:
        ssh.kill()
        ssh.wait(timeout=10)
        netrun_lab_core.down(small.state_dir)


# -- docker labs ----------------------------------------------------------------------------
@pytest.mark.integration
@pytest.mark.docker
def test_docker_lab_inventory_and_subnet_env(docker_lab: LabHandle) -> None:
    data = yaml.safe_load(docker_lab.inventory.read_text())["all"]["hosts"]["bravo"]
    assert data["netrun_freeflow_dir"] == str(docker_lab.freeflow_dir("bravo"))
    assert data["netrun_flannel_subnet_env"] == str(docker_lab.subnet_env("bravo"))
    base = 16 * docker_lab.config.net_index  # the lab's /20; flanneld leases bravo a /24
    env = dict(line.split("=", 1) for line in docker_lab.subnet_env("bravo").read_text().split())
    network = ipaddress.IPv4Network(f"10.244.{base}.0/20")
    lease = ipaddress.IPv4Interface(env.pop("FLANNEL_SUBNET"))
    assert env == {"FLANNEL_NETWORK": str(network), "FLANNEL_MTU": "1450",
                   "FLANNEL_IPMASQ": "false"}  # fmt: skip
    assert lease.network.prefixlen == 24 and lease.network.subnet_of(network), lease
    ns = docker_lab.host("bravo").namespace
    # written by a real flanneld in bravo's namespace, whose lease docker0 took (--bip)
    running = [p for p in pids_in_netns(ns) if Path(f"/proc/{p}/comm").read_text() == "flanneld\n"]
    assert len(running) == 1, running
    docker0 = subprocess.run(["ip", "-n", ns, "-o", "-4", "addr", "show", "dev", "docker0"],
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert f"inet {lease} " in docker0, docker0


@pytest.mark.integration
@pytest.mark.docker
def test_docker_over_ssh_talks_to_the_hosts_own_daemon(docker_lab: LabHandle) -> None:
    again = netrun_lab_core.up(docker_lab.config)  # idempotent: the same daemons keep running
    assert [h.docker_pid for h in again.hosts] == [
        docker_lab.host(name).docker_pid for name in docker_lab.hosts
    ]
    for name in docker_lab.hosts:
        out = ssh(docker_lab, name, "docker info --format '{{.Name}} {{.DefaultRuntime}}'")
        assert out.split() == [name, "nr-runc"]


@pytest.mark.integration
@pytest.mark.docker
def test_container_iperf3_crosses_the_vxlan_overlay(docker_lab: LabHandle) -> None:
    name = f"{docker_lab.config.prefix}-test-overlay-server"
    docker_lab.docker("bravo", "run", "-d", "--name", name, "netrun-lab/iperf3:latest", "-s", "-1")
    try:
        ip = docker_lab.docker(
            "bravo", "inspect", "-f", "{{.NetworkSettings.IPAddress}}", name
        ).strip()
        lease = docker_lab.subnet_env("bravo").read_text().split("FLANNEL_SUBNET=")[1].split()[0]
        assert ipaddress.ip_address(ip) in ipaddress.ip_interface(lease).network, (ip, lease)
        alpha_ns = docker_lab.host("alpha").namespace
        before = tx_bytes(alpha_ns, "flannel.1")
        out = docker_lab.docker(
            "alpha", "run", "--rm", "netrun-lab/iperf3:latest", "-c", ip, "-t", "2", "-J"
        )
        bps = json.loads(out)["end"]["sum_received"]["bits_per_second"]
        assert 0.8e9 <= bps <= 1.01e9  # VXLAN costs ~4 % of the 1 Gbit/s shaped link
        assert tx_bytes(alpha_ns, "flannel.1") - before > 100e6
    finally:
        docker_lab.docker("bravo", "rm", "-f", name)


@pytest.mark.integration
@pytest.mark.docker
def test_privileged_host_network_container_runs(docker_lab: LabHandle) -> None:
    out = docker_lab.docker(
        "charlie",
        "run",
        "--rm",
        "--privileged",
        "--net=host",
        "--entrypoint",
        "cat",
        "netrun-lab/iperf3:latest",
        "/proc/net/dev",
    )
    assert "data0:" in out and "flannel.1:" in out and "mgmt0:" in out


@pytest.mark.integration
@pytest.mark.docker
def test_freeflow_standin_publishes_a_preloadable_library(docker_lab: LabHandle) -> None:
    flow = docker_lab.freeflow_dir("alpha")
    router = "nrt-test-freeflow-router"
    docker_lab.docker(
        "alpha",
        "run",
        "-d",
        "--name",
        router,
        "--privileged",
        "--net=host",
        "-v",
        f"{flow}:/freeflow",
        "netrun-lab/freeflow-standin:latest",
    )
    try:
        labels = docker_lab.docker(
            "alpha",
            "image",
            "inspect",
            "-f",
            "{{json .Config.Labels}}",
            "netrun-lab/freeflow-standin:latest",
        )
        assert json.loads(labels)["netrun.standin"] == "freeflow"
        for _ in range(100):
            if (flow / "libfsocket.so").exists():
                break
            time.sleep(0.05)
        out = docker_lab.docker(
            "alpha",
            "run",
            "--rm",
            "--hostname",
            "ffprobe",
            "-e",
            "LD_PRELOAD=/freeflow/libfsocket.so",
            "-v",
            f"{flow}:/freeflow",
            "--entrypoint",
            "grep",
            "netrun-lab/iperf3:latest",
            "fsocket",
            "/proc/self/maps",
        )
        assert "/freeflow/libfsocket.so" in out
        marks = list((flow / "loaded").glob("ffprobe.*"))
        assert marks and marks[0].read_text().startswith("grep loaded")
    finally:
        docker_lab.docker("alpha", "rm", "-f", router)
