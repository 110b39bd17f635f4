"""netrun.modes.freeflow.router: the router's own process, found in its start script;
and the gate of a container started beside its router (netrun.modes.freeflow.mode.gate).

The router container's PID 1 is a start script (FreeFlow's own ``docker/start.sh`` runs
``/router`` in a loop, the lab's runs it in the background), so its CPU is the child's:
the script finds that child with shell builtins, on this machine's own /proc.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from netrun.modes.docker import launch
from netrun.modes.freeflow import mode as ff_mode
from netrun.modes.freeflow import router
from netrun.tools import docker as dk
from tests.conftest import FIXTURES

ROUTER_FIXTURES = FIXTURES / "freeflow"


def found_in_sh(parent: str) -> str:
    out = subprocess.run(
        ["sh", "-c", f"nr_rp={parent}; {router.ROUTER_PID}; echo \"$nr_rp $nr_p_router\""],
        capture_output=True, text=True, check=True, timeout=30,
    )  # fmt: skip
    return out.stdout.strip()


def test_the_router_is_the_start_scripts_child() -> None:
    """A start script with one child in the background (the lab's start.sh's shape)."""
    start = subprocess.Popen(["sh", "-c", "sleep 30 & wait"])
    try:
        for _ in range(100):  # until its child is there
            child = found_in_sh(str(start.pid)).split()[1]
            if child != str(start.pid):
                break
        comm = Path(f"/proc/{child}/comm").read_text().strip()
        assert comm == "sleep" and found_in_sh(str(start.pid)) == f"{start.pid} {child}"
    finally:
        start.kill()
        start.wait()


def test_a_childless_pid_1_is_the_router_itself_and_no_pid_is_none() -> None:
    lone = subprocess.Popen(["sleep", "30"])
    try:
        assert found_in_sh(str(lone.pid)) == f"{lone.pid} {lone.pid}"
    finally:
        lone.kill()
        lone.wait()
    assert found_in_sh("") == ""
    assert found_in_sh("'1; echo x'") == ""  # not a number: nothing is looked up


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("2315 2338\n", {"pid": 2338, "container_pid": 2315}),
        ("\n", {}),
        ("2315\n", {}),
        ("0 0\n", {}),  # docker's State.Pid of a stopped container
        ("2315 x\n", {}),
    ],
)
def test_router_pids(text: str, want: dict[str, int]) -> None:
    assert router.router_pids(text) == want


def test_a_reused_router_gives_its_pids_from_the_lab(tmp_path: Path) -> None:
    """The script's output on lab host alpha with the real router running (reused)."""
    found = launch.sections((ROUTER_FIXTURES / "router-reused.txt").read_text())
    plan = router.RouterPlan(
        docker="docker", name="freeflow", library="/x/libfsocket.so", argv=[],
        image_id=None, image="netrun-lab/freeflow:tcp-d4df2ed5cd01", timeout=30,
        vnet=None, subnet_env="/x/subnet.env", network="bridge",
        scratch="/tmp/netrun-x/router-state.out",
    )  # fmt: skip
    state = router.read(found, plan, "alpha", "run")
    pids = router.router_pids(found["routerpid"])
    assert state.record["pid"] == pids["pid"] != state.record["container_pid"]
    assert state.record["reused"] is True and not state.standin


def test_the_gate_waits_for_the_library_then_execs_with_it_preloaded(tmp_path: Path) -> None:
    """PID 1 of a container started beside its router: sh that waits for the library and
    becomes the tool with it preloaded (and only then: sh itself started without it)."""
    lib = tmp_path / "libfsocket.so"
    script = ff_mode.gate(5)
    argv = ["sh", "-c", script, str(lib), "sh", "-c", 'echo "$LD_PRELOAD"']
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env={"PATH": "/usr/bin:/bin"})
    time.sleep(0.1)
    assert proc.poll() is None  # still waiting
    lib.write_text("x")
    out, _ = proc.communicate(timeout=10)
    assert proc.returncode == 0 and out.strip() == str(lib)


def test_the_gate_gives_up_with_a_line(tmp_path: Path) -> None:
    lib = tmp_path / "never.so"
    argv = ["sh", "-c", ff_mode.gate(0.05, margin=0), str(lib), "true"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    assert done.returncode == 125
    assert done.stderr.strip() == f"netrun: {lib} did not appear"


#: docker as the router script sees it: no router at first; ``run`` starts one that
#: publishes the library at once (RUN_RC: its exit status instead, with a line).
FAKE_DOCKER = """#!/bin/sh
echo "$*" >> "$LOG"
case "$1" in
container)
  [ -f "$STATE" ] || exit 1
  case "$*" in
  *'Running}}|'*) echo "true|sha256:abc|cid|1|run|4242" ;;
  *'Running}} {{.Id'*) echo "true cid sha256:abc 4242" ;;
  *) echo true ;;
  esac ;;
image) [ -z "$NO_IMAGE" ] || exit 1; echo 'sha256:abc {"netrun.standin":"1"}' ;;
rm) rm -f "$STATE" ;;
run)
  [ -z "$RUN_RC" ] || { echo "boom: no router" >&2; exit "$RUN_RC"; }
  : > "$STATE"; echo lib > "$LIB"; echo cid ;;
esac
"""


def run_router(tmp_path: Path, script: str, **env: str) -> tuple[dict[str, str], list[str], str]:
    """Run ``script`` with the fake docker: (its sections, docker's calls, stdout)."""
    docker = tmp_path / "docker"
    docker.write_text(FAKE_DOCKER)
    docker.chmod(0o755)
    log = tmp_path / "log"
    log.write_text("")
    base = {"PATH": f"{tmp_path}:/usr/bin:/bin", "LOG": str(log)}
    base |= {"STATE": str(tmp_path / "running"), "LIB": str(tmp_path / "ff" / "libfsocket.so")}
    (tmp_path / "ff").mkdir(exist_ok=True)
    out = subprocess.run(
        ["sh", "-c", script], capture_output=True, text=True, env=base | env, timeout=60
    )
    return launch.sections(out.stdout), log.read_text().splitlines(), out.stdout


def split_plan(tmp_path: Path) -> router.RouterPlan:
    return router.RouterPlan(
        docker="docker", name="freeflow", library=str(tmp_path / "ff" / "libfsocket.so"),
        argv=["docker", "run", "-d", "--name", "freeflow", "img"], image_id=None,
        image="img", timeout=5, vnet="10.244.0.0/16", subnet_env="/x/subnet.env",
        network="bridge", scratch=str(tmp_path / "work" / "router-state.out"),
    )  # fmt: skip


def test_the_router_starts_in_the_lead_and_the_start_script_waits_for_it(
    tmp_path: Path,
) -> None:
    """``begin`` (sent first: ContainerMode.lead) starts the router in the background; the
    start script (``finish``) waits for it and reads what it did, one ``docker run``."""
    plan = split_plan(tmp_path)
    script = (
        f'{router.begin(plan)}\necho ==netrun:rr==; echo "${{nr_rr:+set}}"\n{router.finish(plan)}'
    )
    found, calls, out = run_router(tmp_path, script)
    assert found["rr"].strip() == "set", out
    assert found["router"].strip() == "started cid sha256:abc 4242", out
    assert found["routerpid"].strip() == "4242 4242"
    assert found["vnet"].strip() == "10.244.0.0/16"
    assert sum(c.startswith("run ") for c in calls) == 1, calls
    assert script.count("--name freeflow") == 1  # the log shows each start once


def test_a_missing_image_starts_nothing_early(tmp_path: Path) -> None:
    """Without its image the lead starts no router (the checks stop the script for the
    controller to load it); a start script that does go on runs it itself."""
    plan = split_plan(tmp_path)
    script = (
        f'{router.begin(plan)}\necho ==netrun:rr==; echo "${{nr_rr:+set}}"\n{router.finish(plan)}'
    )
    found, calls, out = run_router(tmp_path, script, NO_IMAGE="1")
    assert found["rr"].strip() == "", out
    assert found["router"].startswith("started"), out
    assert sum(c.startswith("run ") for c in calls) == 1, calls


def test_the_router_image_is_looked_up_once_in_the_hosts_first_command(
    tmp_path: Path,
) -> None:
    """Sent in the preamble (ContainerMode.lead), ``begin`` takes the router image's id and
    labels from the preamble's own background lookup (launch.LOOKED) instead of asking
    docker again; sent alone, it asks docker itself."""
    plan = split_plan(tmp_path)
    work = str(tmp_path / "work")
    pre = launch.preamble(None, "docker", ["app", "img"], work, lead=router.begin(plan))
    found, calls, out = run_router(tmp_path, pre + router.finish(plan))
    assert [c for c in calls if c.startswith("image") and c.endswith(" img")] == [
        f"image inspect --format {launch.ID_LABELS} img"
    ], calls
    assert found["router"].startswith("started"), out
    assert found["image1"].strip() == "sha256:abc", out  # the id alone, as before
    assert '"netrun.standin"' in found["standin"], out
    assert router.read(found, plan, "alpha", "run").standin

    alone, calls, out = run_router(tmp_path, router.begin(plan) + "\n" + router.finish(plan))
    assert [c for c in calls if c.startswith("image")] == [
        f"image inspect -f {launch.ID_LABELS} img"
    ], calls
    assert router.read(alone, plan, "alpha", "run").standin


def test_a_router_run_that_failed_in_the_lead_is_reported(tmp_path: Path) -> None:
    plan = split_plan(tmp_path)
    script = f"{router.begin(plan)}\n{router.finish(plan)}"
    found, _, out = run_router(tmp_path, script, RUN_RC="125")
    assert found["router"].splitlines() == ["runfailed", "boom: no router"], out
    with pytest.raises(dk.DockerError, match="docker run failed"):
        router.read(found, plan, "alpha", "run")
