"""ping's parser on real iputils output: summaries, every reply's RTT, failures.

Fixtures are iputils 20221126 output captured between two namespaces by
tests/fixtures/capture_ping.sh (NAME.stdout, NAME.stderr, NAME.rc).
"""

from __future__ import annotations

import pytest

from netrun.errors import ToolError
from netrun.tools.ping import parse as ping
from tests.conftest import PING_FIXTURES


def captured(name: str) -> tuple[str, int, str]:
    read = (PING_FIXTURES / name).with_suffix
    return read(".stdout").read_text(), int(read(".rc").read_text()), read(".stderr").read_text()


def parse(name: str) -> ping.PingResult:
    stdout, rc, stderr = captured(name)
    return ping.parse(stdout, rc, stderr)


def test_replies() -> None:
    r = parse("ok")
    assert (r.transmitted, r.received, r.errors, r.lost_percent) == (5, 5, 0, 0.0)
    assert (r.rtt_min_ms, r.rtt_avg_ms, r.rtt_max_ms, r.rtt_mdev_ms) == (0.033, 0.132, 0.378, 0.13)


def test_one_reply_and_a_large_payload() -> None:
    assert parse("ok_one").rtt_mdev_ms == 0.0
    assert parse("ok_large").received == 3


def test_partial_loss_keeps_the_rtt_of_the_replies() -> None:
    r = parse("loss")
    assert (r.transmitted, r.received) == (9, 6)
    assert r.lost_percent == pytest.approx(33.3333)
    assert r.rtt_avg_ms == 0.068
    assert r.replies == ((2, 0.118), (3, 0.038), (5, 0.052), (6, 0.038), (8, 0.12), (9, 0.047))


def test_every_reply_is_kept_and_matches_the_summary() -> None:
    for name in ("ok", "ok_one", "ok_large", "root_zero_interval", "nonroot_ok"):
        r = parse(name)
        assert len(r.replies) == r.received, name
        assert min(r.rtts_ms) == pytest.approx(r.rtt_min_ms, abs=0.001), name
        assert max(r.rtts_ms) == pytest.approx(r.rtt_max_ms, abs=0.001), name


def test_duplicates_and_slow_replies() -> None:
    text = (
        "64 bytes from 10.0.0.2: icmp_seq=1 ttl=64 time=0.045 ms\n"
        "64 bytes from 10.0.0.2: icmp_seq=1 ttl=64 time=0.051 ms (DUP!)\n"
        "64 bytes from 10.0.0.2: icmp_seq=2 ttl=64 time=123 ms\n"
    )
    assert ping.replies(text) == ((1, 0.045), (2, 123.0))


def test_root_flood_interval_adds_ipg_ewma_to_the_rtt_line() -> None:
    assert parse("root_zero_interval").rtt_max_ms == 0.020


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("loss_all", "no reply: 3 sent, 100% packet loss"),
        ("unreachable", "no reply: 3 sent, 100% packet loss; destination unreachable"),
        ("no_route", "ping failed: connect: Network is unreachable"),
        ("bad_host", "ping failed: no-such-host.invalid: Temporary failure in name resolution"),
        ("nonroot_flood", "ping failed: cannot flood; minimal interval allowed for user is 2ms"),
        ("count_zero", "ping failed: invalid argument: '0': out of range"),
        ("missing", "ping not found; install it (apt-get install iputils-ping)"),
    ],
)
def test_failures_are_one_tool_error_with_the_output(name: str, text: str) -> None:
    with pytest.raises(ToolError) as err:
        parse(name)
    assert str(err.value).startswith(text)
    assert err.value.output.strip()


def test_garbage_and_huge_numbers_are_errors_not_crashes() -> None:
    with pytest.raises(ToolError):
        ping.parse("x" * 10_000, 0)
    huge = "9" * 400
    text = (
        f"1 packets transmitted, 1 received, 0% packet loss\nrtt min/avg/max/mdev = {huge}/1/1/1 ms"
    )
    with pytest.raises(ToolError):
        ping.parse(text, 0)
