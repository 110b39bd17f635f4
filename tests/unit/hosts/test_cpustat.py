"""Per-core CPU readings (netrun.hosts.cpustat) on real /proc/stat and /proc/softirqs
output, captured by tests/fixtures/cpustat/capture.sh on this machine kind (2 cores)."""

from __future__ import annotations

import pytest

from netrun.hosts import cpustat
from tests.conftest import CPUSTAT_FIXTURES


def reading(name: str) -> cpustat.Reading:
    found = cpustat.parse((CPUSTAT_FIXTURES / name).read_text())
    assert found is not None
    return found


def test_a_reading_has_every_core_its_net_softirqs_and_the_tick_rate() -> None:
    r = reading("busy.before")
    assert sorted(r.cores) == ["cpu", "cpu0", "cpu1"] and r.hz == 100
    assert r.cores["cpu0"]["user"] == 267850 and r.cores["cpu1"]["softirq"] == 20203
    assert r.softirqs == {"NET_TX": [2809259, 2378568], "NET_RX": [13917656, 12078128]}


def test_usage_over_two_busy_seconds() -> None:
    used = cpustat.usage(reading("busy.before"), reading("busy.after"))
    assert used is not None
    assert used.cores["cpu0"]["idle"] == 0 and used.busiest_pct == 100
    assert used.cores["cpu0"]["user"] == pytest.approx(100 * 194 / 204, abs=0.01)
    assert used.busy_seconds == pytest.approx(4.07)
    assert used.elapsed_seconds == pytest.approx(2.04)
    assert used.softirq_pct == pytest.approx(100 * 1 / 204, abs=0.01)
    assert used.net_softirqs == {"NET_TX": 182, "NET_RX": 392}
    assert cpustat.seconds_per_gbit(used, 125_000_000) == pytest.approx(4.07)
    assert cpustat.seconds_per_gbit(used, None) is None


def test_what_is_not_a_reading() -> None:
    assert cpustat.parse("") is None
    assert cpustat.parse("grep: /proc/stat: No such file or directory\nclk_tck 100") is None
    assert cpustat.parse("cpu  1 2 3 4 5 6 7 8 0 0\n") is None  # the sum line only
    after, before = reading("busy.after"), reading("busy.before")
    assert cpustat.usage(after, before) is None  # backwards: another boot, not a reading
    assert cpustat.usage(before, before) is None  # no tick moved
