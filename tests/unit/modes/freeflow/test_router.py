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
