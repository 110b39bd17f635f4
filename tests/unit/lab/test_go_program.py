"""netrun.lab.go_program: a Go program's build is cached by version, its script gets the
arguments flanneld's and turncat's scripts take, and a cached build needs no Go."""

from __future__ import annotations

from pathlib import Path

import pytest

from netrun.errors import NetrunError
from netrun.lab import flannel, go_program, stunner
from netrun.lab.go_program import GoProgram

SCRIPT = """\
printf '%s\\n' "GO=$GO" "$@" > "$(dirname "$0")/called"
out=$(eval echo "\\${$(( $# - 1 ))}")
mkdir -p "$out/bin" && echo built > "$out/bin/prog"
"""


def program(tmp_path: Path) -> GoProgram:
    script = tmp_path / "build.sh"
    script.write_text(SCRIPT)
    return GoProgram("a program", "prog-cache", "prog", "v1.0.0", script, timeout=60,
                     args=("example.com/cmd/prog",))  # fmt: skip


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NETRUN_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_a_build_runs_the_script_with_go_and_is_cached_by_version(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(go_program, "go_binary", lambda say=None: Path("/bin/true"))
    prog = program(tmp_path)
    assert prog.cached() is None
    said: list[str] = []
    binary = prog.build("v1.2.3", said.append)
    assert binary == cache / "prog-cache" / "v1.2.3" / "bin" / "prog"
    assert binary.read_text() == "built\n"
    called = (tmp_path / "called").read_text().splitlines()
    assert called[0] == "GO=/bin/true"
    assert called[1:3] == ["example.com/cmd/prog", "v1.2.3"]  # args, then the version
    assert called[4] == str(cache / "go")  # the Go caches every build of the lab shares
    assert prog.cached("v1.2.3") == binary and prog.cached() is None  # by version
    assert any("a program v1.2.3: built in" in line for line in said)


def test_a_cached_build_looks_for_no_go(tmp_path: Path, cache: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    def no_go(say: object = None) -> Path:
        raise AssertionError("Go looked for")

    monkeypatch.setattr(go_program, "go_binary", no_go)
    binary = cache / "prog-cache" / "v1.0.0" / "bin" / "prog"
    binary.parent.mkdir(parents=True)
    binary.write_text("")
    assert program(tmp_path).build() == binary


@pytest.mark.parametrize("version", ["1.0.0", "v1.0", "latest", "v1.0.0;id"])
def test_a_version_that_is_not_a_release_tag_is_refused(tmp_path: Path, version: str) -> None:
    with pytest.raises(NetrunError, match=r"prog version .*: give a release tag such as v1\.0\.0"):
        program(tmp_path).build(version)


def test_flanneld_and_turncat_keep_their_cache_folders(cache: Path) -> None:
    assert flannel.FLANNELD.build_dir() == cache / "flannel" / flannel.VERSION
    assert stunner.TURNCAT_BUILD.build_dir() == cache / "stunner" / stunner.VERSION
    assert stunner.TURNCAT_BUILD.args == (stunner.TURNCAT,)
