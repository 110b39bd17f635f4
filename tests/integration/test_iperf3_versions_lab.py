"""iperf3 3.5 to 3.21 on the lab's hosts (`lab up --iperf3 VERSION`): netrun's receiver
figure is the receiving NIC's, on every release, or null with the reason; never the sender's.

One lab per release (alpha and bravo, built from ../shared/third_party/iperf.bundle or
NETRUN_IPERF3_SRC; each build is cached, netrun.lab.iperf3), five cases on each: TCP, TCP
-R, TCP -P 4, --bidir (3.7+) and UDP at 400 Mbit/s into a link that carries 100 (alpha's
``--host-rate``: the switch drops the rest, so the sender's figure is four times the
receiver's). Each case is one netrun run of 1 s; the receiving namespace's data0 rx_bytes
over that run is the check. A payload byte travels inside a frame, so the receiver's bytes
are at most the NIC's; and at least the NIC's less its headers (TCP 66 of 1514 bytes a
frame, plus acks and iperf3's control connection: MARGIN_TCP; UDP 42 of 1442: UDP_PAYLOAD,
and MARGIN_UDP for datagrams the receiving socket dropped on this loaded machine).

All 34 cases take about 2 minutes on 2 shared cores (each 1 s of traffic, a netrun run,
the lab's start once per release), so `make test` runs them all.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from netrun.lab import core as netrun_lab_core
from netrun.lab import iperf3 as lab_iperf3
from netrun.tools.iperf3.parse import parse
from tests.conftest import ROOT
from tests.integration.conftest import (
    VERSIONS_LAB_NET_INDEX,
    VERSIONS_LAB_PREFIX,
    LabHandle,
    lab_skip_reason,
    start_lab,
)
from tests.integration.helpers import (
    assert_nothing_left,
    entry,
    load_results,
    only_test,
    run_netrun,
    write_inventory,
    write_scenario,
)

BUNDLE = Path(
    os.environ.get(lab_iperf3.SOURCE_ENV) or ROOT.parent / "shared" / "third_party" / "iperf.bundle"
)
VERSIONS = ("3.5", "3.7", "3.9", "3.12", "3.16", "3.19.1", "3.21")
CASES: dict[str, dict[str, Any]] = {
    "tcp": {},
    "tcp_reverse": {"reverse": True},
    "tcp_4streams": {"streams": 4},
    "tcp_bidir": {"bidir": True},
    "udp_overload": {"protocol": "udp", "bitrate": "400M", "length": 1400},
}
MARGIN_TCP = 0.10
UDP_PAYLOAD = 1400 / 1442
MARGIN_UDP = 0.15

pytestmark = pytest.mark.skipif(not BUNDLE.exists(), reason=f"no iperf bundle at {BUNDLE}")


def _params() -> list[Any]:
    return [pytest.param(v, c, id=f"{v}-{c}") for v in VERSIONS for c in CASES]


@pytest.fixture(scope="module")
def labs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, LabHandle]]:
    """One lab at a time, one per release, brought up when a test first asks for it."""
    reason = lab_skip_reason()
    if reason:
        pytest.skip(reason)
    current: dict[str, LabHandle] = {}
    try:
        yield current
    finally:
        for handle in current.values():
            netrun_lab_core.down(handle.state_dir)


def lab_for(labs: dict[str, LabHandle], version: str, tmp: Path) -> LabHandle:
    if version not in labs:
        for old in list(labs):  # the previous release's lab goes first: one at a time
            netrun_lab_core.down(labs.pop(old).state_dir)
        labs[version] = start_lab(
            tmp,
            hosts=2,
            rate="400mbit",
            host_rates=(("alpha", "100mbit"),),
            prefix=VERSIONS_LAB_PREFIX,
            net_index=VERSIONS_LAB_NET_INDEX,
            iperf3=version,
            iperf3_src=BUNDLE,
        )
    return labs[version]


def rx_bytes(lab: LabHandle, host: str) -> int:
    ns = lab.host(host).namespace
    done = subprocess.run(
        ["ip", "netns", "exec", ns, "cat", "/sys/class/net/data0/statistics/rx_bytes"],
        capture_output=True,
        text=True,
        check=True,
        timeout=10,
    )
    return int(done.stdout)


@pytest.mark.parametrize(("version", "case"), _params())
def test_receiver_figure_is_the_receiving_nics(
    labs: dict[str, LabHandle], tmp_path_factory: pytest.TempPathFactory, version: str, case: str
) -> None:
    if case == "tcp_bidir" and version == "3.5":
        pytest.skip("--bidir exists from iperf3 3.7")
    lab = lab_for(labs, version, tmp_path_factory.mktemp(f"vlab-{version}"))
    tmp = tmp_path_factory.mktemp(f"{version}-{case}")
    scenario = write_scenario(tmp, [entry(case, server="alpha", client="bravo", **CASES[case])])
    before = {h: rx_bytes(lab, h) for h in ("alpha", "bravo")}
    done = run_netrun([scenario, "-i", lab.inventory, "-o", tmp / "out", "--no-history"], cwd=ROOT)
    wire = {h: rx_bytes(lab, h) - before[h] for h in ("alpha", "bravo")}
    assert done.returncode == 0, done.stderr[-2000:]
    sample = only_test(load_results(tmp / "out"), case)
    assert sample["tool_version"] == version
    raw = json.loads((tmp / "out" / sample["raw"]).read_text())
    assert raw["start"]["version"] == f"iperf {version}"  # the lab's build ran, both ends
    receiving = wire["bravo"] if CASES[case].get("reverse") else wire["alpha"]
    if CASES[case].get("bidir"):
        receiving = wire["alpha"] + wire["bravo"]
    figure = sample["throughput_bps"]
    # UDP before 3.11 included: the receiver's figure from the server's own JSON (issue 35)
    assert figure is not None, sample["details"].get("unavailable")
    parsed = parse((tmp / "out" / sample["raw"]).read_text())  # the bytes behind the figure
    assert figure == pytest.approx(parsed.receiver_bps)
    got = parsed.bytes_received
    assert got is not None
    if case.startswith("udp"):
        assert got <= receiving * UDP_PAYLOAD * 1.01, (got, receiving)
        assert got >= receiving * UDP_PAYLOAD * (1 - MARGIN_UDP), (got, receiving)
        assert sample["sender_bps"] > 1.5 * figure  # the link carried a fraction of it
    else:
        assert got <= receiving, (got, receiving)
        assert got >= receiving * (1 - MARGIN_TCP), (got, receiving)
    if CASES[case].get("bidir"):  # each half is its own receiver's (both were at 100M)
        halves = sample["details"]["bidir_bps"]
        assert halves["client_to_server"] == pytest.approx(halves["server_to_client"], rel=0.3)
    assert_nothing_left(lab, tmp / "out")


DROP = ["INPUT", "-i", "data0", "-p", "udp", "-m", "statistic", "--mode", "random"]
DROP += ["--probability", "0.10", "-j", "DROP"]


@pytest.mark.parametrize("version", VERSIONS)
def test_udp_loss_at_the_receiver_gives_the_receivers_figure_and_flags_it(
    labs: dict[str, LabHandle], tmp_path_factory: pytest.TempPathFactory, version: str
) -> None:
    """alpha's firewall drops 10% of the UDP datagrams it receives (LAB.md): on every
    release netrun's receiver figure is the release's own counters' ((packets - lost) x
    length over the receiver's time), received_pct is there, and the test's status is
    flagged loss-above-max; --fail-on-flags makes it exit 1 with one error line per flag
    (issue 35)."""
    lab = lab_for(labs, version, tmp_path_factory.mktemp(f"vlab-{version}"))
    tmp = tmp_path_factory.mktemp(f"{version}-drop")
    udp = {"protocol": "udp", "bitrate": "30M", "length": 1400, "duration": 2}
    scenario = write_scenario(tmp, [entry("lossy", server="alpha", client="bravo", **udp)])
    iptables = ["ip", "netns", "exec", lab.host("alpha").namespace, "iptables"]
    subprocess.run([*iptables, "-A", *DROP], check=True, timeout=10)
    try:
        done = run_netrun(
            [scenario, "-i", lab.inventory, "-o", tmp / "out", "--no-history", "--fail-on-flags"],
            cwd=ROOT,
        )
    finally:
        subprocess.run([*iptables, "-D", *DROP], check=True, timeout=10)
    sample = only_test(load_results(tmp / "out"), "lossy")
    assert sample["status"] == "ok", sample["error"]
    raw = json.loads((tmp / "out" / sample["raw"]).read_text())
    loss = raw["end"]["sum"]
    counted = raw["end"].get("sum_received") or loss  # the receiver's seconds
    want = (loss["packets"] - loss["lost_packets"]) * 1400 * 8 / counted["seconds"]
    assert sample["throughput_bps"] == pytest.approx(want, rel=0.005)
    assert sample["throughput_bps"] < 0.97 * sample["sender_bps"]
    assert sample["metrics"]["received_pct"] == pytest.approx(100 * sample["throughput_bps"] / 30e6)
    assert "received_pct" not in (sample["details"].get("unavailable") or {})
    if sample["lost_percent"] > 1:  # max_loss's default: 1%
        assert "loss-above-max" in sample["flags"]
        assert done.returncode == 1, done.stderr[-2000:]
        assert "netrun: error: test lossy: flagged loss-above-max: " in done.stderr
        row = next(line for line in done.stdout.splitlines() if line.startswith("lossy "))
        assert row.split()[-1] == "flagged" and " loss-above-max: " in done.stdout
    assert_nothing_left(lab, tmp / "out")


def test_an_option_the_release_lacks_is_refused_before_the_test(
    labs: dict[str, LabHandle], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """--bidir (3.7+) on 3.5, and a 3.19 option through extra_args on 3.12: one line naming
    the host, its release and the first one that has it; no iperf3 started."""
    lab = lab_for(labs, "3.5", tmp_path_factory.mktemp("vlab-3.5"))
    tmp = tmp_path_factory.mktemp("refused")
    tests = [
        entry("both", server="alpha", client="bravo", bidir=True),
        entry("rxcopy", server="alpha", client="bravo", skip_rx_copy=True),
        entry(
            "tuned", server="alpha", client="bravo", congestion="reno", no_delay=True,
            mss=1200, dscp=46, zerocopy=True, extra_args=["-T", "nrv"],
        ),
    ]  # fmt: skip
    done = run_netrun(
        [write_scenario(tmp, tests), "-i", lab.inventory, "-o", tmp / "out", "--no-history"],
        cwd=ROOT,
    )
    assert done.returncode == 1, done.stderr[-2000:]
    doc = load_results(tmp / "out")
    both = only_test(doc, "both")
    assert both["status"] == "failed"
    assert both["error"] == (
        "bravo: iperf3 3.5 has no --bidir (iperf3 3.7+): install iperf3 3.7 or newer there, "
        "or leave --bidir out of the test"
    )
    assert both["raw"] is None  # refused: iperf3 never ran
    assert only_test(doc, "rxcopy")["error"].startswith(
        "bravo: iperf3 3.5 has no --skip-rx-copy (iperf3 3.19+)"
    )
    tuned = only_test(doc, "tuned")  # options 3.5 has: passed to the client as keys say
    assert tuned["status"] == "ok", tuned["error"]
    raw = json.loads((tmp / "out" / tuned["raw"]).read_text())
    assert raw["end"]["sender_tcp_congestion"] == "reno"
    assert raw["start"]["test_start"]["tos"] == 46 << 2  # 3.5 itself would set 46 (#1162)
    assert raw["start"]["tcp_mss"] == 1200
    assert raw["start"]["test_start"]["protocol"] == "TCP"
    assert_nothing_left(lab, tmp / "out")


def test_extra_args_that_touch_netrun_s_options_are_bad_input(tmp_path: Path) -> None:
    tests = [entry("own", extra_args=["-P", "4"]), entry("attached", extra_args=["--time=5"])]
    inventory = tmp_path / "inv.yaml"
    inventory.write_text("all:\n  hosts:\n    alpha: {}\n    bravo: {}\n")
    done = run_netrun([write_scenario(tmp_path, tests), "-i", inventory, "--check"], cwd=ROOT)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "extra_args must not set '-P': netrun owns it (streams)" in done.stderr
    assert "'--time=5': netrun owns it (duration)" in done.stderr


def test_ipv6_data_addresses(
    labs: dict[str, LabHandle], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """``ipv6: true`` (-6) with v6 netrun_data_ip: the data flows over IPv6 (the lab's data0
    get a v6 address each here; the namespaces take them along when the lab goes down)."""
    lab = lab_for(labs, "3.21", tmp_path_factory.mktemp("vlab-3.21"))
    tmp = tmp_path_factory.mktemp("ipv6")
    v6 = {
        "alpha": f"fd{VERSIONS_LAB_NET_INDEX:02x}::10",
        "bravo": f"fd{VERSIONS_LAB_NET_INDEX:02x}::11",
    }
    for host, address in v6.items():
        subprocess.run(
            ["ip", "-n", lab.host(host).namespace, "addr", "replace", f"{address}/64",
             "dev", "data0", "nodad"],
            check=True, timeout=10,
        )  # fmt: skip
    inventory = write_inventory(
        tmp, lab, host_vars={h: {"netrun_data_ip": a} for h, a in v6.items()}
    )
    scenario = write_scenario(tmp, [entry("v6", ipv6=True, mss=1200)])
    done = run_netrun([scenario, "-i", inventory, "-o", tmp / "out", "--no-history"], cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    sample = only_test(load_results(tmp / "out"), "v6")
    raw = json.loads((tmp / "out" / sample["raw"]).read_text())
    assert raw["start"]["connected"][0]["remote_host"] == v6["alpha"]
    assert raw["start"]["connected"][0]["local_host"] == v6["bravo"]
    assert sample["throughput_bps"] > 50e6
    assert_nothing_left(lab, tmp / "out")
