"""Per-stream receiver rates and their fairness index, on the -P 4 runs captured on the lab
with each iperf3 release (tests/fixtures/iperf3/<version>/tcp_4streams.json)."""

from __future__ import annotations

import pytest

from netrun.core.numeric import jain
from netrun.tools.iperf3.parse import parse
from netrun.tools.iperf3.tool import unavailable, values
from tests.conftest import IPERF3_FIXTURES

VERSIONS = ("3.5", "3.7", "3.9", "3.12", "3.16", "3.19.1", "3.21")


@pytest.mark.parametrize("version", VERSIONS)
def test_four_streams_sum_to_the_receiver_figure(version: str) -> None:
    r = parse((IPERF3_FIXTURES / version / "tcp_4streams.json").read_text())
    assert len(r.stream_bps) == 4
    assert r.receiver_bps is not None
    assert sum(r.stream_bps) == pytest.approx(r.receiver_bps, rel=0.01)
    fairness = values(r)["fairness_jain"]
    assert fairness is not None and 0.25 <= fairness <= 1.0


def test_one_stream_and_udp_have_no_index_and_say_why() -> None:
    tcp = parse((IPERF3_FIXTURES / "3.12" / "tcp.json").read_text())
    assert tcp.stream_bps == () and values(tcp)["fairness_jain"] is None
    assert unavailable(tcp)["fairness_jain"] == "one stream: nothing to share"
    udp = parse((IPERF3_FIXTURES / "3.12" / "udp_overload.json").read_text())
    assert udp.stream_bps == ()


def test_jain() -> None:
    assert jain([5.0, 5.0, 5.0, 5.0]) == pytest.approx(1.0)
    assert jain([20.0, 0.0, 0.0, 0.0]) == pytest.approx(0.25)
    assert jain([]) is None and jain([0.0, 0.0]) is None
