"""iperf2: the parser over real 2.1.8 output (tests/fixtures/iperf2/README.md)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from netrun.tools.iperf2 import parse as iperf2
from tests.conftest import IPERF2_FIXTURES


def load(name: str) -> str:
    return (IPERF2_FIXTURES / f"{name}.txt").read_text()


def test_metrics_are_declared_once_with_unit_and_direction() -> None:
    assert len(set(iperf2.METRIC_NAMES)) == len(iperf2.METRICS) == 11
    assert all(m.better in ("higher", "lower") and m.unit and m.description for m in iperf2.METRICS)


def test_normal_server_report() -> None:
    r = iperf2.parse(load("2.1.8-normal.server"), expect_seconds=3)
    assert r.metrics["lost"] == 0 and r.metrics["total"] == 3003
    assert r.metrics["throughput_bps"] == 800_000
    assert r.metrics["latency_avg_ms"] == 0.003 and r.metrics["latency_max_ms"] == 0.171
    assert r.metrics["latency_stdev_ms"] == 0.009 and r.metrics["pps"] == 1001
    assert r.metrics["jitter_ms"] == 0.002 and r.metrics["out_of_order"] == 0
    assert set(r.metrics) == set(iperf2.METRIC_NAMES)
    assert [(i.start, i.end) for i in r.intervals] == [(0, 1), (1, 2), (2, 3)]
    assert r.peer_seen == "127.0.0.1" and r.peers == ("127.0.0.1 port 49769",)
    assert r.intervals[0].tail == "1001/0(0) pkts 30072"


def test_client_reads_the_server_report_and_what_it_sent() -> None:
    r = iperf2.parse(load("2.1.8-normal.client"), side="client")
    assert r.source == "client (server report)"
    assert r.sent == 3004 and r.metrics["total"] == 3003 and r.metrics["lost"] == 0


def test_loss_is_computed_from_the_counts() -> None:
    r = iperf2.parse(load("2.1.8-loss.server"), expect_seconds=3)
    assert (r.metrics["lost"], r.metrics["total"]) == (173, 3003)
    assert r.metrics["lost_percent"] == pytest.approx(100 * 173 / 3003)
    assert r.warnings and "first received packet" in r.warnings[0]


def test_nearly_all_lost_prints_1e02_and_a_silent_second() -> None:
    r = iperf2.parse(load("2.1.8-full.server"), expect_seconds=3)
    assert r.metrics["lost_percent"] == pytest.approx(100 * 2996 / 3003)
    assert r.metrics["out_of_order"] == 2
    silent = r.intervals[1]
    assert silent.latency_ms is None and silent.total == 0 and silent.pps == 0


def test_latency_suppressed_everywhere_is_unavailable_not_zero() -> None:
    text = load("2.1.8-full.server").replace(
        "147.797/0.001/524.172/252.428 ms 2 pps", "-/-/-/- ms 2 pps"
    )
    r = iperf2.parse(text)
    assert r.metrics["latency_avg_ms"] is None
    assert "-/-/-/-" in r.unavailable["latency_avg_ms"]


def test_parallel_flows_add_up_and_sum_lines_are_not_reports() -> None:
    r = iperf2.parse(load("2.1.8-parallel.server"), expect_seconds=2)
    assert len(r.flows) == 2 and all(not f.flow.startswith("SUM") for f in r.flows)
    assert (r.metrics["lost"], r.metrics["total"]) == (1, 4006)
    assert r.metrics["pps"] == 2002 and r.metrics["out_of_order"] == 1
    assert r.metrics["latency_max_ms"] == 0.36
    assert r.metrics["latency_stdev_ms"] == pytest.approx(0.0118, abs=1e-4)
    assert r.peer_seen == "127.0.0.1" and len(r.peers) == 2
    c = iperf2.parse(load("2.1.8-parallel.client"), side="client")
    assert c.sent == 4008 and c.metrics["total"] == 4006  # per flow, not again from [SUM-2]


def test_plain_client_without_enhanced_report() -> None:
    r = iperf2.parse(load("2.1.8-noe.client"), side="client")
    assert r.metrics["total"] == 2003 and r.sent == 2004


def test_server_killed_mid_run_is_incomplete_not_a_short_test() -> None:
    with pytest.raises(iperf2.Iperf2Error, match="ends at 1 s of a 3 s test") as err:
        iperf2.parse(load("2.1.8-killed.server"), expect_seconds=3)
    assert err.value.kind == "incomplete"
    with pytest.raises(iperf2.Iperf2Error) as err:
        iperf2.parse(load("2.1.8-killed.client"), side="client")
    assert err.value.kind == "refused"


def test_connection_refused() -> None:
    with pytest.raises(iperf2.Iperf2Error, match="connection refused") as err:
        iperf2.parse(load("2.1.8-refused.client"), side="client")
    assert err.value.kind == "refused"


def test_2_0_13_reference_columns_and_padding() -> None:
    r = iperf2.parse(load("derived-2.0.13-reference.server"))
    assert r.metrics["latency_stdev_ms"] == 4.993 and r.metrics["jitter_ms"] == 1.426
    assert r.metrics["pps"] == 1008 and r.flows[0].tail == "1.40 KByte 7.07"
    assert r.peer_seen == "10.116.1.21"
    tcp = iperf2.parse(load("derived-2.0.13-reference-tcp.server"))
    assert (tcp.metrics["lost"], tcp.metrics["total"]) == (1361, 100003)
    assert tcp.metrics["latency_avg_ms"] == 148.261


def test_2_2_read_timeo_trunc_columns() -> None:
    r = iperf2.parse(load("derived-2.2-read-timeo-trunc.client"), side="client")
    assert r.metrics["pps"] == 6557 and r.flows[0].tail == "6557/0(0) pkts 0/0/0 8409"


@pytest.mark.parametrize(
    "change",
    [
        ("0/3003 (0%)", "0/30x3 (0%)"),
        ("0.003/0.000/0.171/0.009 ms 1001 pps", "0.003/0.000/0.171 ms 1001 pps"),
        ("0/3003 (0%)", "9/3 (0%)"),
        ("0.002 ms 0/3003", "nan ms 0/3003"),
        ("800 Kbits/sec   0.002", "800 Kbits/sec   1e999"),
        ("0/3003 (0%)", "0/" + "9" * 400 + " (0%)"),
    ],
)
def test_an_unreadable_report_line_is_an_error_with_the_raw_text(change: tuple[str, str]) -> None:
    text = load("2.1.8-normal.server")
    final = text.strip().splitlines()[-1]
    broken = text.replace(final, final.replace(*change))
    assert broken != text
    with pytest.raises(iperf2.Iperf2Error, match="cannot parse iperf2 output") as err:
        iperf2.parse(broken)
    assert err.value.kind == "bad-output"


def test_empty_and_reportless_output() -> None:
    with pytest.raises(iperf2.Iperf2Error) as err:
        iperf2.parse("")
    assert err.value.kind == "no-output"
    with pytest.raises(iperf2.Iperf2Error, match="no UDP latency report"):
        iperf2.parse("Server listening on UDP port 5001\n")


def test_every_metric_is_finite_or_null() -> None:
    for path in IPERF2_FIXTURES.glob("*.txt"):
        side = "client" if ".client" in path.name else "server"
        try:
            r = iperf2.parse(path.read_text(), side=side)
        except iperf2.Iperf2Error:
            continue
        for value in r.metrics.values():
            assert value is None or math.isfinite(value)


def test_details_are_json_ready() -> None:
    import json

    r = iperf2.parse(load("2.1.8-full.server"), expect_seconds=3)
    details = json.loads(json.dumps(r.details(), allow_nan=False))
    assert details["peer_seen"] == "127.0.0.1" and len(details["series"]) == 3
    assert details["series"][1]["latency_ms"] is None


def test_a_client_clock_behind_shows_as_latency_the_clock_module_corrects() -> None:
    from netrun.hosts import clock

    r = iperf2.parse(load("2.1.8-skew-minus1s.server"), expect_seconds=2)
    assert r.metrics["latency_avg_ms"] == 1000.004
    corrected = clock.corrected_latency_ms(1000.004, sender_offset_s=-1.0, receiver_offset_s=0.0)
    assert corrected == pytest.approx(0.004)


@pytest.mark.parametrize("name", ["2.1.8-skew-plus100s.server", "2.1.8-tripwarn-plus7200s.server"])
def test_a_clock_ahead_gives_nan_and_negative_figures_which_are_refused(name: str) -> None:
    with pytest.raises(iperf2.Iperf2Error, match="cannot parse iperf2 output") as err:
        iperf2.parse(load(name))
    assert "-nan bits/sec" in str(err.value)
    if "tripwarn" in name:
        assert "ignored --trip-times" in str(err.value)


def test_a_runs_result_keeps_both_sides_and_a_failure_names_its_host() -> None:
    """iperf2_run.result_of, shared by iperf2 on hosts and in containers."""
    from types import SimpleNamespace

    from netrun.hosts.command import CommandResult
    from netrun.tools.iperf2 import run as iperf2_run

    mode: Any = SimpleNamespace(
        client=SimpleNamespace(name="bravo"), server=SimpleNamespace(name="alpha")
    )
    sent = CommandResult("bravo", "iperf", 0, load("2.1.8-normal.client"), "", 3.0)
    result, raw = iperf2_run.result_of(mode, load("2.1.8-normal.server"), sent, 3)
    assert result.metrics["total"] == 3003
    assert raw.startswith(load("2.1.8-normal.server")) and "--- client on bravo ---" in raw
    refused = CommandResult("bravo", "iperf", 1, load("2.1.8-refused.client"), "", 0.1)
    with pytest.raises(iperf2.Iperf2Error, match=r"^bravo: ") as err:
        iperf2_run.result_of(mode, "", refused, 3)
    assert err.value.kind == "refused" and "--- client on bravo ---" in err.value.output
