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
    assert r.cores["cpu0"]["user"] == 535144 and r.cores["cpu1"]["softirq"] == 25620
    assert r.softirqs == {"NET_TX": [3519277, 2996188], "NET_RX": [19207748, 16884679]}
    assert r.boot == "f09255f3-c127-4993-874a-c139311c3863"


def test_usage_over_two_busy_seconds() -> None:
    used = cpustat.usage(reading("busy.before"), reading("busy.after"))
    assert used is not None
    assert used.cores["cpu0"]["idle"] == 0 and used.busiest_pct == 100
    assert used.cores["cpu0"]["user"] == pytest.approx(99.0, abs=0.01)
    assert used.cores["cpu1"]["idle"] == pytest.approx(100 * 3 / 202, abs=0.01)  # iowait
    # 3 ticks went to other guests (steal): not this host's work, but named
    assert used.busy_seconds == pytest.approx(3.96)
    assert used.cores["cpu1"]["steal"] == pytest.approx(100 * 2 / 202, abs=0.01)
    assert used.steal_pct == pytest.approx(100 * 3 / 402, abs=0.01)
    assert used.elapsed_seconds == pytest.approx(2.02)
    assert used.softirq_pct == pytest.approx(100 * 1 / 202, abs=0.01)
    assert used.net_softirqs == {"NET_TX": 0, "NET_RX": 0}
    assert cpustat.seconds_per_gbit(used, 125_000_000) == pytest.approx(3.96)
    assert cpustat.seconds_per_gbit(used, None) is None


def test_what_is_not_a_reading() -> None:
    assert cpustat.parse("") is None
    assert cpustat.parse("grep: /proc/stat: No such file or directory\nclk_tck 100") is None
    assert cpustat.parse("cpu  1 2 3 4 5 6 7 8 0 0\n") is None  # the sum line only
    after, before = reading("busy.after"), reading("busy.before")
    assert cpustat.usage(after, before) is None  # backwards: another boot, not a reading
    assert cpustat.usage(before, before) is None  # no tick moved


def test_metrics_per_end_and_a_shared_kernel() -> None:
    used = cpustat.usage(reading("busy.before"), reading("busy.after"))
    assert used is not None
    entry = {**used.to_dict(), "boot": reading("busy.after").boot}
    values, why, shared = cpustat.metrics_of({"client": {"cpu": entry}, "server": {"cpu": entry}},
                                             125_000_000)  # fmt: skip
    assert shared and not why
    assert values["cpu_s_per_gbit_client"] == pytest.approx(3.96)
    assert values["busiest_core_pct_server"] == 100 and values["softirq_pct_client"] == 0.5
    values, why, shared = cpustat.metrics_of({"client": {"cpu": entry}}, 125_000_000)
    assert not shared and values["busiest_core_pct_server"] is None
    assert why["softirq_pct_server"] == "no per-core CPU reading on the server host"
    assert [m.name for m in cpustat.CPU_METRICS][:3] == [
        "cpu_s_per_gbit_client", "busiest_core_pct_client", "softirq_pct_client",
    ]  # fmt: skip
