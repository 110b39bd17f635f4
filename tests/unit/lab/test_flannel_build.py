"""netrun.lab.flannel: flanneld's build is cached by version under the lab's cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from netrun.errors import NetrunError
from netrun.lab import flannel


def test_the_build_is_cached_by_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NETRUN_CACHE_DIR", str(tmp_path))
    assert flannel.cached("v0.28.4") is None
    binary = tmp_path / "flannel" / "v0.28.4" / "bin" / "flanneld"
    binary.parent.mkdir(parents=True)
    binary.write_text("")
    assert flannel.cached("v0.28.4") == binary
    assert flannel.build("v0.28.4") == binary  # a cached build is not rebuilt
    assert flannel.cached() is None  # the default release is another folder


@pytest.mark.parametrize("version", ["0.28.10", "v0.28", "latest", "v0.28.10;id"])
def test_a_version_that_is_not_a_release_tag_is_refused(version: str) -> None:
    with pytest.raises(NetrunError, match=r"give a release tag such as v0\.28\.10"):
        flannel.build(version)
