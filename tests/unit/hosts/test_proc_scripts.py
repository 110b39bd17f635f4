"""netrun.tools.iperf3.run' kill and state scripts run for real with sh on local processes, and
the one-line errors bare metal builds from them."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from netrun.errors import HostError
from netrun.hosts.host import Host
from netrun.hosts.proc import kill_script, read_state, save_pid, state_script
from netrun.tools.iperf3.measure import busy_error
from netrun.tools.iperf3.result import Iperf3Error


@pytest.fixture
def sleeper(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """A process of this test's own (sleep), recorded in a pid file (pid start boot)."""
    proc = subprocess.Popen(["sleep", "60"])
    pidfile = tmp_path / "t.pid"
    subprocess.run(["sh", "-c", save_pid(str(pidfile), str(proc.pid))], check=True)
    try:
        yield proc, pidfile
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)


def sh(script: str) -> str:
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=20).stdout


def test_state_script_reads_the_state_and_a_link(
    sleeper: tuple[subprocess.Popen[bytes], Path],
) -> None:
    proc, pidfile = sleeper
    assert read_state(sh(state_script(str(pidfile), "lo"))) == (
        "S",
        "unknown",
    )
    os.kill(proc.pid, signal.SIGSTOP)
    time.sleep(0.1)
    out = sh(state_script(str(pidfile), "nr-no-such-link"))
    assert read_state(out) == ("T", "missing")


def test_state_script_never_reports_a_process_that_is_not_ours(
    sleeper: tuple[subprocess.Popen[bytes], Path],
) -> None:
    proc, pidfile = sleeper
    pid, start, boot = pidfile.read_text().split()
    for other in (f"{pid}\n", f"{pid} {int(start) + 1} {boot}\n", f"{pid} {start} other-boot\n"):
        pidfile.write_text(other)  # no start time, a reused pid, another boot's
        assert read_state(sh(state_script(str(pidfile)))) == ("gone", None)
        sh(kill_script(str(pidfile)))
        assert proc.poll() is None and not pidfile.exists()


def test_kill_script_ends_a_stopped_process_at_once(
    sleeper: tuple[subprocess.Popen[bytes], Path],
) -> None:
    """SIGTERM alone stays pending on a stopped process: without SIGCONT the script would
    wait its full second and fall back to SIGKILL."""
    proc, pidfile = sleeper
    os.kill(proc.pid, signal.SIGSTOP)
    time.sleep(0.1)
    started = time.monotonic()
    out = sh(kill_script(str(pidfile)))
    assert time.monotonic() - started < 0.8
    assert proc.wait(timeout=5) == -signal.SIGTERM
    assert read_state(out)[0] == "T" and not pidfile.exists()


def test_busy_error_names_the_holder_and_the_fix() -> None:
    alpha = Host("alpha", {})
    err = Iperf3Error("busy", "iperf3 server did not start: all ports busy: 5201")
    err.busy = {5201: "iperf3 4242"}
    assert str(busy_error(alpha, err, 4, 3.52)) == (
        "alpha: another iperf3 (pid 4242) is using port 5201 on alpha (4 tries in 3.5s): "
        "stop it or set port: to a free one"
    )
    err.busy = {5201: "nginx 7", 5202: None}
    assert "another program (nginx 7) is using ports 5201-5202 on alpha" in str(
        busy_error(alpha, err, 1, 0)
    )
    err.busy = {5203: None}  # the server answered "busy": someone else's client holds it
    assert str(busy_error(alpha, err, 3, 1.0)).startswith(
        "alpha: another iperf3 is using port 5203 on alpha"
    )


def test_busy_backoff_is_capped_and_ends_when_the_run_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A busy port's backoff never sleeps past MAX_BACKOFF, and an interrupted parallel
    run (ctx.stopping, which the main thread sets) ends it at once instead of sitting it out."""
    import threading

    from netrun.errors import Cancelled
    from netrun.modes.baremetal import mode as baremetal
    from netrun.modes.base import RunContext
    from netrun.scenario.loader import load_scenario
    from netrun.tools.iperf3 import measure as iperf3_measure
    from netrun.tools.iperf3 import onhost

    scen = tmp_path / "s.yaml"
    scen.write_text(
        "tests:\n  - {name: t, mode: baremetal, server: alpha, client: bravo,"
        " busy_retries: 20, busy_backoff: 60}\n"
    )
    (test,) = load_scenario(scen, hosts=["alpha", "bravo"]).tests
    alpha, bravo = Host("alpha", {}), Host("bravo", {})
    ctx = RunContext(run_id="1a2b")
    mode = baremetal.BareMetal(test, alpha, bravo, ctx)

    def busy(mode: object, tag: str) -> None:
        err = Iperf3Error("busy", "iperf3 server did not start: all ports busy: 5201")
        err.busy = {5201: None}
        raise err

    waits: list[float] = []
    real_wait = ctx.stopping.wait

    def wait(timeout: float | None = None) -> bool:
        waits.append(timeout or 0.0)
        return real_wait(0)

    monkeypatch.setattr(onhost, "measure_once", busy)
    monkeypatch.setattr(ctx.stopping, "wait", wait)
    with pytest.raises(HostError, match="21 tries"):
        onhost.measure(mode, 1)
    assert len(waits) == 20 and max(waits) == iperf3_measure.MAX_BACKOFF

    monkeypatch.setattr(ctx.stopping, "wait", real_wait)
    threading.Timer(0.2, ctx.stopping.set).start()
    started = time.monotonic()
    with pytest.raises(Cancelled):
        onhost.measure(mode, 1)
    assert time.monotonic() - started < 5
