"""netrun.lab.k8s_netperf: the build is cached by version; a bad version or a missing source
is one line naming the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from netrun.errors import NetrunError
from netrun.lab import k8s_netperf


def test_the_build_is_cached_by_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NETRUN_CACHE_DIR", str(tmp_path))
    assert k8s_netperf.cached("v0.1.42") is None
    binary = tmp_path / "k8s-netperf" / "v0.1.42" / "bin" / "k8s-netperf"
    binary.parent.mkdir(parents=True)
    binary.write_text("")
    assert k8s_netperf.cached("v0.1.42") == binary
    assert k8s_netperf.build(tmp_path / "absent", "v0.1.42") == binary  # no source needed
    assert k8s_netperf.cached() is None  # the default release is another folder


@pytest.mark.parametrize("version", ["0.1.43", "v0.1", "latest", "v0.1.43;id"])
def test_a_version_that_is_not_a_release_tag_is_refused(version: str) -> None:
    with pytest.raises(NetrunError, match=r"give a release tag such as v0\.1\.43"):
        k8s_netperf.build(Path("unused"), version)


def test_a_missing_source_names_the_option(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NETRUN_CACHE_DIR", str(tmp_path))
    with pytest.raises(NetrunError, match=r"not found: give --k8s-netperf-src"):
        k8s_netperf.build(tmp_path / "no-such.bundle")
