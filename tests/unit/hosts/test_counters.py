"""netrun.hosts.counters against readings its script printed on the lab's hosts
(tests/fixtures/counters: before and after a UDP test at 400M through a 200 Mbit/s
shaper, one with 3% of datagrams dropped by iptables at the receiver, and a TCP test),
and the script itself run here by a real sh."""

from __future__ import annotations

import subprocess

import pytest

from netrun.hosts import counters
from tests.conftest import COUNTERS_FIXTURES


def reading(name: str) -> counters.Reading:
    found = counters.parse((COUNTERS_FIXTURES / f"{name}.txt").read_text())
    assert found is not None
    return found


def test_a_reading_has_every_counter_and_names_its_nic() -> None:
    r = reading("udp_shaped_server_after")
    assert r.iface == "data0"
    assert set(r.values) == set(counters.KEYS)
    assert r.values["udp_rcvbuf_errors"] == 2181
    assert r.values["udp_in_errors"] == 2181
    assert r.values["nic_rx_bytes"] == 312701941 and r.values["nic_rx_packets"] == 163384
    assert r.values["qdisc_dropped"] == 0


def test_the_receivers_buffer_errors_match_iperf3s_lost_datagrams() -> None:
    """The shaped 400M test lost 1563 datagrams (iperf3's end.sum): the receiver's host
    counted exactly those as receive-buffer errors; nothing was dropped on the way."""
    server = counters.delta(reading("udp_shaped_server_before"), reading("udp_shaped_server_after"))
    client = counters.delta(reading("udp_shaped_client_before"), reading("udp_shaped_client_after"))
    assert server["udp_rcvbuf_errors"] == 1563
    assert client["qdisc_dropped"] == 0 and client["nic_tx_dropped"] == 0
    # every datagram the sender sent reached the receiver's NIC (plus the control packets)
    assert client["udp_out_datagrams"] is not None and server["nic_rx_packets"] is not None
    assert 0 <= server["nic_rx_packets"] - client["udp_out_datagrams"] < 50


def test_iptables_drops_are_counted_nowhere_on_the_hosts() -> None:
    server = counters.delta(
        reading("udp_dropped_server_before"), reading("udp_dropped_server_after")
    )
    assert server["udp_rcvbuf_errors"] == 0 and server["udp_in_errors"] == 0
    assert server["nic_rx_dropped"] == 0


def test_tcp_retransmits_are_read() -> None:
    server = counters.delta(reading("tcp_server_before"), reading("tcp_server_after"))
    assert server["tcp_retrans_segs"] is not None and server["tcp_retrans_segs"] >= 0


def test_a_missing_or_reset_counter_is_none() -> None:
    before = counters.Reading({"udp_rcvbuf_errors": 5, "nic_rx_dropped": 9})
    after = counters.Reading({"udp_rcvbuf_errors": 7, "nic_rx_dropped": 2})
    moved = counters.delta(before, after)
    assert moved["udp_rcvbuf_errors"] == 2
    assert moved["nic_rx_dropped"] is None  # went back: a replaced device
    assert moved["qdisc_dropped"] is None
    entry = counters.record(before, None, iface="data0", netns="host")
    assert entry["unavailable"] == "no reading after" and entry["udp_rcvbuf_errors"] is None


@pytest.mark.parametrize("text", ["", "no reading", counters.MARK + "\n@snmp\n"])
def test_no_whole_reading_is_none(text: str) -> None:
    assert counters.parse(text) is None


def test_the_script_runs_here_and_reads_loopback() -> None:
    """The sh as a host runs it: lo is always there; a missing NIC or tc is no failure."""
    out = subprocess.run(
        ["sh", "-c", counters.script("lo")], capture_output=True, text=True, check=True
    ).stdout
    found = counters.parse(out)
    assert found is not None and found.iface == "lo"
    assert "udp_in_datagrams" in found.values and "nic_rx_bytes" in found.values
    gone = subprocess.run(
        ["sh", "-c", counters.script("no-such-nic0")], capture_output=True, text=True
    )
    assert gone.returncode == 0
    missing = counters.parse(gone.stdout)
    assert missing is not None and "nic_rx_bytes" not in missing.values


def test_the_nic_is_found_by_route_and_names_are_quoted() -> None:
    out = subprocess.run(
        ["sh", "-c", counters.script(toward="127.0.0.1")], capture_output=True, text=True
    ).stdout
    found = counters.parse(out)
    assert found is not None and found.iface == "lo"
    assert "'eth0; rm -rf x'" in counters.script("eth0; rm -rf x")


def test_a_reading_carries_the_hosts_per_core_cpu_and_a_record_its_use() -> None:
    """The script run twice here by a real sh: its @cpu section is netrun.hosts.cpustat's,
    and the record of two readings has each core's shares, the busiest and the boot id."""
    script = counters.script("lo")
    texts = [subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=10).stdout
             for _ in range(2)]  # fmt: skip
    subprocess.run(["sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"], timeout=30)
    texts.append(subprocess.run(["sh", "-c", script], capture_output=True, text=True).stdout)
    before, after = counters.parse(texts[0]), counters.parse(texts[2])
    assert before is not None and after is not None and before.cpu and after.cpu
    assert before.cpu.boot and before.cpu.boot == after.cpu.boot
    entry = counters.record(before, after, iface="lo", netns="host")
    cpu = entry["cpu"]
    assert cpu["boot"] == after.cpu.boot and cpu["busy_seconds"] > 0
    assert set(cpu["cores"]) == {c for c in after.cpu.cores if c != "cpu"}
    assert 0 < cpu["busiest_pct"] <= 100
    # the fixtures of the lab were read before the @cpu section existed: no cpu entry
    old = counters.record(reading("tcp_client_before"), reading("tcp_client_after"),
                          iface="data0", netns="host")  # fmt: skip
    assert "cpu" not in old


def test_one_awk_reading_parses_as_the_older_many_process_one() -> None:
    """Captured on the lab's server host around a 1 s iperf3 TCP test (alpha, data0):
    the single-awk reading has every section, per-core CPU at the default 100 ticks/s."""
    before = counters.parse((COUNTERS_FIXTURES / "awk_server_before.txt").read_text())
    after = counters.parse((COUNTERS_FIXTURES / "awk_server_after.txt").read_text())
    assert before is not None and after is not None
    assert before.iface == after.iface == "data0"
    assert set(counters.KEYS) <= set(after.values)
    moved = counters.delta(before, after)
    assert moved["nic_rx_bytes"] is not None and moved["nic_rx_bytes"] > 100_000_000
    assert moved["qdisc_dropped"] == 0
    assert after.cpu is not None and after.cpu.hz == 100 and after.cpu.boot
    assert set(after.cpu.softirqs) == {"NET_RX", "NET_TX"}
    record = counters.record(before, after, iface="data0", netns="host")
    assert 1.0 < record["cpu"]["elapsed_seconds"] < 3.0


def test_the_reading_is_one_awk_and_tc() -> None:
    script = counters.script("data0")
    assert script.count("awk ") == 1 and "grep" not in script and "getconf" not in script
    assert "tc -s qdisc" in script
    assert "tc " not in counters.script("eth0", net="/proc/1234/net")


def test_an_end_whose_cpu_interval_is_not_its_tests_has_no_cpu_figures() -> None:
    ends = {
        "client": {"cpu": {"elapsed_seconds": 2.0}},
        "server": {"cpu": {"elapsed_seconds": 9.5}},
    }
    counters.judge_windows(ends)
    assert "cpu" in ends["client"] and "cpu" not in ends["server"]
    assert "9.5s" in ends["server"]["cpu_unavailable"]
    near = {
        "client": {"cpu": {"elapsed_seconds": 2.0}},
        "server": {"cpu": {"elapsed_seconds": 2.3}},
    }
    counters.judge_windows(near)
    assert "cpu" in near["server"]


def test_a_namespace_gone_meanwhile_still_gives_the_hosts_cpu() -> None:
    """mawk stops at a file it cannot open: the reading passes it only those that exist."""
    out = subprocess.run(
        ["sh", "-c", counters.script("eth0", net="/proc/999999999/net")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    reading = counters.parse(out)
    assert reading is not None and reading.cpu is not None and not reading.values


def test_the_processes_a_mode_runs_get_their_cpu_seconds() -> None:
    """This machine's own /proc: a busy child's utime+stime over two readings, and a pid
    that is gone, which is left out rather than failing the reading."""
    busy = subprocess.Popen(["sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"])
    line = counters.script("lo", procs={"busy": str(busy.pid), "gone": "999999999"})
    before = counters.parse(
        subprocess.run(["sh", "-c", line], capture_output=True, text=True).stdout
    )
    busy_ticks = before.procs["busy"][1] if before and "busy" in before.procs else None
    assert before is not None and "gone" not in before.procs and before.cpu is not None
    import time

    time.sleep(0.3)
    after = counters.parse(
        subprocess.run(["sh", "-c", line], capture_output=True, text=True).stdout
    )
    busy.kill()
    busy.wait()
    assert after is not None and busy_ticks is not None
    record = counters.record(before, after, iface="lo", netns="host")
    assert 0 < record["procs"]["busy"] <= 1.0
