"""iperf2: the commands netrun sends and the bitrates they take."""

from __future__ import annotations

import pytest

from netrun.tools.iperf2 import command as iperf2_command


def test_commands() -> None:
    assert iperf2_command.server_command(5001, "10.0.0.2") == [
        "iperf", "-s", "-u", "-e", "-i", "1", "-p", "5001", "-B", "10.0.0.2",
    ]  # fmt: skip
    argv = iperf2_command.client_command(
        "127.0.0.1", length=100, bitrate="1000pps", duration=10, port=5
    )
    assert argv == [
        "iperf", "-c", "127.0.0.1", "-u", "-l", "100", "-b", "1000pps", "-t", "10", "-e",
        "--trip-times", "-p", "5",
    ]  # fmt: skip


@pytest.mark.parametrize("rate", ["800000", "8M", "1000pps", "1.5k", 800000])
def test_bitrates_accepted(rate: object) -> None:
    assert iperf2_command.check_bitrate(rate) == str(rate)  # type: ignore[arg-type]


@pytest.mark.parametrize("rate", ["fast", "-1", "0", "8 M", "1e999", "1000ppss", "nan"])
def test_bad_bitrate_says_what_is_accepted(rate: str) -> None:
    with pytest.raises(ValueError, match="1000pps"):
        iperf2_command.check_bitrate(rate)


def test_packets_per_second() -> None:
    assert iperf2_command.packets_per_second("1000pps", 100) == 1000
    assert iperf2_command.packets_per_second("800000", 100) == 1000
    assert iperf2_command.packets_per_second("8M", 100) == 10000


def test_bad_length_and_duration() -> None:
    with pytest.raises(ValueError, match="length"):
        iperf2_command.client_command("a", length=70000, bitrate="1M", duration=1)
    with pytest.raises(ValueError, match="duration"):
        iperf2_command.client_command("a", length=100, bitrate="1M", duration=0)
