"""A tbf's burst and the above-ceiling flag, from a real run on a link shaped to half.

tests/fixtures/results/tbf-half-1s: the 2-host lab (1gbit) with both data links shaped by
``tc qdisc replace ... tbf rate 492198kbit burst 256kb latency 20ms`` (netrun.lab.network's
tbf_args("500mbit"), as tests/integration/test_verdicts_lab.py halves it), then 1 s TCP
tests both ways, 6 repeats each (scenario.yaml beside it). Saved before the burst's slack
existed: tcp-rev repeat 5 read 473.10 Mbit/s against a 470.74 ceiling (+0.5%) and was
flagged above-ceiling. A token bucket lets its burst (262095 B) through at once, so a 1 s
window may carry 2.1 Mbit/s more than the rate: the figure is the link's, not a misreport.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from netrun.core.linerate import burst_slack_mbps, ceiling_of, shaper_of, tc_size_bytes
from netrun.core.spec import TestSpec
from netrun.results import flags
from netrun.run.sample import shapers
from netrun.tools.context import parse_context
from tests.conftest import CONTEXT_FIXTURES, RESULTS_FIXTURES

RUN = RESULTS_FIXTURES / "tbf-half-1s"


def _doc() -> dict[str, Any]:
    return json.loads((RUN / "results.json").read_text())


def _recomputed(doc: dict[str, Any], s: dict[str, Any]) -> dict[str, Any]:
    """The sample with its ceiling as netrun now computes it from the run's own host
    contexts (the sender's qdisc as read on the lab) and options."""
    test = TestSpec(s["name"], s["mode"], s["server"], s["client"], 0, s["options"], frozenset())
    nic = s["nic"]["client"]
    ceiling = ceiling_of(
        s["options"], None, s["line_rate_mbps"], nic["mtu"], None, "tcp",
        shapers(test, doc["hosts"]),
    )  # fmt: skip
    assert ceiling is not None
    out = copy.deepcopy(s)
    out.update(goodput_ceiling_mbps=ceiling.mbps, ceiling_basis=ceiling.basis)
    out["ceiling_slack_mbps"] = ceiling.slack_mbps
    return out


def test_tc_sizes_and_the_tbf_burst_are_read() -> None:
    assert tc_size_bytes("262095b") == 262095
    assert tc_size_bytes("256Kb") == 256 * 1024 and tc_size_bytes("1Mb") == 1024**2
    assert tc_size_bytes("lat") is None
    ctx = parse_context((CONTEXT_FIXTURES / "veth.stdout").read_text())
    veth = shaper_of(ctx["qdisc"], None, "x")  # a real tbf: rate 1Gbit burst 262125b
    assert veth is not None and veth.burst_bytes == 262125
    cake = shaper_of("cake root bandwidth 400Mbit diffserv3", None, "x")
    assert cake is not None and cake.burst_bytes is None  # no bucket: no slack
    assert burst_slack_mbps(cake, 1.0, 1.0) == 0.0


def test_a_halved_link_read_over_its_burst_is_not_above_its_ceiling() -> None:
    """Every sample of the real run, recomputed: the same 470.74 ceiling (the sender's tbf
    at 492.198 Mbit/s, 1448 of each 1514 bytes payload), its basis naming the burst, and
    no above-ceiling flag; the saved sample (no slack) was flagged."""
    doc = _doc()
    saved = next(s for s in doc["tests"] if s["throughput_bps"] > 473.09e6)
    assert "above-ceiling" in flags.of_sample(saved)  # the false flag, as saved
    for s in doc["tests"]:
        now = _recomputed(doc, s)
        assert now["goodput_ceiling_mbps"] == pytest.approx(492.198 * 1448 / 1514)
        assert now["ceiling_slack_mbps"] == pytest.approx(262095 * 8 / 1e6 * 1448 / 1514)
        assert "262095 B burst lets a 1 s test read up to 2.0 Mbit/s more" in now["ceiling_basis"]
        assert "above-ceiling" not in flags.of_sample(now), now["throughput_bps"]


def test_the_slack_shrinks_with_the_duration_and_still_flags_a_real_excess() -> None:
    """A longer test gets less slack (burst / duration); a figure past ceiling, margin and
    slack is still flagged (one field of a real sample changed: its figure)."""
    doc = _doc()
    s = next(s for s in doc["tests"] if s["name"] == "tcp-fwd")
    longer = copy.deepcopy(s)
    longer["options"]["duration"] = 10
    ten = _recomputed(doc, longer)["ceiling_slack_mbps"]
    assert ten == pytest.approx(_recomputed(doc, s)["ceiling_slack_mbps"] / 10)
    now = _recomputed(doc, s)
    now["throughput_bps"] = (now["goodput_ceiling_mbps"] * 1.005 + 2.2) * 1e6
    assert "above-ceiling" in flags.of_sample(now)
    full = copy.deepcopy(s)
    full["options"].pop("duration")  # a duration unknown: no slack
    assert _recomputed(doc, full)["ceiling_slack_mbps"] == 0.0
