"""The end of a container test on its hosts: the server's wait and the armed client's
command, run in sh against a stand-in docker CLI (netrun.modes.docker.savers.serverend,
armedexec)."""

from __future__ import annotations

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
