"""A link shaped to half by tbf is not flagged above its ceiling when a test fills it.

The lab's data links halved as test_verdicts_lab.py halves them (tbf at 500mbit, its burst
256 KB), then short TCP tests both ways: the ceiling is the sender's tbf, its basis names
the burst, and a full-rate figure (a 1 s window may carry the burst on top of the rate:
2 Mbit/s) is not above-ceiling. Before the slack one repeat in six read +0.5% and was.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.integration.conftest import LabHandle
from tests.integration.helpers import run_netrun
from tests.integration.nightly import shaped

pytestmark = pytest.mark.integration

FULL, HALF = "1gbit", "500mbit"


def test_a_halved_links_full_rate_tcp_is_not_above_its_ceiling(
    lab: LabHandle, tmp_path: Path
) -> None:
    tests = [
        {"name": "tcp-fwd", "mode": "baremetal", "server": "alpha", "client": "bravo"},
        {"name": "tcp-rev", "mode": "baremetal", "server": "alpha", "client": "bravo",
         "reverse": True},
    ]  # fmt: skip
    scenario = tmp_path / "halved.yaml"
    body = {"name": "halved", "defaults": {"duration": 1, "repeat": 6}, "tests": tests}
    scenario.write_text(yaml.safe_dump(body, sort_keys=False))
    out = tmp_path / "out"
    with shaped(lab.namespaces, HALF, FULL):
        done = run_netrun([scenario, "-i", lab.inventory, "-q", "-o", out], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    samples = json.loads((out / "results.json").read_text())["tests"]
    assert len(samples) == 12
    for s in samples:
        assert s["status"] == "ok", s["error"]
        assert 400 < s["goodput_ceiling_mbps"] < 480, s["ceiling_basis"]  # the tbf's, not 941
        assert "tbf root rate" in s["ceiling_basis"] and "burst" in s["ceiling_basis"]
        assert s["ceiling_slack_mbps"] > 0
        assert s["throughput_bps"] / 1e6 > 0.9 * s["goodput_ceiling_mbps"]  # it filled the link
        assert "above-ceiling" not in s["flags"], (s["throughput_bps"], s["ceiling_basis"])
