"""The lab's netperf build: source checks, the cache, and the inventory variables.

Uses ../shared/third_party/netperf.bundle (or NETRUN_NETPERF_SRC) when present; the build
itself runs in tests/integration/test_netperf_lab.py (when none is cached yet).
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from netrun.errors import NetrunError
from netrun.lab import build_cache, inventory, netperf
from netrun.lab.plan import LabConfig, plan
from tests.conftest import ROOT

BUNDLE = Path(
    os.environ.get("NETRUN_NETPERF_SRC")
    or ROOT.parent / "shared" / "third_party" / "netperf.bundle"
)
needs_bundle = pytest.mark.skipif(not BUNDLE.exists(), reason=f"no netperf bundle at {BUNDLE}")


@needs_bundle
def test_source_reads_the_master_branch_of_a_bundle() -> None:
    src = netperf.source(BUNDLE)
    assert len(src.commit) == 40 and src.key == src.commit[:12]


def test_a_missing_source_or_branch_names_the_upstream(tmp_path: Path) -> None:
    with pytest.raises(NetrunError, match=r"github\.com/HewlettPackard/netperf"):
        netperf.source(tmp_path / "nope")
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    with pytest.raises(NetrunError, match="no master branch"):
        netperf.source(tmp_path)


def fake_build(root: Path, key: str) -> Path:
    done = root / "netperf" / key
    (done / "bin").mkdir(parents=True)
    for name in netperf.PROGRAMS:
        (done / "bin" / name).write_text("")
    return done


def test_the_cache_shares_freeflows_root_and_is_not_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(build_cache.CACHE_ENV, str(tmp_path))
    assert netperf.cache_root() == tmp_path / "netperf" and netperf.cached() is None
    src = netperf.Source(path=tmp_path / "src", commit="c" * 40)
    done = fake_build(tmp_path, src.key)
    said: list[str] = []
    assert netperf.build(src, said.append) == done and said == []


def test_cached_is_the_newest_complete_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(build_cache.CACHE_ENV, str(tmp_path))
    old, new = fake_build(tmp_path, "a" * 12), fake_build(tmp_path, "b" * 12)
    os.utime(old / "bin" / "netperf", (time.time() - 100,) * 2)
    half = tmp_path / "netperf" / ".d" / "bin"
    half.mkdir(parents=True)  # a build under way is never taken
    assert netperf.cached() == new


def test_inventory_names_the_build_for_every_host() -> None:
    lab = plan(LabConfig(hosts=2))
    plain = yaml.safe_load(inventory.render(lab))["all"]["vars"]
    assert "netrun_netperf" not in plain
    build = Path("/var/cache/netrun/netperf/afc51ff97647")
    got = yaml.safe_load(inventory.render(lab, None, netperf.host_vars(build)))["all"]["vars"]
    assert got["netrun_netperf"] == f"{build}/bin/netperf"
    assert got["netrun_netserver"] == f"{build}/bin/netserver"
