"""The verdict engine (issue 41): one noise rule with floors, tolerance forms, causes, paging.

Samples are shaped as netrun saves them; the UDP loss attribution is the library's own
(netrun.tools.iperf3.loss.attribute) from the receiver's counters.
"""

from __future__ import annotations

from typing import Any

import pytest

from netrun.core.metrics import TOLERANCE_FORMS, Limit, parse_limit
from netrun.core.options import GENERAL_OPTIONS, problem
from netrun.history.judge import DEFAULT_PAGE_ON
from netrun.history.regress import compare
from netrun.report import why
from netrun.tools.iperf3.loss import attribute


def doc(*samples: dict[str, Any]) -> dict[str, Any]:
    return {
        "schema": 2,
        "run_id": "r",
        "scenario": "s",
        "status": "finished",
        "tests": list(samples),
    }


def ping(mdev: float, rtt: float = 0.045, p50: float | None = None, **opts: Any) -> dict[str, Any]:
    return {
        "name": "ping",
        "tool": "ping",
        "status": "ok",
        "options": dict(opts),
        "metrics": {
            "rtt_avg_ms": rtt,
            "rtt_min_ms": rtt - 0.004,
            "rtt_mdev_ms": mdev,
            "rtt_p50_ms": p50 if p50 is not None else rtt,
            "lost_percent": 0.0,
        },
    }


@pytest.mark.parametrize(
    ("value", "limit"),
    [
        ("20%", Limit(relative=0.2)),
        (0.5, Limit(absolute=0.5)),
        (["20%", 0.05], Limit(relative=0.2, absolute=0.05)),
        ([0.05, "20%"], Limit(relative=0.2, absolute=0.05)),
        (None, None),
    ],
)
def test_a_tolerance_takes_four_forms(value: object, limit: Limit | None) -> None:
    assert parse_limit(value) == limit


@pytest.mark.parametrize("bad", ["abc", [], ["5%", "6%"], [1, 2], {"a": 1}, True, -1])
def test_a_bad_tolerance_names_the_key_and_the_forms(bad: object) -> None:
    option = next(o for o in GENERAL_OPTIONS if o.name == "tolerances")
    text = problem(option, "tolerances", {"rtt_mdev_ms": bad})
    assert text is not None and text.startswith("tolerances.rtt_mdev_ms: use a percentage")
    assert TOLERANCE_FORMS in text and text.count("got ") == 1
    assert problem(option, "tolerances", {"rtt_mdev_ms": None}) is None


def test_a_null_tolerance_is_not_judged() -> None:
    cur, base = ping(0.5, tolerances={"rtt_mdev_ms": None}), ping(0.01)
    assert compare(doc(cur), doc(base))[0].verdict == "ok"
    assert compare(doc(ping(0.5)), doc(base))[0].verdict == "regressed"


def test_a_few_microseconds_is_never_a_regression() -> None:
    """issue 41: `rtt_mdev_ms rose by 70.0% (0.010 -> 0.017), limit 50%` was exit 3."""
    (v,) = compare(doc(ping(0.017, rtt=0.056)), doc(ping(0.010, rtt=0.041)))
    assert v.verdict == "ok", v.detail
    # the floor is part of the limit people read
    (v,) = compare(doc(ping(0.5)), doc(ping(0.01)))
    assert (v.verdict, v.metric, v.limit) == ("regressed", "rtt_mdev_ms", "50% and 0.05 ms")
    assert (v.before, v.after) == (0.01, 0.5)
    # a tolerance naming an amount of its own replaces the floor
    own = ping(0.04, tolerances={"rtt_mdev_ms": ["50%", 0.005]})
    (v,) = compare(doc(own), doc(ping(0.01)))
    assert (v.verdict, v.metric, v.limit) == ("regressed", "rtt_mdev_ms", "50% and 0.005 ms")


def test_rtt_p50_is_judged_once_through_the_headline() -> None:
    (v,) = compare(doc(ping(0.01, rtt=0.1, p50=0.4)), doc(ping(0.01, rtt=0.1, p50=0.1)))
    assert v.verdict == "ok" and "rtt_p50_ms" not in v.detail
    cur = ping(0.01, rtt=0.1, p50=0.4, tolerances={"rtt_p50_ms": "20%"})
    assert compare(doc(cur), doc(ping(0.01, rtt=0.1, p50=0.1)))[0].verdict == "regressed"


def udp(lost_pct: float, rcvbuf: int, lost: int, **metrics: float) -> dict[str, Any]:
    """A 300M UDP sample whose ``lost`` datagrams the receiver counted ``rcvbuf`` of."""
    counters = {"udp_rcvbuf_errors": rcvbuf, "udp_in_errors": rcvbuf}
    loss = attribute(offered_bps=300e6, sender_bps=300e6, lost=lost, sender={}, receiver=counters)
    return {
        "name": "udp",
        "tool": "iperf3",
        "status": "ok",
        "protocol": "udp",
        "options": {"protocol": "udp", "bitrate": "300M"},
        "throughput_bps": 300e6 * (1 - lost_pct / 100),
        "sender_bps": 300e6,
        "lost_percent": lost_pct,
        "metrics": {"throughput_bps": 300e6 * (1 - lost_pct / 100), "lost_percent": lost_pct},
        "details": {"loss": loss},
        **metrics,
    }


def test_loss_that_was_all_receive_buffer_drops_names_the_receiver_and_does_not_page() -> None:
    (v,) = compare(doc(udp(2.0, 16000, 16000)), doc(udp(0.2, 0, 0)))
    assert (v.verdict, v.metric, v.cause, v.pages) == (
        "regressed",
        "lost_percent",
        "receiver",
        False,
    )
    assert "none lost on the way" in v.cause_detail
    (v,) = compare(doc(udp(3.0, 0, 24000)), doc(udp(0.2, 0, 0)))  # lost on the path
    assert (v.verdict, v.cause, v.pages) == ("regressed", "network", True)
    paged = compare(doc(udp(3.0, 4000, 4000)), doc(udp(0.2, 0, 0)), page_on=("receiver",))
    assert paged[0].pages and "receiver" not in DEFAULT_PAGE_ON


def test_a_verdict_record_round_trips() -> None:
    (v,) = compare(doc(ping(0.5)), doc(ping(0.01)))
    record = why.record(v)
    assert set(record) >= {"metric", "before", "after", "limit", "cause", "noise", "pages"}
    (back,) = why.stored({"baseline": {"verdicts": [record]}}) or []
    assert why.record(back) == record
    (old,) = why.stored({"baseline": {"verdicts": [{"test": "t", "verdict": "ok"}]}}) or []
    assert old.cause is None and old.metric is None and not old.pages
    (older,) = why.stored({"baseline": {"verdicts": [{"test": "t", "verdict": "regressed"}]}})
    assert older.pages, "a regression saved before causes were judged paged, as it did then"


def test_a_udp_drop_the_sender_never_sent_names_the_sender_and_does_not_page() -> None:
    """A loaded machine's UDP sender (open loop) sent 111 -> 93 Mbit/s of 300M: the path
    delivered what it was given."""
    cur, base = udp(0.0, 0, 0), udp(0.0, 0, 0)
    for sample, rate in ((cur, 93e6), (base, 111e6)):
        sample["sender_bps"] = sample["throughput_bps"] = rate
        sample["metrics"]["throughput_bps"] = rate
    (v,) = compare(doc(cur), doc(base))
    assert (v.verdict, v.cause, v.pages) == ("regressed", "sender", False)
    assert "18.0 of the 18.0 Mbit/s drop never left it" in v.cause_detail
    assert DEFAULT_PAGE_ON == ("network", "host")
