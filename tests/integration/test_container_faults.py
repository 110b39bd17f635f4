"""The container modes when things go wrong: bad input, a broken engine, interruptions.

Every failure must be one clear line naming the host (or the path or network at fault),
the run must exit 1 (a test failed), and nothing may be left behind: no labelled container
(routers included), no iperf3 in the lab, no run folder. Interrupted runs must exit 130
(SIGINT) or 143 (SIGTERM) within seconds, and ``netrun cleanup`` must remove what a
SIGKILLed run left.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from netrun.lab import images
from tests.integration.conftest import LabHandle
from tests.integration.helpers import (
    assert_nothing_left,
    entry,
    load_results,
    netrun_process,
    run_dirs,
    run_netrun,
    wait_for,
    write_inventory,
    write_scenario,
)
from tests.integration.test_container_modes import (
    IPERF3_IMAGE,
    ROUTER,
    container_scenario,
    containers_named,
    failed_error,
    labelled,
    netrun,
    nothing_left,  # noqa: F401  (the autouse leftovers check)
    run_ok,
)

pytestmark = [pytest.mark.integration, pytest.mark.docker]

PAIR = ("alpha", "bravo")
STANDIN_IMAGE = "netrun-lab/freeflow-standin:latest"
STANDIN_LIBRARY = "/opt/netrun-standin/libfsocket.so"  # where the stand-in image keeps it


def docker_quiet(lab: LabHandle, host: str, *args: str) -> subprocess.CompletedProcess[str]:
    """docker against a host's daemon, failures ignored (for clean-up in finally)."""
    return subprocess.run(
        ["docker", "-H", lab.docker_host(host), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def freeflow_dirs_inventory(tmp: Path, lab: LabHandle, dirs: dict[str, Path]) -> Path:
    """The lab inventory with other FreeFlow folders for some hosts."""
    host_vars = {h: {"netrun_freeflow_dir": str(d)} for h, d in dirs.items()}
    return write_inventory(tmp, lab, host_vars=host_vars)


def has_image(lab: LabHandle, host: str, image: str) -> bool:
    return docker_quiet(lab, host, "image", "inspect", image).returncode == 0


# -- bad input ---------------------------------------------------------------------------
def test_missing_image_with_pull_never(docker_lab: LabHandle, tmp_path: Path) -> None:
    scenario = container_scenario(tmp_path, "noimg", "docker")
    res = netrun(tmp_path, scenario, docker_lab.inventory, "-e", "image=netrun-lab/nope:1")
    error = failed_error(tmp_path, res, "noimg")
    assert error.startswith(("alpha: ", "bravo: ")), error
    assert "netrun-lab/nope:1" in error and "pull is 'never'" in error, error


def test_missing_image_in_the_scenario(docker_lab: LabHandle, tmp_path: Path) -> None:
    scenario = container_scenario(tmp_path, "noimg", "flannel", image="netrun-lab/nope:2")
    res = netrun(tmp_path, scenario, docker_lab.inventory)
    error = failed_error(tmp_path, res, "noimg")
    assert error.startswith(("alpha: ", "bravo: ")) and "netrun-lab/nope:2" in error, error


@pytest.mark.faults
def test_docker_not_installed(docker_lab: LabHandle, tmp_path: Path) -> None:
    scenario = container_scenario(tmp_path, "nodocker", "docker", docker="/nonexistent/docker")
    res = netrun(tmp_path, scenario, docker_lab.inventory)
    error = failed_error(tmp_path, res, "nodocker")
    assert error.startswith(("alpha: ", "bravo: ")), error
    assert "docker is not installed" in error, error


@pytest.mark.faults
def test_docker_daemon_stopped_on_one_host(docker_lab: LabHandle, tmp_path: Path) -> None:
    real = shutil.which("docker")
    assert real is not None
    wrapper = docker_lab.bin_dir("bravo") / "docker"
    wrapper.write_text(f'#!/bin/sh\nexec {real} -H unix:///nonexistent.sock "$@"\n')
    wrapper.chmod(0o755)
    try:
        scenario = container_scenario(tmp_path, "stopped", "docker")
        res = netrun(tmp_path, scenario, docker_lab.inventory)
        error = failed_error(tmp_path, res, "stopped")
    finally:
        wrapper.unlink()
    assert error.startswith("bravo: "), error
    assert "Docker engine is not running" in error, error
    assert "Cannot connect to the Docker daemon" in error, error


@contextlib.contextmanager
def committed_image(
    lab: LabHandle, image: str, create: list[str], files: dict[Path, str] | None = None
) -> Iterator[str]:
    """A test image on alpha and bravo: the lab image created with ``create`` arguments,
    ``files`` copied in, and committed; removed again afterwards."""
    try:
        for host in PAIR:
            name = lab.docker(host, "create", IPERF3_IMAGE, *create).strip()
            try:
                for src, dst in (files or {}).items():
                    lab.docker(host, "cp", str(src), f"{name}:{dst}")
                lab.docker(host, "commit", name, image)
            finally:
                docker_quiet(lab, host, "rm", "-f", name)
        yield image
    finally:
        for host in PAIR:
            docker_quiet(lab, host, "rmi", "-f", image)


@pytest.fixture
def boom_image(docker_lab: LabHandle, tmp_path: Path) -> Iterator[str]:
    """An image whose iperf3 prints "boom" and exits 1, on alpha and bravo."""
    script = tmp_path / "iperf3"
    script.write_text('#!/bin/sh\necho "boom: iperf3 refuses to start" >&2\nexit 1\n')
    script.chmod(0o755)
    with committed_image(
        docker_lab, "netrun-test/boom:1", [], {script: "/usr/bin/iperf3"}
    ) as image:
        yield image


def test_container_that_exits_at_once(
    docker_lab: LabHandle, tmp_path: Path, boom_image: str
) -> None:
    scenario = container_scenario(tmp_path, "boom", "docker", image=boom_image)
    res = netrun(tmp_path, scenario, docker_lab.inventory)
    error = failed_error(tmp_path, res, "boom")
    assert error.startswith(("alpha: ", "bravo: ")), error
    assert "exited at once" in error and "boom: iperf3 refuses to start" in error, error


@pytest.fixture
def silent_router_image(docker_lab: LabHandle) -> Iterator[str]:
    """A "router" that keeps running (an idle iperf3 server) but never publishes a library."""
    with committed_image(docker_lab, "netrun-test/silent-router:1", ["-s"]) as image:
        yield image


def test_router_that_never_publishes_the_library(
    docker_lab: LabHandle, tmp_path: Path, silent_router_image: str
) -> None:
    # Fresh FreeFlow folders: a library an earlier router left must not count as published.
    dirs = {h: tmp_path / f"freeflow-{h}" for h in PAIR}
    inv = write_inventory(
        tmp_path,
        docker_lab,
        host_vars={h: {"netrun_freeflow_dir": str(d)} for h, d in dirs.items()},
    )
    scenario = container_scenario(
        tmp_path, "norouter", "freeflow", router_image=silent_router_image, router_timeout=2
    )
    started = time.monotonic()
    res = netrun(tmp_path, scenario, inv)
    assert time.monotonic() - started < 60
    error = failed_error(tmp_path, res, "norouter")
    assert error.startswith(("alpha: ", "bravo: ")), error
    assert f"FreeFlow router '{ROUTER}' did not publish" in error and "within 2s" in error, error
    for host in PAIR:
        assert containers_named(docker_lab, host, ROUTER) == [], f"router left on {host}"


def test_router_that_exits_at_once(docker_lab: LabHandle, tmp_path: Path) -> None:
    dirs = {h: tmp_path / f"freeflow-{h}" for h in PAIR}
    inv = write_inventory(
        tmp_path,
        docker_lab,
        host_vars={h: {"netrun_freeflow_dir": str(d)} for h, d in dirs.items()},
    )
    # The iperf3 image, run with no arguments, prints its usage and exits.
    scenario = container_scenario(
        tmp_path, "deadrouter", "freeflow", router_image=IPERF3_IMAGE, router_timeout=20
    )
    started = time.monotonic()
    res = netrun(tmp_path, scenario, inv)
    assert time.monotonic() - started < 20, "a dead router must fail at once, not time out"
    error = failed_error(tmp_path, res, "deadrouter")
    assert f"FreeFlow router '{ROUTER}' exited at once" in error, error
    for host in PAIR:
        assert containers_named(docker_lab, host, ROUTER) == [], f"router left on {host}"


def test_dead_router_with_a_stale_library_fails(docker_lab: LabHandle, tmp_path: Path) -> None:
    stale = {h: tmp_path / f"freeflow-{h}" for h in PAIR}
    for host, d in stale.items():
        d.mkdir()
        name = docker_lab.docker(host, "create", STANDIN_IMAGE).strip()
        try:
            docker_lab.docker(host, "cp", f"{name}:{STANDIN_LIBRARY}", str(d / "libfsocket.so"))
        finally:
            docker_quiet(docker_lab, host, "rm", "-f", name)
        assert (d / "libfsocket.so").stat().st_size > 0
    inv = write_inventory(
        tmp_path,
        docker_lab,
        host_vars={h: {"netrun_freeflow_dir": str(d)} for h, d in stale.items()},
    )
    scenario = container_scenario(
        tmp_path, "stale", "freeflow", router_image=IPERF3_IMAGE, router_timeout=2
    )
    res = netrun(tmp_path, scenario, inv)
    error = failed_error(tmp_path, res, "stale")
    assert "router" in error, error


def test_two_hosts_on_one_freeflow_dir_are_refused(docker_lab: LabHandle, tmp_path: Path) -> None:
    """One folder seen by both hosts (the lab's namespaces share this machine's files):
    their routers' socket and library would collide there, so the second host to claim
    it starts nothing and the test fails with one line (issue 23)."""
    shared = tmp_path / "freeflow-shared"
    shared.mkdir()
    inv = write_inventory(
        tmp_path, docker_lab, host_vars={h: {"netrun_freeflow_dir": str(shared)} for h in PAIR}
    )
    scenario = container_scenario(tmp_path, "oneff", "freeflow")
    res = netrun(tmp_path, scenario, inv)
    error = failed_error(tmp_path, res, "oneff")
    first, second = ("alpha", "bravo") if error.startswith("bravo: ") else ("bravo", "alpha")
    assert error == (
        f"{second}: freeflow_dir {shared} is {first}'s too in this run (one folder seen by "
        "both hosts: FreeFlow's router socket and library there would collide); give each "
        "host its own netrun_freeflow_dir"
    ), error
    assert containers_named(docker_lab, second, ROUTER) == []  # it started nothing
    assert containers_named(docker_lab, first, ROUTER) == []  # the run removed the other
    assert not list(shared.glob(".netrun-*"))  # the claim went with the run


@pytest.fixture
def shell_less_image(docker_lab: LabHandle, tmp_path: Path) -> Iterator[str]:
    """An image holding iperf3 and its libraries (and the stand-in library's) and no sh,
    on alpha and bravo."""
    name = "netrun-test/iperf3-no-sh:1"
    root = tmp_path / "no-sh-root"
    fsocket = images.build_fsocket(tmp_path / "libfsocket.so")
    images.build_root(root, ["iperf3"], libs_for=(fsocket,))
    assert not (root / "usr" / "bin" / "sh").exists()
    image = images.Image(name, ('ENTRYPOINT ["iperf3"]',), images.tar_root(root))
    try:
        for host in PAIR:
            images.load(docker_lab.docker_host(host), image)
        yield name
    finally:
        for host in PAIR:
            docker_quiet(docker_lab, host, "rmi", "-f", name)


def test_freeflow_with_an_image_without_sh(
    docker_lab: LabHandle, tmp_path: Path, shell_less_image: str
) -> None:
    """A container started beside the router it starts waits in sh for the library; an
    image without sh fails that start, and the plain one (after the router) measures."""
    scenario = container_scenario(tmp_path, "nosh", "freeflow", image=shell_less_image)
    res = netrun(tmp_path, scenario, docker_lab.inventory)
    doc = load_results(tmp_path / "out")
    rec = doc["tests"][0]
    assert rec["status"] == "ok", (rec["error"], res.stderr)
    assert rec["details"]["library_loaded"] == {"server": True, "client": True}
    assert {h: r["reused"] for h, r in rec["details"]["routers"].items()} == {
        "alpha": False,
        "bravo": False,
    }


def test_unknown_network(docker_lab: LabHandle, tmp_path: Path) -> None:
    scenario = container_scenario(tmp_path, "nonet", "docker", network="nosuchnet")
    res = netrun(tmp_path, scenario, docker_lab.inventory)
    error = failed_error(tmp_path, res, "nonet")
    assert error.startswith(("alpha: ", "bravo: ")), error
    assert "'nosuchnet' does not exist" in error, error


def test_missing_image_archive(docker_lab: LabHandle, tmp_path: Path) -> None:
    scenario = container_scenario(
        tmp_path,
        "noarchive",
        "docker",
        image="netrun-lab/nope:3",
        image_archive="/nonexistent/x.tar",
        pull="never",
    )
    res = netrun(tmp_path, scenario, docker_lab.inventory)
    error = failed_error(tmp_path, res, "noarchive")
    assert "/nonexistent/x.tar" in error and "not found" in error, error


def test_image_archive_provides_a_missing_image(docker_lab: LabHandle, tmp_path: Path) -> None:
    image = "netrun-lab/iperf3-archive:1"
    archive = tmp_path / "iperf3-archive.tar"
    try:
        docker_lab.docker("alpha", "tag", IPERF3_IMAGE, image)
        docker_lab.docker("alpha", "save", "-o", str(archive), image)
        docker_lab.docker("alpha", "rmi", image)  # only the tag goes: the layers stay
        assert not any(has_image(docker_lab, h, image) for h in docker_lab.hosts)
        scenario = container_scenario(
            tmp_path, "archive", "docker", image=image, image_archive=str(archive), pull="never"
        )
        doc = run_ok(tmp_path, scenario, docker_lab.inventory)
        rec = doc["tests"][0]
        assert rec["status"] == "ok"
        ids = rec["details"]["image_ids"][image]
        want = docker_lab.docker("alpha", "image", "inspect", "-f", "{{.Id}}", IPERF3_IMAGE)
        assert ids == {"alpha": want.strip(), "bravo": want.strip()}
        assert all(has_image(docker_lab, h, image) for h in PAIR)
        assert not [t for d in run_dirs(doc["run_id"]) for t in d.glob("*.tar")]
    finally:
        for host in docker_lab.hosts:
            docker_quiet(docker_lab, host, "rmi", image)


# -- interruption ------------------------------------------------------------------------
def running_app_container(lab: LabHandle) -> bool:
    """Whether a test's client container (netrun.role=client) runs on any host yet."""
    return any(
        lab.docker(
            host, "ps", "--filter", "label=netrun.run_id", "--filter", "label=netrun.role=client",
            "-q",
        ).strip()
        for host in lab.hosts
    )  # fmt: skip


def client_measuring(lab: LabHandle) -> bool:
    """Whether an iperf3 client runs (docker exec) in a test's client container."""
    for host in lab.hosts:
        names = lab.docker(
            host, "ps", "--filter", "label=netrun.role=client", "--format", "{{.Names}}"
        ).split()
        for name in names:
            try:
                if " -c " in lab.docker(host, "top", name):
                    return True
            except AssertionError:  # gone meanwhile
                continue
    return False


@pytest.mark.faults
@pytest.mark.parametrize(
    ("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["sigint", "sigterm"]
)
@pytest.mark.parametrize("when", ["probe", "test"])
def test_interrupt_tears_containers_and_routers_down(
    docker_lab: LabHandle, tmp_path: Path, sig: signal.Signals, code: int, when: str
) -> None:
    """Interrupted while the probes start the routers and containers
    (netrun.modes.docker.savers.probe), or while the client measures: everything goes,
    routers included."""
    scenario = write_scenario(tmp_path, [entry("long", mode="freeflow", duration=10)])
    ready = running_app_container if when == "probe" else client_measuring
    with netrun_process(
        [scenario, "-i", docker_lab.inventory, "-o", "out", "-q"], cwd=tmp_path
    ) as proc:
        assert wait_for(lambda: ready(docker_lab) or proc.poll() is not None, 60)
        assert proc.poll() is None, proc.communicate()
        assert labelled(docker_lab, "netrun.run_id")  # routers and app containers run
        sent = time.monotonic()
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    assert proc.returncode == code, stderr
    assert took < 20, took
    assert "Traceback" not in stderr, stderr
    doc = load_results(tmp_path / "out")
    assert doc["status"] == "interrupted"
    failed = bool(doc["tests"]) and doc["tests"][-1]["status"] == "failed"
    # in the probes, the test may not have begun: it is then listed as not run
    assert failed or (when == "probe" and doc.get("not_run") == ["long"]), doc
    assert labelled(docker_lab, "netrun") == {}
    for host in PAIR:
        assert containers_named(docker_lab, host, ROUTER) == []


@pytest.mark.faults
def test_cleanup_after_sigkill(docker_lab: LabHandle, tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path, [entry("killed", mode="docker", duration=10)])
    with netrun_process(
        [scenario, "-i", docker_lab.inventory, "-o", "out", "-q"], cwd=tmp_path
    ) as proc:
        assert wait_for(lambda: running_app_container(docker_lab) or proc.poll() is not None, 60)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    run_id = load_results(tmp_path / "out")["run_id"]
    left = labelled(docker_lab, f"netrun.run_id={run_id}")
    assert set(left) == {"alpha", "bravo"}, left
    # --run-id keeps the sweep to this run: other runs on this machine share /tmp.
    res = run_netrun(
        ["cleanup", "-i", docker_lab.inventory, "--run-id", run_id], cwd=tmp_path, timeout=120
    )
    assert res.returncode == 0, res.stderr
    # the label sweep is the run's undo record now (the older label sweep follows it)
    assert "undone: remove the run's containers" in res.stdout, res.stdout
    assert "undone: stop the time bound of container" in res.stdout, res.stdout
    assert labelled(docker_lab, "netrun") == {}
    assert_nothing_left(docker_lab, tmp_path / "out")


def test_cleanup_with_nothing_left(docker_lab: LabHandle, tmp_path: Path) -> None:
    """A cleanup of a run that left nothing says so per host."""
    res = run_netrun(
        ["cleanup", "-i", docker_lab.inventory, "--run-id", "0badc0de"], cwd=tmp_path, timeout=120
    )
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert sorted(lines) == [f"{h}: nothing left behind" for h in docker_lab.hosts], lines
