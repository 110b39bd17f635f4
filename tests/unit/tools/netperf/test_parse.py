"""netperf's parser on real netperf 2.7.1 output captured between two lab namespaces by
tests/fixtures/capture_netperf.sh (NAME.stdout, NAME.stderr, NAME.rc)."""

from __future__ import annotations

import pytest

from netrun.tools.netperf.parse import MARK, NetperfError, parse, split
from tests.conftest import NETPERF_FIXTURES


def captured(name: str) -> tuple[str, int]:
    text = (NETPERF_FIXTURES / f"{name}.stdout").read_text()
    text += (NETPERF_FIXTURES / f"{name}.stderr").read_text()
    return text, int((NETPERF_FIXTURES / f"{name}.rc").read_text())


def test_tcp_rr_reads_its_values_banner_and_histogram() -> None:
    inst = parse(*captured("tcp_rr"))
    assert inst.values["throughput"] == pytest.approx(16315.63)
    assert inst.values["throughput_units"] == "Trans/s"
    assert (inst.values["p50_us"], inst.values["p90_us"], inst.values["p99_us"]) == (17, 28, 930)
    assert inst.values["mean_us"] == pytest.approx(61.22)
    assert inst.values["max_us"] == 17697 and inst.values["protocol"] == "TCP"
    assert inst.has_histogram and "TCP REQUEST/RESPONSE TEST" in inst.banner
    assert inst.histogram is not None and inst.histogram.count == 32638  # HIST_TOTAL
    assert inst.throughput_bps is None  # Trans/s is not a bit rate


@pytest.mark.parametrize(
    ("name", "protocol", "total"),
    [("udp_rr", "UDP", 29308), ("tcp_crr", "TCP", 7071), ("tcp_rr_i0", "TCP", 37956)],
)
def test_other_request_response_tests(name: str, protocol: str, total: int) -> None:
    inst = parse(*captured(name))
    assert inst.values["protocol"] == protocol and inst.values["throughput_units"] == "Trans/s"
    assert inst.histogram is not None and inst.histogram.count == total


def test_tcp_stream_reports_bits_per_second() -> None:
    inst = parse(*captured("tcp_stream"))
    assert inst.values["throughput_units"] == "10^6bits/s"
    assert inst.throughput_bps == pytest.approx(2984.03e6)


def test_a_build_without_histograms_says_so() -> None:
    inst = parse(*captured("tcp_rr_nohist"))
    assert inst.histogram is None and not inst.has_histogram
    assert inst.values["p50_us"] == 17  # netperf's own percentile is still printed


@pytest.mark.parametrize(
    ("name", "kind", "words"),
    [
        ("unknown_test", "unknown-test", "TCP_FOO"),
        ("refused", "refused", "no netserver answered"),
    ],
)
def test_error_shapes(name: str, kind: str, words: str) -> None:
    with pytest.raises(NetperfError) as err:
        parse(*captured(name))
    assert err.value.kind == kind and words in err.value.message
    assert "\n" not in err.value.message


def test_missing_binary_and_timeout_and_garbage() -> None:
    with pytest.raises(NetperfError) as err:
        parse("sh: 1: netperf: not found\n", 127)
    assert err.value.kind == "missing"
    with pytest.raises(NetperfError) as err:
        parse("", 124)
    assert err.value.kind == "timeout"
    text, _ = captured("tcp_rr")
    broken = text.replace("16315.63,Trans/s,17,", "16315.63,Trans/s,")
    with pytest.raises(NetperfError) as err:
        parse(broken, 0)
    assert err.value.kind == "bad-output"


def test_split_reads_each_process_part() -> None:
    a, _ = captured("tcp_rr_i0")
    b, _ = captured("tcp_rr_i1")
    text = f"{MARK}0 rc 0\n{a}{MARK}1 rc 124\n{b}"
    parts = split(text)
    assert [rc for rc, _ in parts] == [0, 124]
    assert parse(parts[0][1]).histogram is not None
