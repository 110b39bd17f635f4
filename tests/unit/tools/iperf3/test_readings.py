"""The client end's counter readings ride on the client's own command: run here by a
real sh as the transport sends it, with a captured iperf3 JSON standing in for iperf3."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from netrun.hosts import counters
from netrun.hosts.command import CommandResult
from netrun.tools.iperf3 import readings
from netrun.tools.iperf3.parse import parse
from netrun.tools.iperf3.run import ARMED_WRAPPER, CLIENT_WRAPPER, client_wrapper, with_readings
from tests.conftest import IPERF3_FIXTURES

FIXTURE = IPERF3_FIXTURES / "udp_shaped_server_json.stdout"


def run(tmp_path: Path, script: str, *argv: str, stdin: str = "") -> CommandResult:
    pidfile = str(tmp_path / "run" / "c.pid")
    wrapper = client_wrapper(script, str(tmp_path / "run"), pidfile, 30, list(argv))
    line = shlex.join(wrapper)
    proc = subprocess.run(["sh", "-c", line], input=stdin, capture_output=True, text=True)
    return CommandResult("local", line, proc.returncode, proc.stdout, proc.stderr, 0.1)


def test_readings_come_after_the_output_and_are_taken_off(tmp_path: Path) -> None:
    script = with_readings(CLIENT_WRAPPER, counters.script("lo"))
    res = run(tmp_path, script, "sh", "-c", f"cat {shlex.quote(str(FIXTURE))}; exit 2")
    assert res.exited == 2  # the client's status, not the reading's
    own, found = readings.split(res)
    assert own.stdout == FIXTURE.read_text()
    assert parse(own.stdout).lost_packets == 1563
    assert len(found) == 2 and all(r.iface == "lo" for r in found)
    moved = counters.delta(found[0], found[1])
    assert moved["nic_rx_bytes"] is not None and moved["nic_rx_bytes"] >= 0


def test_the_armed_client_reads_once_it_has_its_port(tmp_path: Path) -> None:
    sweep = ""
    script = with_readings(ARMED_WRAPPER, counters.script("lo"))
    pidfile = str(tmp_path / "run" / "c.pid")
    wrapper = client_wrapper(script, str(tmp_path / "run"), pidfile, 30, ["echo", "{}"])
    wrapper[4:4] = [sweep]
    out = subprocess.run(
        ["sh", "-c", shlex.join(wrapper)], input="5201\n", capture_output=True, text=True
    )
    res = CommandResult("local", "", out.returncode, out.stdout, out.stderr, 0.1)
    own, found = readings.split(res)
    assert own.stdout == "{} -p 5201\n" and len(found) == 2
    # no port: nothing runs and nothing is read
    quiet = subprocess.run(["sh", "-c", shlex.join(wrapper)], input="", capture_output=True)
    assert quiet.stdout == b"" and quiet.returncode == 0


def test_without_a_reading_the_wrapper_is_unchanged() -> None:
    assert with_readings(CLIENT_WRAPPER, "") == CLIENT_WRAPPER
    res = CommandResult("h", "", 0, "{}\n", "", 0.1)
    assert readings.split(res) == (res, [])
