"""The lab's --iperf3 option: source checks, the build cache, config and inventory.

Uses ../shared/third_party/iperf.bundle (or NETRUN_IPERF3_SRC) when present; the builds
themselves run in tests/integration/test_iperf3_versions_lab.py (and `make iperf3-versions`).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from netrun.errors import NetrunError
from netrun.lab import inventory
from netrun.lab import iperf3 as lab_iperf3
from netrun.lab.plan import LabConfig, plan
from tests.conftest import ROOT

BUNDLE = Path(
    os.environ.get(lab_iperf3.SOURCE_ENV) or ROOT.parent / "shared" / "third_party" / "iperf.bundle"
)
needs_bundle = pytest.mark.skipif(not BUNDLE.exists(), reason=f"no iperf bundle at {BUNDLE}")


@needs_bundle
@pytest.mark.parametrize("version", ["3.5", "3.19.1", "3.21"])
def test_source_finds_each_tag_of_the_bundle(version: str) -> None:
    src = lab_iperf3.source(BUNDLE, version)
    assert len(src.commit) == 40 and src.key == f"{version}-{src.commit[:12]}"


@needs_bundle
def test_an_unknown_tag_names_the_newest_ones() -> None:
    with pytest.raises(NetrunError, match=r"has no tag 3\.4\b.*3\.21"):
        lab_iperf3.source(BUNDLE, "3.4")


def test_bad_versions_and_sources_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(NetrunError, match=r"a release tag such as 3\.9"):
        lab_iperf3.source(tmp_path, "latest")
    with pytest.raises(NetrunError, match=r"needs --iperf3-src \(or NETRUN_IPERF3_SRC\)"):
        lab_iperf3.source(None, "3.9")
    with pytest.raises(NetrunError, match=r"github\.com/esnet/iperf"):
        lab_iperf3.source(tmp_path / "nope", "3.9")


def test_a_cached_build_is_not_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NETRUN_CACHE_DIR", str(tmp_path))
    src = lab_iperf3.Source(path=tmp_path / "src", version="3.9", commit="a" * 40)
    done = tmp_path / "iperf3" / src.key / "bin"
    done.mkdir(parents=True)
    (done / "iperf3").write_text("#!/bin/sh\n")
    assert lab_iperf3.build(src) == done.parent  # no source needed: nothing is built


def test_install_copies_and_the_inventory_names_it(tmp_path: Path) -> None:
    built = tmp_path / "cache" / "bin"
    built.mkdir(parents=True)
    (built / "iperf3").write_text("#!/bin/sh\necho iperf 3.9\n")
    state = tmp_path / "state"
    target = lab_iperf3.install(built.parent, state)
    assert target == state / "iperf3" / "bin" / "iperf3" and os.access(target, os.X_OK)
    cfg = LabConfig(state_dir=state, iperf3="3.9", iperf3_src=tmp_path)
    data = yaml.safe_load(inventory.render(plan(cfg)))
    assert data["all"]["vars"]["netrun_iperf3"] == str(target)
    assert "netrun_iperf3" not in yaml.safe_load(inventory.render(plan(LabConfig())))["all"]["vars"]
    lab_iperf3.remove(state)
    assert not target.exists()


def test_the_release_is_saved_and_may_switch_on_a_running_lab(tmp_path: Path) -> None:
    cfg = LabConfig(iperf3="3.16", iperf3_src=tmp_path)
    again = LabConfig.from_json(cfg.to_json())
    assert again == cfg
    assert LabConfig().same_lab(cfg)  # not part of the lab's identity, as freeflow_src
    assert LabConfig.from_json({**LabConfig().to_json()}).iperf3 is None
