"""The container modes' ends (netrun.modes.docker.ends): what a tool runs there is a
``docker exec``, a process started there records its pid inside the container (in the one
pid-file format) after an undo record that stops it there, and FreeFlow's end names its
library on every exec."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from netrun.hosts import proc
from netrun.hosts.host import Host
from netrun.modes import get_mode
from netrun.modes.base import RunContext
from netrun.modes.docker.ends import CONTAINER_IP, ContainerEnd, FreeFlowEnd
from netrun.scenario.loader import load_scenario
from netrun.testing.recording import RecordingTransport, Reply


def placed(tmp_path: Path, mode: str = "docker"):
    path = tmp_path / "s.yaml"
    path.write_text(f"tests:\n  - {{name: t, mode: {mode}, server: alpha, client: bravo}}\n")
    (test,) = load_scenario(path, hosts=["alpha", "bravo"]).tests
    log: list[tuple[str, str]] = []
    hosts = {}
    for name, ip in (("alpha", "10.0.0.1"), ("bravo", "10.0.0.2")):
        host = Host(name, {"netrun_data_ip": ip, "netrun_iperf3": "/opt/iperf3"})
        host.transport = RecordingTransport(name, log)  # type: ignore[assignment]
        hosts[name] = host
    m = get_mode(mode)(test, hosts["alpha"], hosts["bravo"], RunContext(run_id="1a2b"))
    return m, hosts, log


def test_a_container_end_wraps_in_docker_exec_and_is_dialled_at_its_address(
    tmp_path: Path,
) -> None:
    m, _, log = placed(tmp_path)
    server, client = m.end("server"), m.end("client")
    assert isinstance(server, ContainerEnd) and server.own_ports
    assert client.wrap(["iperf3", "-c", "x"]) == [
        "docker", "exec", "netrun-1a2b-t0-client", "iperf3", "-c", "x",
    ]  # fmt: skip
    assert server.address == CONTAINER_IP  # until the server container runs
    m.server_ip = "172.17.0.2"
    assert server.address == "172.17.0.2" and server.bind == "0.0.0.0"
    # the image's own program, not the host's netrun_iperf3
    assert client.program("netrun_iperf3", "iperf3") == "iperf3"
    assert log == []


def test_a_freeflow_end_preloads_its_library_on_every_exec(tmp_path: Path) -> None:
    m, _, _ = placed(tmp_path, "freeflow")
    end = m.end("client")
    assert isinstance(end, FreeFlowEnd)
    assert end.wrap(["netperf"]) == [
        "docker", "exec", "-e", "LD_PRELOAD=/freeflow/libfsocket.so", "netrun-1a2b-t0-client",
        "netperf",
    ]  # fmt: skip


def test_a_start_records_its_undo_first_then_the_pid_inside_the_container(
    tmp_path: Path,
) -> None:
    m, hosts, log = placed(tmp_path)
    end = m.end("server")
    hosts["alpha"].transport.answer("docker exec -d", Reply(exited=1))  # type: ignore[attr-defined]
    started = end.start(["iperf3", "-s"], "load-x", lifetime=30, what="w", ready="true")
    ((host, line),) = log  # one round trip, on the server's host
    assert host == "alpha"
    record, change = line.index("undo/"), line.index("docker exec -d netrun-1a2b-t0-server")
    assert record < change  # the undo record is written before the start
    assert started.pidfile == "/tmp/netrun-load-x.pid"  # in the container
    assert started.output == "/tmp/netrun-load-x.out"
    # the undo stops it in the container, by the pid recorded there
    ((_, record_),) = m.undo_stack.records()
    kill = proc.kill_recorded(started.pidfile, builtins=True) + " >/dev/null"
    assert record_.command.startswith(
        f"docker exec netrun-1a2b-t0-server sh -c {shlex.quote(kill)}"
    )
    assert started.answer is not None and started.answer.exited == 1  # the ready wait's


def test_the_recorded_pid_is_the_started_process_not_its_launcher(tmp_path: Path) -> None:
    """The wrapper a container end starts (sh -c KEEP sh ARGV), run here for real: the pid
    file names the process the argv became (exec keeps the pid), so stopping it by the
    record stops the process itself, as in a container where the ``docker exec`` client
    on the host is not it."""
    m, _, log = placed(tmp_path)
    end = m.end("server")
    end.start(["sleep", "30"], "s", lifetime=30, what="w")
    inner = next(line for _, line in log if "docker exec -d" in line)
    argv = shlex.split(inner[inner.index("docker exec -d") :].split("\n")[0])
    keep = argv[argv.index("-c") + 1]
    pidfile = tmp_path / "s.pid"
    keep = keep.replace("/tmp/netrun-s.pid", str(pidfile)).replace(
        "/tmp/netrun-s.out", str(tmp_path / "s.out")
    )
    launcher = subprocess.Popen(["sh", "-c", keep, "sh", "sleep", "30"])
    try:
        for _ in range(100):
            if pidfile.exists() and pidfile.read_text().strip():
                break
            time.sleep(0.02)
        pid, start, _boot = pidfile.read_text().split()
        assert int(pid) == launcher.pid  # sh exec'd sleep: the same process
        assert Path(f"/proc/{pid}/comm").read_text().strip() == "sleep"
        assert start == Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
        # as the undo runs it in the lab's image: sh, cat and sleep, no sed, cut or readlink
        bare = tmp_path / "bin"
        bare.mkdir()
        for program in ("sh", "cat", "sleep"):
            (bare / program).symlink_to(shutil.which(program) or program)
        kill = proc.kill_recorded(str(pidfile), builtins=True)
        env = {"PATH": str(bare)}
        subprocess.run([str(bare / "sh"), "-c", kill], check=True, timeout=10, env=env)
        assert launcher.wait(timeout=5) != 0  # stopped by its record
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()


@pytest.mark.parametrize("mode", ["docker", "flannel", "freeflow"])
def test_the_preview_is_the_containers_then_the_tools_own_client(tmp_path: Path, mode: str) -> None:
    m, _, log = placed(tmp_path, mode)
    preview = m.preview()
    assert preview is not None
    roles = [role for role, _ in preview]
    assert roles == ["server", "client", "client, each repeat"]
    client = preview[-1][1]
    assert (
        client.startswith("docker exec ") and " iperf3 -c '<server container IP>' -p 5201" in client
    )
    assert "/opt/iperf3" not in client  # the image's iperf3
    assert log == []
