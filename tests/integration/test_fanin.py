"""Many into one (issue 28): ``pairs: {fanin: HOST}`` runs every other host into HOST at once.

Four hosts of the 12-host lab (200 Mbit/s each): three clients into delta share delta's
link, so the aggregate is near one link's rate, not three. Checked end to end through the
CLI: one sample per repeat with each client's figure and raw file, the aggregate against
delta's line rate, Jain's index; and Ctrl-C or SIGKILL (then ``netrun cleanup``) during a
fan-in of four clients leaves nothing behind.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from netrun.lab.system import cmdline, netns_inode, pid_netns_inode
from netrun.report.exporters import prometheus_text
from netrun.report.plots.fanin import count_filename
from netrun.report.summary import summary_rows
from netrun.results.overlay_tax import breakdowns
from tests.conftest import ROOT
from tests.integration.conftest import LabHandle, lab_iperf3_pids
from tests.integration.helpers import (
    check_fault,
    lab_settings,
    leftovers,
    load_results,
    netrun_process,
    run_netrun,
    run_under_fault,
    stopped_run,
    wait_for,
    write_yaml,
)
from tests.integration.turn_stand_ins import existing_coturn, write_turncat

pytestmark = [pytest.mark.integration]


def scenario(
    tmp: Path, hosts: str, centre: str = "delta", kind: str = "fanin", **opts: object
) -> Path:
    test = {"name": "fan", "mode": "baremetal", "hosts": hosts, "pairs": {kind: centre}}
    return write_yaml(
        tmp / "fan.yaml", {"name": "fanin", "defaults": {"duration": 2}, "tests": [test | opts]}
    )


def test_fanin_of_three_clients_shares_the_receivers_link(
    big_lab: LabHandle, tmp_path: Path
) -> None:
    path = scenario(tmp_path, "all[0:3]", repeat=2)
    before = lab_settings(big_lab)
    proc = run_netrun(
        [path, "-i", big_lab.inventory, "-o", "out", "--no-history"], cwd=tmp_path, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    doc = load_results(tmp_path / "out")
    samples = doc["tests"]
    assert [s["name"] for s in samples] == ["fan[3->delta]"] * 2
    assert "aggregate_bps" in doc["metrics"]
    for s in samples:
        assert s["status"] == "ok", s["error"]
        flows = s["details"]["flows"]
        assert [(f["client"], f["server"]) for f in flows] == [
            ("alpha", "delta"),
            ("bravo", "delta"),
            ("charlie", "delta"),
        ]
        total = sum(f["throughput_bps"] for f in flows)
        assert s["metrics"]["aggregate_bps"] == pytest.approx(total)
        assert s["metrics"]["throughput_bps"] == pytest.approx(total)
        # the lab shapes each link both ways, as a NIC does: three 200 Mbit/s senders
        # share delta's 200 Mbit/s (before issue 40 they read 1.5 to 3 times it); the
        # flows' 2 s windows start up to a few 100 ms apart, so their sum may read a
        # little over the ceiling (1.2% seen), never a sender's worth
        assert all(0 < f["throughput_bps"] < 190e6 for f in flows), flows  # TCP's share
        assert 0.8 * 200e6 < total <= 1.03 * s["goodput_ceiling_mbps"] * 1e6, total
        assert 0.3 < s["metrics"]["fairness_jain"] <= 1.0
        assert s["line_rate_mbps"] == 200  # delta's NIC: the bottleneck's
        assert s["goodput_ceiling_mbps"] < 200
        for f in flows:  # each figure's proof: its own raw iperf3 JSON
            raw = json.loads((tmp_path / "out" / f["raw"]).read_text())
            assert raw["end"]["sum_received"]["bits_per_second"] == pytest.approx(
                f["throughput_bps"]
            )
        assert len({f["raw"] for f in flows}) == 3
    assert "alpha,bravo,charlie→delta" in proc.stdout
    assert "fanin fan[3->delta] (baremetal, tcp, 3 flows into delta, 2 ok repeat(s))" in proc.stdout
    assert all(f"{c}→delta" in proc.stdout for c in ("alpha", "bravo", "charlie"))
    assert not leftovers(big_lab, before, tmp_path / "out")


def test_a_sweep_of_clients_is_one_fanin_per_count_and_a_table_by_count(
    big_lab: LabHandle, tmp_path: Path
) -> None:
    """``sweep: {clients: [1, 3]}`` in one run: fan[1->delta] with alpha alone, then
    fan[3->delta] with alpha, bravo and charlie; the report holds the counts side by side
    against delta's ceiling, and --plot draws the aggregate by count."""
    path = scenario(tmp_path, "all[0:4]", sweep={"clients": [1, 3]})
    check = run_netrun([path, "-i", big_lab.inventory, "--check-only"], cwd=tmp_path)
    assert check.returncode == 0, check.stderr
    assert "fan[1->delta]:" in check.stdout and "fan[3->delta]:" in check.stdout
    before = lab_settings(big_lab)
    proc = run_netrun(
        [path, "-i", big_lab.inventory, "-o", "out", "--no-history", "--plot"],
        cwd=tmp_path,
        timeout=180,
    )
    assert proc.returncode in (0, 1), proc.stderr  # 1: flagged above the ceiling is fine
    assert "setting up 1 flow\n" in proc.stderr and "3 flows at once" in proc.stderr
    assert "1 flows" not in proc.stderr, proc.stderr
    doc = load_results(tmp_path / "out")
    by_name = {s["name"]: s for s in doc["tests"]}
    assert list(by_name) == ["fan[1->delta]", "fan[3->delta]"]
    for name, clients in (
        ("fan[1->delta]", ["alpha"]),
        ("fan[3->delta]", ["alpha", "bravo", "charlie"]),
    ):
        s = by_name[name]
        assert s["status"] == "ok", s["error"]
        assert s["flows"] == [[c, "delta"] for c in clients]
        assert [f["client"] for f in s["details"]["flows"]] == clients
        assert s["details"]["fan"]["count"] == len(clients)
        assert s["options"].get("clients") is None  # the count places the test: not an option
        assert s["goodput_ceiling_mbps"] < 200  # the proof each row is held against
    one, three = (by_name[n]["metrics"]["aggregate_bps"] for n in by_name)
    ceiling = by_name["fan[3->delta]"]["goodput_ceiling_mbps"] * 1e6
    # one sender fills delta's link alone; three share it (its link is shaped both ways).
    # Over a 2 s test (1 s omitted) the shaper's token bucket lets a burst through on top
    # of the rate: three flows read 1.034 x the ceiling once in CI (flagged above-ceiling,
    # as it should be), so the bound is 5% over
    assert 0.9 * ceiling < one and 0.8 * ceiling < three <= 1.05 * ceiling, (one, three)
    head = "fanin fan[N->delta] by clients (baremetal, tcp)"
    assert head in proc.stdout, proc.stdout
    table = proc.stdout.split(head, 1)[1].splitlines()
    rows = [line.split() for line in table if line.split()[:1] in (["1"], ["3"])]
    assert [(r[0], r[-1]) for r in rows] == [("1", "fan[1->delta]"), ("3", "fan[3->delta]")]
    for row, name in zip(rows, by_name, strict=True):
        s = by_name[name]
        assert float(row[1]) == pytest.approx(s["metrics"]["aggregate_bps"] / 1e6, abs=0.06)
        assert float(row[2]) == pytest.approx(s["goodput_ceiling_mbps"], abs=0.06)
    assert [p.name for p in (tmp_path / "out").rglob("fanin-clients-*.png")] == [
        count_filename("fan[N->delta]")
    ]
    assert not leftovers(big_lab, before, tmp_path / "out")


def test_shipped_fanin_on_four_hosts_reads_at_or_under_the_ceiling(
    big_lab: LabHandle, tmp_path: Path
) -> None:
    """scenarios/fanin.yaml on four hosts (its header's `lab up --hosts 4`): three clients
    into alpha, then alpha into three. Each link is shaped both ways (issue 40), so neither
    sum passes alpha's 200 Mbit/s ceiling; with only the senders shaped the incast read
    three times it (2821 of 941.5 Mbit/s at 1gbit)."""
    before = lab_settings(big_lab)
    proc = run_netrun(
        [ROOT / "scenarios" / "fanin.yaml", "-i", big_lab.inventory, "-o", "out",
         "--no-history", "-e", "hosts=alpha,bravo,charlie,delta"],
        cwd=tmp_path,
        timeout=180,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr + proc.stdout
    doc = load_results(tmp_path / "out")
    by_name = {s["name"]: s for s in doc["tests"]}
    assert list(by_name) == ["incast[3->alpha]", "spread[alpha->3]"]
    # each flow's 5 s window starts when its client does (up to a few 100 ms apart on 2
    # busy cores), so a sum of flows may read a little over the link: 3.5% seen for the
    # spread, whose sender alpha was shaped before issue 40 too
    for s, slack in zip(by_name.values(), (1.02, 1.05), strict=True):
        assert s["status"] == "ok", s["error"]
        ceiling = s["goodput_ceiling_mbps"] * 1e6
        assert s["line_rate_mbps"] == 200 and ceiling < 200e6
        assert 0.8 * ceiling < s["metrics"]["aggregate_bps"] <= slack * ceiling, s["metrics"]
    assert not leftovers(big_lab, before, tmp_path / "out")


def test_fanout_sends_from_one_host_to_each_other(big_lab: LabHandle, tmp_path: Path) -> None:
    """delta sends to alpha and bravo at once; its own NIC is the one held to the ceiling;
    -e hosts= narrows the clients (a sweep of the fan's width is one -e per run)."""
    path = scenario(tmp_path, "all[0:3]", kind="fanout", duration=1)
    proc = run_netrun(
        [
            path,
            "-i",
            big_lab.inventory,
            "-o",
            "out",
            "--no-history",
            "-e",
            "hosts=alpha,bravo,delta",
        ],
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode in (0, 1), proc.stderr  # 1: flagged above the ceiling is fine
    doc = load_results(tmp_path / "out")
    (s,) = doc["tests"]
    assert s["name"] == "fan[delta->2]" and s["status"] == "ok", s["error"]
    assert [(f["client"], f["server"]) for f in s["details"]["flows"]] == [
        ("delta", "alpha"),
        ("delta", "bravo"),
    ]
    assert s["direction"] == "delta→alpha,bravo"
    assert s["line_rate_mbps"] == 200
    fan = dict(s["details"]["fan"])
    # both servers listened and both clients were armed before the line: they start together
    assert 0 <= fan.pop("start_spread_s") < 1.0
    assert fan.pop("omit_s") == 1  # each flow's first second left out (FAN_OMIT_S)
    assert fan == {"kind": "fanout", "host": "delta", "count": 2}


def test_a_failing_flow_fails_the_test_naming_it(big_lab: LabHandle, tmp_path: Path) -> None:
    """charlie's iperf3 answers the probe but fails as a client: the test fails with one
    line naming the flow and the host; the other flows are torn down, nothing is left."""
    broken = tmp_path / "iperf3-broken"
    broken.write_text(
        '#!/bin/sh\ncase " $* " in *" -c "*) echo "iperf3: error - boom" >&2; exit 1;; esac\n'
        'exec iperf3 "$@"\n'
    )
    broken.chmod(0o755)
    inventory = yaml.safe_load(Path(big_lab.inventory).read_text())
    inventory["all"]["hosts"]["charlie"]["netrun_iperf3"] = str(broken)
    inv = write_yaml(tmp_path / "inv.yaml", inventory)
    path = scenario(tmp_path, "all[0:3]")
    before = lab_settings(big_lab)
    proc = run_netrun([path, "-i", inv, "-o", "out", "--no-history"], cwd=tmp_path, timeout=120)
    assert proc.returncode == 1, proc.stdout
    doc = load_results(tmp_path / "out")
    (sample,) = doc["tests"]
    assert sample["status"] == "failed"
    assert sample["error"].startswith("flow charlie->delta failed on charlie: "), sample["error"]
    assert "\n" not in sample["error"]
    assert "Traceback" not in proc.stderr
    assert not leftovers(big_lab, before, tmp_path / "out")


#: charlie's iperf3 as a client: the real one sends for 3 s, then it fails (a flow that
#: breaks mid-measurement); the server and the probe get the real iperf3.
MIDWAY = (
    "#!/bin/sh\n"
    'case " $* " in *" -c "*) iperf3 "$@" >/dev/null 2>&1 & p=$!; sleep 3; kill "$p"; '
    'wait "$p"; echo "iperf3: error - control socket has closed unexpectedly" >&2; exit 1;; '
    "esac\n"
    'exec iperf3 "$@"\n'
)


def test_a_flow_failing_midway_stops_the_others(big_lab: LabHandle, tmp_path: Path) -> None:
    """charlie's client fails 3 s into a 20 s fan-in of three: the others' clients are
    stopped at once (by pid on their own hosts), so each repeat ends well before its
    duration; the error is charlie's one line, the later repeat still runs, and nothing
    is left behind."""
    broken = tmp_path / "iperf3-midway"
    broken.write_text(MIDWAY)
    broken.chmod(0o755)
    inventory = yaml.safe_load(Path(big_lab.inventory).read_text())
    inventory["all"]["hosts"]["charlie"]["netrun_iperf3"] = str(broken)
    inv = write_yaml(tmp_path / "inv.yaml", inventory)
    path = scenario(tmp_path, "all[0:3]", duration=20, repeat=2)
    before = lab_settings(big_lab)
    args = [path, "-i", inv, "-o", "out", "--no-history"]
    run = run_under_fault(args, cwd=tmp_path, outdir=tmp_path / "out", timeout=150)
    doc = check_fault(
        big_lab,
        run,
        fault="a fan-in flow failing midway",
        before=before,
        max_seconds=30,  # two repeats that ran out their 20 s would take over 42 s
        statuses={"fan[3->delta]": "failed"},
        host="charlie",
        error_has="flow charlie->delta failed on charlie: ",
    )
    samples = doc["tests"]
    assert [s["repeat"] for s in samples] == [1, 2]
    for s in samples:
        assert s["error"].startswith("flow charlie->delta failed on charlie: "), s["error"]
        assert "control socket has closed unexpectedly" in s["error"], s["error"]
    for client in ("alpha", "bravo"):
        line = f"flow {client}->delta stopped: flow charlie->delta failed"
        assert run.proc.stderr.count(line) == 2, run.proc.stderr
        # results.json keeps them too, in each failed repeat's sample
        assert all(line in s["details"]["stopped_flows"] for s in samples), samples


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGKILL, -9)])
def test_stopped_during_a_fanin_of_four_leaves_nothing(
    big_lab: LabHandle, tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    """Four clients into echo, stopped while they send: the run (or, after SIGKILL,
    `netrun cleanup`) removes every server and client."""
    path = scenario(tmp_path, "all[0:4]", centre="echo", duration=6)
    before = lab_settings(big_lab)
    out = tmp_path / "out"
    args = [path, "-i", big_lab.inventory, "-o", "out", "--no-history", "-q"]
    run = stopped_run(
        big_lab,
        args,
        cwd=tmp_path,
        outdir=out,
        ready=lambda: len(clients(big_lab)) >= 4,
        sig=sig,
        what="the four clients never ran at once",
    )
    if run is None:  # SIGKILL, then netrun cleanup
        assert not leftovers(big_lab, before, out)
        return
    doc = check_fault(
        big_lab,
        run,
        fault="SIGINT during a fan-in of four clients",
        before=before,
        max_seconds=15,
        statuses={},
        host=None,
        exit_code=code,
    )
    assert doc["status"] == "interrupted"


def clients(lab: LabHandle) -> list[int]:
    """iperf3 clients running in the lab's namespaces."""
    return [pid for pid in lab_iperf3_pids(lab) if "-c" in cmdline(pid)]


#: The Docker lab's fan-in: its other hosts (alpha, bravo) into charlie.
INTO_CHARLIE = {"hosts": "all", "pairs": {"fanin": "charlie"}}


def container_fans(
    lab: LabHandle, tmp: Path, tests: list[Any]
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Run ``tests`` (1 s each, the lab's iperf3 image) on the Docker lab: the process and
    its results."""
    image = {"image": "netrun-lab/iperf3:latest", "pull": "never"}
    path = write_yaml(
        tmp / "c.yaml", {"name": "cfan", "defaults": {"duration": 1, **image}, "tests": tests}
    )
    proc = run_netrun(
        [path, "-i", lab.inventory, "-o", "out", "--no-history", "-q"], cwd=tmp, timeout=240
    )
    return proc, load_results(tmp / "out")


def test_container_fanin_each_flow_its_own_containers(
    docker_lab: LabHandle, tmp_path: Path
) -> None:
    """docker, flannel and freeflow fan-ins of two clients into charlie (the Docker lab's 3 hosts),
    after a plain docker test of one of their pairs (whose containers a flow may adopt):
    each flow runs in containers of its own, and none is left."""
    fan = INTO_CHARLIE
    tests = [
        {"name": "one", "mode": "docker", "server": "charlie", "client": "alpha"},
        {"name": "dfan", "mode": "docker", **fan},
        {"name": "ffan", "mode": "flannel", **fan},
        {"name": "xfan", "mode": "freeflow", **fan},
    ]
    before = lab_settings(docker_lab)
    proc, doc = container_fans(docker_lab, tmp_path, tests)
    assert proc.returncode == 0, (proc.stderr, [t["error"] for t in doc["tests"]])
    fans = [s for s in doc["tests"] if s["name"] != "one"]
    assert [s["name"] for s in fans] == ["dfan[2->charlie]", "ffan[2->charlie]", "xfan[2->charlie]"]
    for s in fans:
        flows = s["details"]["flows"]
        assert [(f["client"], f["server"]) for f in flows] == [
            ("alpha", "charlie"),
            ("bravo", "charlie"),
        ]
        assert s["metrics"]["aggregate_bps"] == pytest.approx(
            sum(f["throughput_bps"] for f in flows)
        )
        assert all(f["throughput_bps"] > 0 for f in flows)
        names = [f["containers"]["server"]["name"] for f in flows]  # each flow its own
        assert len(set(names)) == 2, names
    assert not leftovers(docker_lab, before, tmp_path / "out")


def test_a_docker_fanin_meets_the_bare_fanin_of_the_same_clients(
    docker_lab: LabHandle, tmp_path: Path
) -> None:
    """Bare-metal fan-ins of 1 and 2 clients into charlie, then a docker fan-in of 2: its %
    bare and overlay tax are against the 2-client bare fan-in (not the 1-client one sharing
    its first flow alpha→charlie), and the table, CSV and Prometheus labels name both
    clients."""
    tests = [
        {"name": "fan", "mode": "baremetal", **INTO_CHARLIE, "sweep": {"clients": [1, 2]}},
        {"name": "dfan", "mode": "docker", **INTO_CHARLIE},
    ]
    before = lab_settings(docker_lab)
    proc, doc = container_fans(docker_lab, tmp_path, tests)
    assert proc.returncode in (0, 1), (proc.stderr, [t["error"] for t in doc["tests"]])
    names = [s["name"] for s in doc["tests"]]
    assert names == ["fan[1->charlie]", "fan[2->charlie]", "dfan[2->charlie]"]
    assert all(s["status"] == "ok" for s in doc["tests"]), [s["error"] for s in doc["tests"]]
    [tax] = breakdowns(doc)
    assert (tax.test, tax.bare_test, tax.pair) == (
        "dfan[2->charlie]", "fan[2->charlie]", "alpha,bravo→charlie")  # fmt: skip
    bare2 = next(s for s in doc["tests"] if s["name"] == "fan[2->charlie]")
    assert tax.bare_mbps == pytest.approx(bare2["throughput_bps"] / 1e6)
    rows = {r["name"]: r for r in summary_rows(doc)}
    docker = rows["dfan[2->charlie]"]
    assert docker["pct_bare"] == pytest.approx(
        100 * docker["mbps"] / rows["fan[2->charlie]"]["mbps"]
    )
    assert "alpha,bravo→charlie" in proc.stdout
    csv_out = run_netrun(["report", "out", "--format", "csv"], cwd=tmp_path)
    assert csv_out.returncode == 0, csv_out.stderr
    assert csv_out.stdout.count('charlie,"alpha,bravo",tcp') == 2, csv_out.stdout
    assert 'client="alpha,bravo"' in prometheus_text(doc)
    assert not leftovers(docker_lab, before, tmp_path / "out")


@pytest.mark.parametrize("kind", ["fanin", "fanout"])
def test_turn_fan_of_two_flows_through_one_relay(
    big_lab: LabHandle, tmp_path: Path, kind: str
) -> None:
    """alpha and bravo send iperf2 into charlie at once (fanin; fanout: charlie into each),
    each flow through its own tunnel and allocation on the one coturn netrun starts on delta,
    to its own server port: each flow's server saw its own relayed address, the relay's NIC
    carried them, and the sample is their sum."""
    test = {"name": "tfan", "mode": "turn", "tool": "iperf2", "relay": "delta",
            "hosts": "alpha,bravo,charlie", "pairs": {kind: "charlie"},
            "bitrate": "500pps", "duration": 2, "repeat": 2}  # fmt: skip
    path = write_yaml(tmp_path / "tfan.yaml", {"name": "tfan", "tests": [test]})
    before = lab_settings(big_lab)
    proc = run_netrun(
        [path, "-i", big_lab.inventory, "-o", "out", "--no-history"], cwd=tmp_path, timeout=180
    )
    assert proc.returncode == 0, proc.stderr
    doc = load_results(tmp_path / "out")
    relay = big_lab.host("delta").data_ip
    assert {"aggregate_bps", "fairness_jain"} <= set(doc["metrics"])
    samples = doc["tests"]
    name = "tfan[2->charlie]" if kind == "fanin" else "tfan[charlie->2]"
    ends = [("alpha", "charlie"), ("bravo", "charlie")]
    ends = ends if kind == "fanin" else [(b, a) for a, b in ends]
    assert [s["name"] for s in samples] == [name] * 2
    for s in samples:
        assert s["status"] == "ok", s["error"]
        assert s["tool"] == "iperf2" and s["mode"] == "turn"
        flows = s["details"]["flows"]
        assert [(f["client"], f["server"]) for f in flows] == ends
        relayed = {f["relayed_address"] for f in flows}
        assert len(relayed) == 2, flows  # an allocation of its own each
        for f in flows:
            assert f["peer_seen"] == relay, f
            assert f["relayed_address"].startswith(relay + ":")
            assert f["peers"] == [f["relayed_address"].replace(":", " port ")], f
            counters = f["relay_counters"]
            assert counters["crossed"] is True and counters["flows_at_once"] == 2, counters
            assert counters["tx_packets"] >= f["total"] * 0.9
            assert 0.9 * 500 * 2 <= f["total"] <= 1.1 * 500 * 2  # 500 pps for 2 s
            raw = (tmp_path / "out" / f["raw"]).read_text()  # its own server's report
            assert f["relayed_address"].split(":")[0] in raw and "--- tunnel ---" in raw
        m = s["metrics"]
        assert m["aggregate_bps"] == pytest.approx(sum(f["throughput_bps"] for f in flows))
        assert m["throughput_bps"] == pytest.approx(m["aggregate_bps"])
        assert m["total"] == sum(f["total"] for f in flows)
        assert 0.95 < m["fairness_jain"] <= 1.0  # two flows at the same packet rate
        assert s["details"]["fan"]["kind"] == kind and s["details"]["fan"]["count"] == 2
        assert "cpu_client_pct" not in s["details"].get("unavailable", {})  # not iperf2's
    assert len({f["raw"] for s in samples for f in s["details"]["flows"]}) == 4
    assert not leftovers(big_lab, before, tmp_path / "out")


@pytest.mark.parametrize("kind", ["fanin", "fanout"])
def test_turn_fan_through_an_existing_turn_server(
    big_lab: LabHandle, tmp_path: Path, kind: str
) -> None:
    """The same fans through a coturn netrun did not start (turn_server:, on delta): each
    flow its own tunnel and allocation on it, the credentials from the inventory never in
    what the run printed or saved, and the existing relay left running."""
    servers = ["charlie"] if kind == "fanin" else ["alpha", "bravo"]
    with existing_coturn(big_lab, "delta", servers, tmp_path / "ext", 3493) as relay:
        uri, user, password = relay
        inventory = yaml.safe_load(Path(big_lab.inventory).read_text())
        for name in ("alpha", "bravo", "charlie"):
            inventory["all"]["hosts"][name].update(turn_user=user, turn_password=password)
        inv = write_yaml(tmp_path / "inv.yaml", inventory)
        test = {"name": "xfan", "mode": "turn", "tool": "iperf2", "relay": "delta",
                "hosts": "alpha,bravo,charlie", "pairs": {kind: "charlie"},
                "turn_server": uri, "turn_transport": "tcp",
                "bitrate": "500pps", "duration": 2}  # fmt: skip
        path = write_yaml(tmp_path / "xfan.yaml", {"name": "xfan", "tests": [test]})
        before = lab_settings(big_lab)
        proc = run_netrun([path, "-i", inv, "-o", "out", "--no-history"], cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert (tmp_path / "ext" / "pid").exists()  # netrun left the existing relay alone
    (s,) = load_results(tmp_path / "out")["tests"]
    assert s["status"] == "ok", s["error"]
    assert s["details"]["relay"]["kind"] == "external"
    flows = s["details"]["flows"]
    ends = [("alpha", "charlie"), ("bravo", "charlie")]
    assert [(f["client"], f["server"]) for f in flows] == (
        ends if kind == "fanin" else [(b, a) for a, b in ends]
    )
    assert len({f["relayed_address"] for f in flows}) == 2, flows  # an allocation each
    assert all(f["peer_seen"] == big_lab.host("delta").data_ip for f in flows), flows
    assert s["metrics"]["aggregate_bps"] > 0
    assert password not in proc.stdout + proc.stderr
    for saved in (tmp_path / "out").rglob("*"):
        assert not saved.is_file() or password.encode() not in saved.read_bytes(), saved
    assert not leftovers(big_lab, before, tmp_path / "out")


def test_turncat_fanout_each_flow_its_own_turncat(big_lab: LabHandle, tmp_path: Path) -> None:
    """charlie's netrun_turncat (a stand-in with turncat's command line) carries a fan-out to
    alpha and bravo through netrun's coturn on delta: one turncat per flow, each bound to its
    own port, both flows relayed, and nothing left behind."""
    inventory = yaml.safe_load(Path(big_lab.inventory).read_text())
    shim = write_turncat(tmp_path / "turncat")
    inventory["all"]["hosts"]["charlie"]["netrun_turncat"] = str(shim)
    inv = write_yaml(tmp_path / "inv.yaml", inventory)
    test = {"name": "cfan", "mode": "turn", "tool": "iperf2", "relay": "delta",
            "hosts": "alpha,bravo,charlie", "pairs": {"fanout": "charlie"},
            "turn_transport": "udp", "bitrate": "500pps", "duration": 3}  # fmt: skip
    path = write_yaml(tmp_path / "cfan.yaml", {"name": "cfan", "tests": [test]})
    before = lab_settings(big_lab)
    proc = run_netrun([path, "-i", inv, "-o", "out", "--no-history"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (s,) = load_results(tmp_path / "out")["tests"]
    assert s["status"] == "ok", s["error"]
    assert s["details"]["tunnel"]["kind"] == "turncat"
    flows = s["details"]["flows"]
    ends = [(f["client"], f["server"]) for f in flows]
    assert ends == [("charlie", "alpha"), ("charlie", "bravo")], ends
    assert all(f["peer_seen"] == big_lab.host("delta").data_ip for f in flows), flows
    assert all(f["throughput_bps"] > 0 for f in flows), flows
    assert not leftovers(big_lab, before, tmp_path / "out")


def test_baremetal_iperf2_fanin_each_flow_its_own_server_port(
    big_lab: LabHandle, tmp_path: Path
) -> None:
    """The same sum without a relay: alpha and bravo's iperf2 into charlie at once, each to
    its own server port on charlie, each flow's server seeing its own client."""
    test = {"name": "b2", "mode": "baremetal", "tool": "iperf2", "hosts": "alpha,bravo,charlie",
            "pairs": {"fanin": "charlie"}, "bitrate": "1000pps", "duration": 2}  # fmt: skip
    path = write_yaml(tmp_path / "b2.yaml", {"name": "b2", "tests": [test]})
    before = lab_settings(big_lab)
    proc = run_netrun(
        [path, "-i", big_lab.inventory, "-o", "out", "--no-history"], cwd=tmp_path, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    (s,) = load_results(tmp_path / "out")["tests"]
    assert s["status"] == "ok", s["error"]
    flows = s["details"]["flows"]
    for f, client in zip(flows, ("alpha", "bravo"), strict=True):
        assert f["peer_seen"] == big_lab.host(client).data_ip, f
        raw = (tmp_path / "out" / f["raw"]).read_text()
        assert f"UDP port {5001 + ('alpha', 'bravo').index(client)}" in raw
    assert s["metrics"]["aggregate_bps"] == pytest.approx(sum(f["throughput_bps"] for f in flows))
    assert 0.95 < s["metrics"]["fairness_jain"] <= 1.0
    assert "alpha,bravo→charlie" in proc.stdout
    assert not leftovers(big_lab, before, tmp_path / "out")


def turn_processes(lab: LabHandle) -> dict[str, int]:
    """How many turnservers, iperf2s and TURN tunnels run in the lab's namespaces."""
    inodes = {netns_inode(ns) for ns in lab.namespaces} - {None}
    found = {"turnserver": 0, "iperf": 0, "netrun-turn-tunnel.py": 0}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or pid_netns_inode(int(proc.name)) not in inodes:
            continue
        words = {Path(a).name for a in (cmdline(int(proc.name)) or [])[:3]}
        for name in words & set(found):
            found[name] += 1
    return found


IPERF2_MIDWAY = (
    "#!/bin/sh\n"
    'case " $* " in *" -c "*) iperf "$@" & p=$!; sleep 3; kill "$p"; wait "$p"; '
    'echo "read failed: Connection refused" >&2; exit 1;; esac\n'
    'exec iperf "$@"\n'
)


@pytest.mark.parametrize("mode", ["baremetal", "turn"])
def test_an_iperf2_flow_failing_midway_stops_the_other(
    big_lab: LabHandle, tmp_path: Path, mode: str
) -> None:
    """bravo's iperf2 client fails 3 s into a 20 s fan-in into charlie (on bare metal, and
    through the relay): alpha's client is stopped by its pid file (its stop_flow), so the
    run ends well before the duration, with bravo's flow's one line, and nothing is left."""
    broken = tmp_path / "iperf2-midway"
    broken.write_text(IPERF2_MIDWAY)
    broken.chmod(0o755)
    inventory = yaml.safe_load(Path(big_lab.inventory).read_text())
    inventory["all"]["hosts"]["bravo"]["netrun_iperf2"] = str(broken)
    inv = write_yaml(tmp_path / "inv.yaml", inventory)
    test = {"name": "m2", "mode": mode, "tool": "iperf2", "hosts": "alpha,bravo,charlie",
            "pairs": {"fanin": "charlie"}, "bitrate": "500pps", "duration": 20}  # fmt: skip
    if mode == "turn":
        test["relay"] = "delta"
    path = write_yaml(tmp_path / "m2.yaml", {"name": "m2", "tests": [test]})
    before = lab_settings(big_lab)
    started = time.monotonic()
    proc = run_netrun([path, "-i", inv, "-o", "out", "--no-history"], cwd=tmp_path, timeout=120)
    took = time.monotonic() - started
    assert proc.returncode != 0, proc.stdout
    assert "Traceback" not in proc.stderr
    (s,) = load_results(tmp_path / "out")["tests"]
    assert s["error"].startswith("flow bravo->charlie failed on "), s["error"]
    assert "flow alpha->charlie stopped: flow bravo->charlie failed" in proc.stderr, proc.stderr
    assert took < 19, f"the run took {took:.1f} s: alpha's 20 s flow was not stopped: {proc.stderr}"
    assert not leftovers(big_lab, before, tmp_path / "out")


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGKILL, -9)])
def test_stopped_during_a_turn_fanin_leaves_no_relay_tunnel_or_iperf2(
    big_lab: LabHandle, tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    """Two flows through one relay, stopped while both tunnels carry traffic: the run (after
    SIGKILL, `netrun cleanup`) stops the one coturn, both tunnels and every iperf2."""
    test = {"name": "tfan", "mode": "turn", "tool": "iperf2", "relay": "delta",
            "hosts": "alpha,bravo,charlie", "pairs": {"fanin": "charlie"},
            "bitrate": "500pps", "duration": 8}  # fmt: skip
    path = write_yaml(tmp_path / "tfan.yaml", {"name": "tfan", "tests": [test]})
    before = lab_settings(big_lab)
    out = tmp_path / "out"
    seen: list[dict[str, int]] = []

    def both_relayed() -> bool:
        now = turn_processes(big_lab)
        seen.append(now)
        return now["netrun-turn-tunnel.py"] >= 2 and now["turnserver"] >= 1

    args = [path, "-i", big_lab.inventory, "-o", "out", "--no-history", "-q"]
    run = stopped_run(big_lab, args, cwd=tmp_path, outdir=out, ready=both_relayed, sig=sig,
                      what="the two tunnels never ran at once")  # fmt: skip
    assert max(n["turnserver"] for n in seen) == 1  # one relay for both flows
    if run is not None:
        doc = check_fault(big_lab, run, fault="SIGINT during a turn fan-in", before=before,
                          max_seconds=20, statuses={}, host=None, exit_code=code)  # fmt: skip
        assert doc["status"] == "interrupted"
    assert wait_for(lambda: not any(turn_processes(big_lab).values()), 10), turn_processes(big_lab)
    assert not leftovers(big_lab, before, out)


def test_a_container_flow_failing_midway_stops_the_others(
    docker_lab: LabHandle, tmp_path: Path
) -> None:
    """A docker fan-in of two into charlie for 20 s: bravo's server container is killed
    once both clients send, so bravo's flow fails; alpha's client (its ``docker exec``)
    is stopped in its own container at once, the run ends well before the duration, and
    no container or iperf3 is left."""
    test = {"name": "dfan", "mode": "docker", "hosts": "all", "pairs": {"fanin": "charlie"}}
    defaults = {"duration": 20, "image": "netrun-lab/iperf3:latest", "pull": "never"}
    path = write_yaml(tmp_path / "d.yaml", {"name": "d", "defaults": defaults, "tests": [test]})
    before = lab_settings(docker_lab)
    args = [path, "-i", docker_lab.inventory, "-o", "out", "--no-history"]

    def container(host: str, flow: str, role: str) -> str | None:
        out = docker_lab.docker(
            host, "ps", "--format", "{{.Names}}",
            "--filter", f"label=netrun.test=dfan[2->charlie]:{flow}",
            "--filter", f"label=netrun.role={role}",
        )  # fmt: skip
        return out.split()[0] if out.split() else None

    def sending(host: str, flow: str) -> bool:  # its client exec'd beside PID 1
        name = container(host, flow, "client")
        return bool(name) and len(docker_lab.docker(host, "top", name, "-o", "pid").split()) > 2

    with netrun_process(args, cwd=tmp_path) as proc:
        both = lambda: sending("alpha", "alpha->charlie") and sending("bravo", "bravo->charlie")  # noqa: E731
        assert wait_for(both, timeout=90, interval=0.2), "the two clients never sent at once"
        time.sleep(2)
        server = container("charlie", "bravo->charlie", "server")
        assert server is not None
        docker_lab.docker("charlie", "kill", server)
        killed = time.monotonic()
        _out, stderr = proc.communicate(timeout=120)
        after = time.monotonic() - killed
    assert proc.returncode == 1, stderr
    assert after < 12, f"{after:.1f}s after the kill: alpha's flow ran on\n{stderr}"
    (sample,) = load_results(tmp_path / "out")["tests"]
    assert sample["error"].startswith("flow bravo->charlie failed on "), sample["error"]
    assert "flow alpha->charlie stopped: flow bravo->charlie failed" in stderr, stderr
    assert "Traceback" not in stderr
    assert not leftovers(docker_lab, before, tmp_path / "out")
