"""Where a kubernetes test's bytes went, judged from both nodes' counters: a run of
scenarios/kubernetes-mtu.yaml on the lab's Flannel cluster (tests/fixtures/results/
kubernetes-mtu, 2026-12-03), its pod tests against its hostNetwork tests."""

from __future__ import annotations

import copy
import json
from typing import Any

from netrun.modes.kubernetes.pathbytes import parse_net_dev, verdict
from netrun.report.overlay_tax import lines, table
from netrun.results.overlay_tax import breakdowns
from tests.conftest import RESULTS_FIXTURES

DOC: dict[str, Any] = json.loads((RESULTS_FIXTURES / "kubernetes-mtu" / "results.json").read_text())


def sample(name: str) -> dict[str, Any]:
    return next(t for t in DOC["tests"] if t["name"] == name)


def test_pod_bytes_cross_flannel_1_and_the_data_nic() -> None:
    s = sample("pod-network[mtu=9000]")
    path, moved = s["details"]["path_bytes"], s["metrics"]["throughput_bps"]
    assert path["server"]["overlay"]["device"] == "flannel.1"
    assert path["server"]["host_nic"]["device"] == "data0"
    received = path["server"]["overlay"]["rx_bytes"]
    crossed, why = verdict(path, received, "pod")
    assert crossed is True and "flannel.1" in why, why
    assert moved > 0


def test_host_network_bytes_stay_off_the_overlay() -> None:
    s = sample("host-network[mtu=9000]")
    path = s["details"]["path_bytes"]
    crossed, why = verdict(path, path["server"]["host_nic"]["rx_bytes"], "host")
    assert crossed is False and "0.00" in why
    assert s["details"]["bare_side"]
    # judged as a pod test, the same counters say the overlay did not carry it
    assert verdict(path, path["server"]["host_nic"]["rx_bytes"], "pod")[0] is False


def test_counters_missing_or_no_bytes_give_no_verdict() -> None:
    path = copy.deepcopy(sample("pod-network[mtu=1500]")["details"]["path_bytes"])
    assert verdict(path, 0, "pod")[0] is None
    path["client"]["overlay"] = {"device": None, "rx_bytes": None, "tx_bytes": None}
    crossed, why = verdict(path, 1000, "pod")
    assert crossed is None and "no overlay counters on the client node" in why


def test_bytes_that_never_crossed_the_data_links_are_said_so() -> None:
    path = sample("pod-network[mtu=1500]")["details"]["path_bytes"]
    crossed, why = verdict(path, 100 * path["server"]["host_nic"]["rx_bytes"], "pod")
    assert crossed is None and "did not cross the data links" in why


def test_the_host_network_is_the_pod_networks_bare_metal_side() -> None:
    found = {b.test: b for b in breakdowns(DOC)}
    for mtu in (1500, 6000, 9000):
        b = found[f"pod-network[mtu={mtu}]"]
        assert b.bare_test == f"host-network[mtu={mtu}]"
        # named as what it is, in every sentence: no bare metal was measured here
        assert b.reference == "the nodes' own network"
        said = [b.gap_words, *(p.evidence for p in b.parts)]
        assert not any("bare metal" in line for line in said), said
    assert not any(name.startswith("host-network") for name in found)  # no bare metal here
    headers, rows = table(DOC)
    assert headers[3] == "reference" and rows[0][3].endswith("(the nodes' own network)")
    assert "vs the nodes' own network's" in lines(DOC)[1]


def test_net_dev_reads_rx_and_tx_bytes() -> None:
    text = (
        "Inter-|   Receive  |  Transmit\n face |bytes packets errs drop fifo frame compressed"
        " multicast|bytes\n  data0: 1200 10 0 0 0 0 0 0 3400 20 0 0 0 0 0 0\n"
    )
    assert parse_net_dev(text) == {"data0": (1200, 3400)}
