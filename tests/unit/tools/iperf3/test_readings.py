"""The client end's counter readings ride on the client's own command: run here by a
real sh as the transport sends it, with a captured iperf3 JSON standing in for iperf3."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from netrun.hosts import counters
from netrun.hosts.command import CommandResult
from netrun.tools.iperf3 import readings
from netrun.tools.iperf3.parse import parse
from netrun.tools.iperf3.run import ARMED_WRAPPER, CLIENT_WRAPPER, client_wrapper, with_readings
from tests.conftest import COUNTERS_FIXTURES as COUNTERS
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


def _server(tmp_path: Path, after: str | None, after_s: float = 5.0) -> str:
    from netrun.tools.iperf3.run import Iperf3Server

    class Stub(Iperf3Server):
        def start_script(self) -> str:
            return "echo NETRUN_READY 4321 5201 /tmp/x.log"

    server = Stub(None, bind_ip="127.0.0.1", workdir=str(tmp_path), tag="t")  # type: ignore[arg-type]
    server.read = counters.script("lo")
    server.after, server.after_s = after, after_s
    return server.script()


def test_the_server_start_reads_once_the_test_before_on_its_host_ended(tmp_path: Path) -> None:
    """A start ahead waits for the running test's process there (its pid file), then
    reads: that test's reading after and this one's before, in one command."""
    import time

    from netrun.tools.iperf3.server import parse_server_ready

    running = subprocess.Popen(["sleep", "0.5"])
    pidfile = tmp_path / "running.pid"
    pidfile.write_text(f"{running.pid}\n")
    started = time.monotonic()
    out = subprocess.run(["sh", "-c", _server(tmp_path, str(pidfile))], capture_output=True)
    waited = time.monotonic() - started
    running.wait()
    text = out.stdout.decode()
    assert parse_server_ready(text) == (4321, 5201, "/tmp/x.log")
    assert waited >= 0.4  # it waited for the process to end
    reading = counters.parse(text)
    assert reading is not None and reading.iface == "lo" and reading.cpu is not None
    # nothing to wait for (the probe's start): it reads at once
    quick = subprocess.run(["sh", "-c", _server(tmp_path, None)], capture_output=True)
    assert counters.parse(quick.stdout.decode()) is not None


def test_the_server_start_reads_after_the_probes_background_job_ended(tmp_path: Path) -> None:
    """A probe runs the host's context beside the start (netrun.run.fleet): the reading
    before waits for it, so its processes are never inside the test's window."""
    import time

    job = tmp_path / "job.done"
    line = f"( sleep 0.5; touch {job} ) >/dev/null 2>&1 &\n{_server(tmp_path, None)}"
    started = time.monotonic()
    out = subprocess.run(["sh", "-c", line], capture_output=True)
    assert time.monotonic() - started >= 0.4 and job.exists()
    assert counters.parse(out.stdout.decode()) is not None


def test_the_server_end_takes_its_readings_from_what_rides_and_nothing_else() -> None:
    before = (COUNTERS / "awk_server_before.txt").read_text()
    after = (COUNTERS / "awk_server_after.txt").read_text()
    host = SimpleNamespace(start=lambda _s: pytest.fail("no command of its own"))
    end = readings.ServerEnd(host, "true", 10, "/tmp/p.pid", "NETRUN_READY 1 5201 x\n" + before)  # type: ignore[arg-type]
    end.before_client()  # the start carried one: nothing sent
    end.after_from(lambda: after)
    end.otherwise()  # the reading after rides: nothing sent
    found = end.collect()
    assert found[0] is not None and found[1] is not None
    assert counters.delta(*found)["nic_rx_bytes"] == 113_822_117


def test_the_server_end_falls_back_on_a_command_of_its_own_where_nothing_rides() -> None:
    sent: list[str] = []
    before = (COUNTERS / "awk_server_before.txt").read_text()
    after = (COUNTERS / "awk_server_after.txt").read_text()

    class Started:
        def __init__(self, script: str) -> None:
            self.script = script

        def send(self, text: str) -> None:
            sent.append(text)

        def wait(self, _timeout: float) -> tuple[int, str, str]:
            return 0, (after if "read -r pidfile" in self.script else ""), ""

        def abandon(self) -> None: ...

    scripts: list[str] = []

    def start(script: str) -> Started:
        scripts.append(script)
        return Started(script)

    host = SimpleNamespace(start=start)
    end = readings.ServerEnd(host, "READ", 10, "/tmp/p.pid", "NETRUN_READY 1 5201 x\n" + before)  # type: ignore[arg-type]
    end.before_client()
    end.otherwise()  # nothing carries the reading after: one command, after only
    assert len(scripts) == 1 and scripts[0].count("READ") == 1 and sent == ["/tmp/p.pid\n"]
    found = end.collect()
    assert found[0] is not None and found[1] is not None
