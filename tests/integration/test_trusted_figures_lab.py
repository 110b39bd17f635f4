"""Figures a lab engineer can trust, on the emulated lab (issue 35): a test whose two ends
are one is refused, and the ceiling is the link's effective rate.

Stock Docker gives every host 172.17.0.0/16: with ``mode: docker`` on such a network the
server container on one host and the client container on the other get the same address,
and the client measured its own loopback (26709.5 Mbit/s, "% bare 2835.8", status ok).
Here both hosts' daemons get one network with the same subnet, so it happens for real;
and in bare metal, a second inventory name for bravo (two names, one namespace) and a
server whose data address is loopback. Each test fails with one line naming both ends
and what to change, no iperf3 traffic runs, the other tests still run, nothing is left.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import SLOT, LabHandle
from tests.integration.helpers import (
    assert_nothing_left,
    entry,
    lab_inventory_data,
    load_results,
    only_test,
    run_netrun,
    write_inventory,
    write_scenario,
    write_yaml,
)

pytestmark = pytest.mark.integration

#: One docker network, the same subnet on both hosts (what stock 172.17.0.0/16 is).
NETWORK = "nrsame"
SUBNET = f"10.203.{200 + SLOT}.0/24"


@pytest.fixture
def same_subnet(docker_lab: LabHandle) -> Iterator[str]:
    for host in ("alpha", "bravo"):
        docker_lab.docker(host, "network", "create", "--subnet", SUBNET, NETWORK)
    try:
        yield NETWORK
    finally:
        for host in ("alpha", "bravo"):
            docker_lab.docker(host, "network", "rm", NETWORK)


def test_two_containers_with_one_address_are_refused(
    docker_lab: LabHandle, same_subnet: str, tmp_path: Path
) -> None:
    tests = [entry("same-ip", mode="docker", network=same_subnet), entry("bare")]
    scen = write_scenario(tmp_path, tests, defaults={"duration": 1})
    proc = run_netrun([scen, "-i", docker_lab.inventory, "-o", "out", "--no-history"], cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    doc = load_results(tmp_path / "out")
    rec = only_test(doc, "same-ip")
    assert rec["status"] == "failed" and rec["raw"] is None  # no iperf3 ran
    containers = rec["details"]["containers"]
    ip = rec["details"]["server_ip"]
    assert ip in containers["client"]["ips"].values()  # what the lab made happen
    server, client = containers["server"]["name"], containers["client"]["name"]
    assert rec["error"] == (
        f"the server end (server container {server} on alpha, {ip}) is the "
        f"client end's own address, so the client end (client container {client} on bravo) "
        "would connect to itself: loopback, not the network; network nrsame gives both "
        "containers addresses from one subnet (stock Docker's bridge is 172.17.0.0/16 on "
        "every host); use a routable container network: an overlay (mode: flannel), or a "
        "network whose subnet differs per host"
    )
    assert f"netrun: error: test same-ip failed: {rec['error']}" in proc.stderr.splitlines()
    assert only_test(doc, "bare")["status"] == "ok"  # the other test still ran
    assert_nothing_left(docker_lab, tmp_path / "out")


def test_two_names_for_one_host_and_a_loopback_server_are_refused(
    lab: LabHandle, tmp_path: Path
) -> None:
    """bravo2 is bravo under another name (its SSH and data addresses); alpha's data
    address set to 127.0.0.1: neither is a network path."""
    bravo = lab.host("bravo")
    inventory = write_inventory(
        tmp_path,
        lab,
        host_vars={
            "bravo2": {
                "ansible_host": bravo.mgmt_ip,
                "netrun_data_ip": bravo.data_ip,
                "netrun_iface": "data0",
            },
            "lo-alpha": {
                "ansible_host": lab.host("alpha").mgmt_ip,
                "netrun_data_ip": "127.0.0.1",
            },
        },
    )
    tests = [
        entry("two-names", server="bravo2", client="bravo"),
        entry("loopback", server="lo-alpha", client="bravo"),
        entry("fine", server="alpha", client="bravo"),
    ]
    scen = write_scenario(tmp_path, tests, defaults={"duration": 1})
    proc = run_netrun([scen, "-i", inventory, "-o", "out", "--no-history"], cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    doc = load_results(tmp_path / "out")
    two = only_test(doc, "two-names")
    assert two["status"] == "failed" and two["raw"] is None
    assert two["error"] == (
        f"the server end (host bravo2, {bravo.data_ip}) is the client end's "
        "own address, so the client end (host bravo) would connect to itself: loopback, not "
        "the network; give each end its own host and netrun_data_ip (an address only that "
        "host holds), or set allow_same_host: true to measure loopback on purpose"
    )
    loop = only_test(doc, "loopback")
    assert loop["status"] == "failed" and loop["raw"] is None
    assert loop["error"].startswith(
        "the server end (host lo-alpha, 127.0.0.1) is a loopback address"
    )
    assert only_test(doc, "fine")["status"] == "ok"
    errors = [line for line in proc.stderr.splitlines() if line.startswith("netrun: error:")]
    assert f"netrun: error: test two-names failed: {two['error']}" in errors
    assert_nothing_left(lab, tmp_path / "out")


def test_the_ceiling_is_the_senders_shaping_qdisc_not_the_nics_speed(
    lab: LabHandle, tmp_path: Path
) -> None:
    """The lab's 10000 Mbit/s veths shaped by tbf, and an inventory that does not give the
    link speed (netrun_link_speed_mbps removed, as on a real lab that only shapes): the
    ceiling comes from the sender's tbf, which netrun read with its host context, and its
    basis names it; a TCP test that fills the link sits near 100% of it, not 10%."""
    data = lab_inventory_data(lab)
    data["all"]["vars"].pop("netrun_link_speed_mbps", None)
    for values in data["all"]["hosts"].values():
        values.pop("netrun_link_speed_mbps", None)
    inventory = write_yaml(tmp_path / "inventory.yaml", data)
    tests = [entry("fill", duration=2), entry("back", duration=2, reverse=True)]
    scen = write_scenario(tmp_path, tests)
    proc = run_netrun([scen, "-i", inventory, "-o", "out", "--no-history"], cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr  # 1: a flag on this loaded machine is fine
    doc = load_results(tmp_path / "out")
    for name, sender in (("fill", "bravo"), ("back", "alpha")):
        rec = only_test(doc, name)
        assert rec["status"] == "ok", rec["error"]
        assert rec["line_rate_mbps"] == 10000  # the veth's ethtool speed
        qdisc = doc["hosts"][sender]["context"]["qdisc"]
        assert qdisc.startswith("tbf root rate "), qdisc
        basis = rec["ceiling_basis"]
        assert "tbf root rate " in basis and f"on {sender}'s data0 egress" in basis, basis
        assert "below the 10000 Mbit/s line" in basis, basis  # then its burst's slack
        assert rec["goodput_ceiling_mbps"] < 2000  # the shaped rate's, not 9414.8
        assert 50 < 100 * rec["throughput_bps"] / 1e6 / rec["goodput_ceiling_mbps"] < 101
        assert "above-ceiling" not in rec["flags"]
    assert "ceiling from the tbf root rate" in proc.stdout
