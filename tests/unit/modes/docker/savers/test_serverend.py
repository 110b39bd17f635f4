"""The end of a container test on its hosts: the server's wait and the armed client's
command, run in sh against a stand-in docker CLI (netrun.modes.docker.savers.serverend,
armedexec)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from netrun.cleanup import scripts as cleanup_scripts
from netrun.modes.docker import launch
from netrun.modes.docker.savers import client as armedexec
from netrun.modes.docker.savers import serverend


def fake_docker(tmp_path: Path) -> Path:
    """A docker CLI whose server container has served as many tests as ``served`` says
    (its log says "Server listening" once more than that: at its start, then after each
    test); ``gone`` removes it."""
    docker = tmp_path / "docker"
    docker.write_text(
        "#!/bin/sh\n"
        f'd={tmp_path}\n[ -e "$d/gone" ] && {{ echo "No such container" >&2; exit 1; }}\n'
        'case "$1" in logs) n=$(cat "$d/served" 2>/dev/null || echo 0); i=0; '
        'while [ $i -le "$n" ]; do echo "Server listening on 5201"; i=$((i+1)); done;; '
        'exec) shift 2; echo "ran: $*";; esac\n'
    )
    docker.chmod(0o755)
    return docker


def wait_script(tmp_path: Path, served: int, bound: float, sweep: str = "") -> str:
    return serverend.script(
        str(fake_docker(tmp_path)), "srv", os.getpid(), served, bound,
        line="Server listening", reading="echo reading", sweep=sweep,
    )  # fmt: skip


def test_the_wait_ends_when_the_server_served_the_test_then_reads_and_sweeps(
    tmp_path: Path,
) -> None:
    (tmp_path / "served").write_text("1")
    folder = tmp_path / "netrun-1a2b"
    folder.mkdir()
    sweep = f"rm -rf {folder}; [ ! -e {folder} ] && echo {cleanup_scripts.SWEPT}"
    started = time.monotonic()
    proc = subprocess.Popen(
        ["sh", "-c", wait_script(tmp_path, 2, 30, sweep)], stdout=subprocess.PIPE, text=True
    )
    time.sleep(0.3)
    assert proc.poll() is None and folder.exists()  # the test still runs: it waits
    (tmp_path / "served").write_text("2")  # iperf3 -s says it listens again: test over
    out, _ = proc.communicate(timeout=10)
    found = launch.sections(out)
    assert found["count"].strip() == "3"
    assert found["counters"].strip() == "reading"
    assert found["swept"].strip() == cleanup_scripts.SWEPT and not folder.exists()
    assert time.monotonic() - started < 5


def test_the_wait_stops_when_the_container_is_gone(tmp_path: Path) -> None:
    """A failed test: the final sweep removes the container, and the wait ends with it
    instead of waiting out its bound on the host after netrun exited."""
    proc = subprocess.Popen(
        ["sh", "-c", wait_script(tmp_path, 1, 60)], stdout=subprocess.PIPE, text=True
    )
    time.sleep(0.3)
    assert proc.poll() is None
    (tmp_path / "gone").write_text("")
    out, _ = proc.communicate(timeout=5)
    assert launch.sections(out)["count"].strip() == "1"  # the last it saw


def run_armed(tmp_path: Path, line: str | None, sweep: str) -> subprocess.CompletedProcess:
    docker = fake_docker(tmp_path)
    argv = [str(docker), "exec", "cli", "iperf3", "-c", armedexec.IP_TOKEN, "-J"]
    client = launch.shell_words(argv, {armedexec.IP_TOKEN: "ip"}) + '; echo "pid=$pid"'
    script = armedexec.command(client, sweep)
    return subprocess.run(["sh", "-c", script], input=line, capture_output=True, text=True)


def test_the_armed_client_runs_once_it_gets_its_line_and_sweeps_if_told(tmp_path: Path) -> None:
    sweep = f"echo {cleanup_scripts.SWEPT}"
    done = run_armed(tmp_path, "10.244.1.2 4242 sweep\n", sweep)
    assert done.stdout.splitlines() == ["ran: iperf3 -c 10.244.1.2 -J", "pid=4242"]
    assert done.stderr == cleanup_scripts.SWEPT + "\n"
    kept = run_armed(tmp_path, "10.244.1.2 0 -\n", sweep)
    assert kept.stdout.splitlines()[0] == "ran: iperf3 -c 10.244.1.2 -J" and kept.stderr == ""


def test_the_armed_client_runs_nothing_without_a_good_line(tmp_path: Path) -> None:
    """Abandoned (stdin ends), or a line that is not an address and a PID."""
    for line in (None, "", "10.0.0.1;id 1 -\n", "10.0.0.1 $(id) -\n", "'x' 1 -\n"):
        done = run_armed(tmp_path, line, "echo swept")
        assert done.returncode == 0 and done.stdout == "" and done.stderr == "", line


def test_the_armed_clients_line_carries_the_modes_own_pids() -> None:
    """FreeFlow's router pid, known only once the container start read it, rides on the
    line; a word that is not a number leaves the variable unset (the reading then takes
    the pid the mode knew when it armed the command, pathbytes.own_words)."""
    client = 'echo "ip=$ip router=${nr_p_router-unset} then=$then"'
    script = armedexec.command(client, "", ["router"])

    def run(line: str) -> str:
        done = subprocess.run(["sh", "-c", script], input=line, capture_output=True, text=True)
        return done.stdout.strip()

    assert run("10.244.1.2 4242 - 2338\n") == "ip=10.244.1.2 router=2338 then=-"
    assert run("10.244.1.2 4242 sweep 0\n") == "ip=10.244.1.2 router=0 then=sweep"
    assert run("10.244.1.2 4242 -\n") == "ip=10.244.1.2 router=unset then=-"
    assert run("10.244.1.2 4242 - $(id)\n") == "ip=10.244.1.2 router=unset then=-"
    assert armedexec.command(client, "") == armedexec.command(client, "", [])


def followed(tmp_path: Path, served: int, bound: float, pid: int, path: str) -> subprocess.Popen:
    """The wait where the host reads the container's json-file log (its path from
    `docker container inspect`), with PATH's ``sleep`` noting each call in ``slept``."""
    log = tmp_path / "srv-json.log"
    docker = tmp_path / "docker"
    docker.write_text(f'#!/bin/sh\n[ "$1" = container ] && echo {log}\nexit 0\n')
    docker.chmod(0o755)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    sleep = bin_dir / "sleep"
    sleep.write_text(f'#!/bin/sh\necho x >> {tmp_path}/slept\nexec /bin/sleep "$@"\n')
    sleep.chmod(0o755)
    text = serverend.script(
        str(docker), "srv", pid, served, bound, line="Server listening",
        reading="echo reading", sweep="", fifo=str(tmp_path / "srv.served"),
    )  # fmt: skip
    env = {**os.environ, "PATH": f"{bin_dir}:{path}"}
    return subprocess.Popen(["sh", "-c", text], stdout=subprocess.PIPE, text=True, env=env)


def log_line(tmp_path: Path, text: str) -> None:
    with (tmp_path / "srv-json.log").open("a") as log:
        entry = {"log": f"{text}\n", "stream": "stdout", "time": "2026-12-05T02:00:00Z"}
        log.write(json.dumps(entry) + "\n")


def test_the_wait_follows_the_log_instead_of_polling_it(tmp_path: Path) -> None:
    """GNU tail follows the json-file log: the wait ends as the line appears, and forks
    nothing meanwhile (it used to run a grep and a sleep every 20 ms, beside the test)."""
    log_line(tmp_path, "Server listening on 5201 (test #1)")
    proc = followed(tmp_path, 1, 30, os.getpid(), os.environ["PATH"])
    time.sleep(0.5)
    assert proc.poll() is None
    log_line(tmp_path, "Accepted connection from 10.244.1.2")
    time.sleep(0.2)
    assert proc.poll() is None
    started = time.monotonic()
    log_line(tmp_path, "Server listening on 5201 (test #2)")
    out, _ = proc.communicate(timeout=5)
    assert time.monotonic() - started < 1
    found = launch.sections(out)
    assert found["count"].strip() == "2" and found["counters"].strip() == "reading"
    assert not (tmp_path / "slept").exists()  # no polling
    assert not (tmp_path / "srv.served").exists()  # the fifo is gone


def test_the_followed_wait_is_bounded_and_then_polls_no_more(tmp_path: Path) -> None:
    log_line(tmp_path, "Server listening on 5201 (test #1)")
    started = time.monotonic()
    proc = followed(tmp_path, 1, 1, os.getpid(), os.environ["PATH"])
    out, _ = proc.communicate(timeout=10)
    assert 1.5 <= time.monotonic() - started < 4
    assert launch.sections(out)["count"].strip() == "0"  # not seen: read on its own
    assert not (tmp_path / "slept").exists()


def test_the_followed_wait_ends_with_the_containers_pid_1(tmp_path: Path) -> None:
    log_line(tmp_path, "Server listening on 5201 (test #1)")
    pid1 = subprocess.Popen(["sleep", "60"])
    proc = followed(tmp_path, 1, 60, pid1.pid, os.environ["PATH"])
    time.sleep(0.3)
    pid1.kill()
    pid1.wait()
    out, _ = proc.communicate(timeout=5)
    assert launch.sections(out)["count"].strip() == "1"  # the last it saw


def test_without_gnu_tail_the_wait_polls_the_log(tmp_path: Path) -> None:
    """busybox's tail has no --pid: it fails at once and the 20 ms polling takes over."""
    fake = tmp_path / "fakebin"
    fake.mkdir()
    tail = fake / "tail"
    tail.write_text("#!/bin/sh\necho 'tail: unrecognized option: pid' >&2\nexit 1\n")
    tail.chmod(0o755)
    log_line(tmp_path, "Server listening on 5201 (test #1)")
    proc = followed(tmp_path, 1, 30, os.getpid(), f"{fake}:{os.environ['PATH']}")
    time.sleep(0.3)
    assert proc.poll() is None
    log_line(tmp_path, "Server listening on 5201 (test #2)")
    out, _ = proc.communicate(timeout=5)
    assert launch.sections(out)["count"].strip() == "2"
    assert (tmp_path / "slept").exists()
