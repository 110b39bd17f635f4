"""Reading tools/docker.ready_script's one answer: inspect JSON, log tail and MTU.

Fixtures are its real output on the emulated lab's dockerd (20.10) with the lab's iperf3
image: a server container listening, one that exited at once (a bad -p), and a name
with no container behind it; and (ready-logfile.txt, 2026-12-04, the lab's dockerd with its
json-file log readable by the host) a listening one whose log lines the script read from
that file.
"""

from __future__ import annotations

from netrun.tools.docker import (
    json_log_lines,
    logs_of,
    parse_ready,
    ready_script,
    stop_execs_script,
)
from tests.conftest import DOCKER_FIXTURES, FIXTURES

#: What the lab image's ``iperf3 -s`` says once it listens (Tool.resident_ready).
READY = "Server listening"


def read(name: str) -> str:
    return (DOCKER_FIXTURES / f"ready-{name}.txt").read_text()


def test_a_listening_server_with_its_mtu() -> None:
    found = parse_ready(read("listening"), ready=READY)
    assert found.info is not None and found.info.running
    assert found.info.name == "nrcap-server" and found.info.ips
    assert found.listening and found.mtu == 1450


def test_a_listening_server_read_from_its_log_file() -> None:
    """The host read the json-file log: its lines are decoded as docker logs shows them,
    and the one inspect taken as the container started stands for the container."""
    found = parse_ready(read("logfile"), ready=READY)
    assert found.info is not None and found.info.running and found.info.pid
    assert found.info.name == "nrcap-server" and found.info.ips
    assert found.listening and found.mtu == 1450
    assert "Server listening on 5201 (test #1)" in found.logs.splitlines()
    assert '"stream"' not in found.logs


def test_the_context_a_probe_prints_after_it_stays_out_of_its_sections() -> None:
    """A probe runs the host's context beside a container's start and prints it after
    the start's own output: the MTU and the logs are the script's alone."""
    probe = (FIXTURES / "context" / "host_nic.stdout").read_text()
    context = probe[probe.index("==netrun:ctx-") :]  # the context's part of a real probe
    found = parse_ready(read("logfile").rstrip("\n") + "\n" + context, ready=READY)
    assert found.mtu == 1450 and found.listening
    assert "ctx-" not in found.logs


def test_log_lines_of_either_section() -> None:
    line = '{"log":"Server listening on 5201\\n","stream":"stdout","time":"x"}'
    assert json_log_lines([line, "not json"]) == "Server listening on 5201\nnot json"
    assert logs_of({"logs": "plain"}) == "plain"
    assert logs_of({"logjson": line}) == "Server listening on 5201"
    assert logs_of({}) == ""


def test_a_container_that_exited_keeps_its_status_and_log() -> None:
    found = parse_ready(read("exited"), ready=READY)
    assert found.info is not None and not found.info.running
    assert found.info.exit_code not in (None, 0)
    assert not found.listening and found.mtu is None
    assert "iperf3" in found.logs


def test_no_container_yet_is_not_ready() -> None:
    found = parse_ready(read("missing"), ready=READY)
    assert found.info is None and not found.listening and found.mtu is None
    assert parse_ready("", ready=READY).info is None  # a host that printed nothing at all


def test_the_script_quotes_its_names_and_bounds_its_wait() -> None:
    script = ready_script("n; rm -rf /", "/opt/my docker/docker", 0.5, ready=READY)
    assert "n='n; rm -rf /'" in script and "d='/opt/my docker/docker'" in script
    assert "steps=50" in script  # 10 ms looks at the log file (50 ms ones count 5)


def test_stopping_a_containers_execs_quotes_its_name_and_spares_pid_1() -> None:
    """A fan's stopped flow (netrun.run.flows): what ``docker exec`` runs in its client
    container is killed by the host pids docker lists, never by a name, and PID 1 (the
    container's own server) is spared."""
    script = stop_execs_script("netrun-x-f:a->b-client", "/usr/bin/docker")
    assert "n='netrun-x-f:a->b-client'" in script and "d=/usr/bin/docker" in script
    assert '"$d" inspect -f "{{.State.Pid}}" "$n"' in script
    assert '"$d" top "$n" -o pid' in script and '[ "$p" = "$one" ] ||' in script
    assert "pkill" not in script and "killall" not in script
