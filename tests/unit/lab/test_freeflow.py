"""The lab's real-FreeFlow option: source checks, the build cache, config and inventory.

Uses ../shared/third_party/freeflow.bundle (or NETRUN_FREEFLOW_SRC) when present; the
build itself runs in tests/integration/test_freeflow_real.py.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from netrun.errors import NetrunError
from netrun.lab import build_cache, freeflow, inventory
from netrun.lab.plan import LabConfig, plan
from tests.conftest import ROOT

BUNDLE = Path(
    os.environ.get("NETRUN_FREEFLOW_SRC")
    or ROOT.parent / "shared" / "third_party" / "freeflow.bundle"
)
needs_bundle = pytest.mark.skipif(not BUNDLE.exists(), reason=f"no FreeFlow bundle at {BUNDLE}")


@needs_bundle
def test_source_reads_both_branches_of_a_bundle() -> None:
    src = freeflow.source(BUNDLE)
    assert len(src.tcp) == 40 and len(src.master) == 40 and src.tcp != src.master
    assert src.key == f"{src.tcp[:12]}-{src.master[:12]}"
    assert src.image == f"netrun-lab/freeflow:tcp-{src.tcp[:12]}"


@needs_bundle
def test_source_reads_a_clone_with_origin_branches(tmp_path: Path) -> None:
    clone = tmp_path / "Freeflow"
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(BUNDLE), str(clone)], check=True)
    assert freeflow.source(clone) == replace(freeflow.source(BUNDLE), path=clone)


def test_missing_source_names_the_upstream(tmp_path: Path) -> None:
    with pytest.raises(NetrunError, match=r"github\.com/microsoft/Freeflow"):
        freeflow.source(tmp_path / "nope")


def test_source_without_the_tcp_branch(tmp_path: Path) -> None:
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q", "-b", "master"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    with pytest.raises(NetrunError, match="no tcp branch"):
        freeflow.source(tmp_path)


def test_a_cached_build_is_not_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(build_cache.CACHE_ENV, str(tmp_path))
    src = freeflow.Source(path=tmp_path / "src", tcp="a" * 40, master="b" * 40)
    done = tmp_path / "freeflow" / src.key
    done.mkdir(parents=True)
    (done / "router").write_text("")
    (done / "libfsocket.so").write_text("")
    said: list[str] = []
    assert freeflow.build(src, said.append) == done
    assert said == []  # no "building" line: the source path is never even read


def test_freeflow_src_needs_docker_and_is_not_the_labs_identity() -> None:
    plain = LabConfig(docker=True)
    real = LabConfig(docker=True, freeflow_src=Path("/src/Freeflow"))
    assert real.same_lab(plain) and plain.same_lab(real)
    assert LabConfig.from_json(real.to_json()) == real
    assert LabConfig.from_json(plain.to_json()).freeflow_src is None
    problems = LabConfig(freeflow_src=Path("/src/Freeflow")).problems()
    assert any("--freeflow-src needs --docker" in p for p in problems), problems


def test_inventory_points_router_image_at_the_real_router() -> None:
    lab = plan(LabConfig(docker=True, hosts=2))
    standin = yaml.safe_load(inventory.render(lab))["all"]["vars"]
    assert standin["netrun_router_image"] == "netrun-lab/freeflow-standin:latest"
    real = yaml.safe_load(inventory.render(lab, "netrun-lab/freeflow:tcp-d4df2ed5cd01"))
    assert real["all"]["vars"]["netrun_router_image"] == "netrun-lab/freeflow:tcp-d4df2ed5cd01"
    hosts = real["all"]["hosts"]
    assert len({h["netrun_freeflow_dir"] for h in hosts.values()}) == 2  # one /freeflow each
