"""Clock offset by the midpoint method, and chrony/timesyncd state."""

from __future__ import annotations

import math
import subprocess
import time

import pytest

from netrun.hosts import clock

CHRONY = """Reference ID    : C0A80001 (192.168.0.1)
Stratum         : 3
Ref time (UTC)  : Mon Nov 30 18:00:00 2026
System time     : 0.000012345 seconds slow of NTP time
Last offset     : -0.000002000 seconds
RMS offset      : 0.000010000 seconds
Frequency       : 1.234 ppm fast
Residual freq   : +0.001 ppm
Skew            : 0.010 ppm
Root delay      : 0.002000000 seconds
Root dispersion : 0.000500000 seconds
Update interval : 64.2 seconds
Leap status     : Normal
"""

TIMESYNCD = """LinkNTPServers=
SystemNTPServers=
FallbackNTPServers=0.debian.pool.ntp.org
ServerName=0.debian.pool.ntp.org
ServerAddress=192.0.2.5
RootDistanceMaxUSec=5s
PollIntervalMinUSec=32s
PollIntervalMaxUSec=34min 8s
PollIntervalUSec=34min 8s
"""
TIMESYNCD += (
    "NTPMessage={ Leap=0, Version=4, Mode=4, Stratum=2, Precision=-24, RootDelay=10.299ms,"
    " Offset=-1.234ms }\nFrequency=-1234567\n"
)


def test_midpoint_of_the_fastest_round_trip() -> None:
    samples = [
        clock.Sample(100.0, 105.30, 100.40),  # rtt 0.4
        clock.Sample(200.0, 205.01, 200.02),  # rtt 0.02: this one
        clock.Sample(300.0, 305.5, 301.0),
    ]
    est = clock.estimate(samples)
    assert est.offset_s == pytest.approx(5.0)
    assert est.uncertainty_s == pytest.approx(0.01)
    assert est.samples == 3 and est.rtt_s == pytest.approx(0.02)


def test_bad_samples_are_dropped_and_none_left_is_unknown_not_zero() -> None:
    bad = [clock.Sample(1.0, math.nan, 2.0), clock.Sample(5.0, 5.0, 4.0)]
    est = clock.estimate(bad)
    assert est.offset_s is None and est.reason and est.samples == 0


def test_lab_hosts_share_one_clock() -> None:
    est = clock.estimate([clock.Sample(1.0, 1.5, 2.0)], shared_clock=True)
    assert est.shared_clock and est.offset_s == 0.0 and est.uncertainty_s == 0.0


def test_reading_this_machines_clock_for_real() -> None:
    samples = []
    for _ in range(5):
        t0 = time.time()
        out = subprocess.run(clock.read_command(), capture_output=True, text=True, check=True)
        t1 = time.time()
        remote = clock.parse_reading(out.stdout)
        assert remote is not None
        samples.append(clock.Sample(t0, remote, t1))
    est = clock.estimate(samples)
    assert est.offset_s is not None and est.uncertainty_s is not None
    assert abs(est.offset_s) <= est.uncertainty_s + 0.001  # one clock: offset within the bound


@pytest.mark.parametrize("text", ["", "%s.%N", "1e9", "17.5 extra", "9" * 40 + ".1"])
def test_an_unreadable_reading_is_none(text: str) -> None:
    assert clock.parse_reading(text) is None


def test_latency_reliability() -> None:
    assert clock.latency_reliable(14.0, 0.0001, 0.0001) is None
    assert "negative" in (clock.latency_reliable(-0.5, 0.0, 0.0) or "")
    assert "not small" in (clock.latency_reliable(1.0, 0.001, 0.001) or "")
    assert "unknown" in (clock.latency_reliable(5.0, None, 0.0) or "")


def test_chrony_and_timesyncd_state() -> None:
    state = clock.parse_sync(CHRONY + TIMESYNCD)
    chrony = state["chrony"]
    assert chrony["offset_s"] == pytest.approx(-0.000012345)  # type: ignore[index]
    assert chrony["synchronised"] is True  # type: ignore[index]
    assert chrony["error_bound_s"] == pytest.approx(0.0015)  # type: ignore[index]
    assert state["timesyncd"] == {"server": "192.0.2.5", "offset_s": pytest.approx(-0.001234)}
    assert clock.parse_sync("") == {}
    assert "chronyc" in clock.sync_command() and "show-timesync" in clock.sync_command()


def test_readings_of_this_machine_fall_between_sent_and_received() -> None:
    """clock_reading.samples, shared by the run (read_host) and ``netrun check``, on a
    real local host; this kernel's boot id makes read_host call its clock shared."""
    from netrun.hosts import clock_reading
    from netrun.hosts.host import Host
    from netrun.hosts.local import LocalTransport

    host = Host("me", {"ansible_connection": "local"})
    host.transport = LocalTransport(host)
    found = clock_reading.samples(host, 2)
    assert len(found) == 2
    assert all(s.t_send - 0.01 <= s.remote <= s.t_recv + 0.01 for s in found)
    reading = clock_reading.read_host(host)
    assert reading["shared_clock"] is True and reading["offset_ms"] == 0
