"""`netrun check` on the docker lab: the engine and the images a container test needs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.conftest import LabHandle
from tests.integration.helpers import entry, run_netrun, write_scenario

pytestmark = [pytest.mark.integration, pytest.mark.docker]


def test_check_finds_the_engine_and_names_a_missing_image(
    docker_lab: LabHandle, tmp_path: Path
) -> None:
    scen = write_scenario(tmp_path, [entry("dk", mode="docker")], name="checkdocker")
    res = run_netrun(["check", "-i", docker_lab.inventory, scen], cwd=tmp_path, timeout=180)
    assert res.returncode == 0, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    assert len(lines) == 2 and all(": ok: " in line for line in lines), lines
    assert all("docker engine " in line and "image " in line for line in lines), lines
    missing = "netrun-lab/not-there:1"
    res = run_netrun(
        ["check", "-i", docker_lab.inventory, scen, "-e", f"image={missing}"],
        cwd=tmp_path,
        timeout=180,
    )
    assert res.returncode == 1, res.stdout + res.stderr
    for line in res.stdout.splitlines():
        assert ": FAIL: " in line and f"image {missing} is not on the host" in line, line
        assert "docker pull" in line
