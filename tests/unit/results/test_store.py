"""ResultsDir when the disk says no: the first failure is kept, the run is not stopped."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from netrun.errors import NetrunError
from netrun.results.store import ResultsDir, load, write_file
from tests.conftest import RESULTS_FIXTURES


def temp_files(folder: Path) -> list[Path]:
    return list(folder.rglob(".*"))


def test_a_failed_write_is_kept_and_later_writes_still_tried(tmp_path: Path) -> None:
    out = ResultsDir(tmp_path / "run")
    (out.path / "results.json").mkdir()  # the rename over it fails
    out.save({"schema": 1})
    assert out.error is not None
    assert out.error.startswith(f"{out.path / 'results.json'}: cannot write (")
    assert "choose another results folder (-o)" in out.error
    first = out.error
    out.save_report("table\n")
    assert (out.path / "report.txt").read_text() == "table\n"
    assert out.error == first  # the first failure is the one reported
    assert temp_files(out.path) == []


def test_save_raw_says_when_nothing_was_saved(tmp_path: Path) -> None:
    out = ResultsDir(tmp_path / "run")
    (out.path / "raw").rmdir()
    (out.path / "raw").write_text("")  # raw/ is a file: no temp file can be made in it
    assert out.save_raw("t", 1, "{}", ".json") is None
    assert out.error is not None and "raw/t.r1.json" in out.error
    (out.path / "raw").unlink()
    (out.path / "raw").mkdir()
    assert out.save_raw("t", 1, "{}", ".json") == "raw/t.r1.json"


def test_a_raw_file_is_named_for_what_it_holds(tmp_path: Path) -> None:
    out = ResultsDir(tmp_path / "run")
    rel = out.save_raw("ping a/b", 2, "PING 10.0.0.1 56(84) bytes of data.\n", ".txt")
    assert rel is not None and rel.startswith("raw/") and rel.endswith(".r2.txt")
    assert (out.path / rel).read_text().startswith("PING ")


def test_a_run_saved_when_every_raw_file_was_named_json_still_loads() -> None:
    doc = load(RESULTS_FIXTURES / "ping-lab")  # ping's text, named .json then
    assert {s["raw"].rsplit(".", 1)[1] for s in doc["tests"]} == {"json"}


def test_an_interrupted_write_leaves_the_old_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "results.json"
    target.write_text("old\n")

    def interrupted(src: str, dst: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_file(target, "new\n")
    assert target.read_text() == "old\n"
    assert temp_files(tmp_path) == []


def test_a_folder_that_cannot_be_made_stops_at_once(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(NetrunError, match=r"cannot create the results folder .*-o"):
        ResultsDir(tmp_path / "file" / "run")


@pytest.mark.parametrize(("mask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_every_file_follows_the_umask(tmp_path: Path, mask: int, mode: int) -> None:
    """A team's web server must be able to read report.html, results.json and raw files
    as it reads the PNGs; mkstemp alone would make them all 0600."""
    old = os.umask(mask)
    try:
        out = ResultsDir(tmp_path / "run")
        out.save({"schema": 2})
        out.save_report("table\n")
        out.save_report("<html></html>\n", "report.html")
        raw = out.save_raw("t", 1, "{}", ".json")
        write_file(tmp_path / "other.txt", "x")
    finally:
        os.umask(old)
    assert raw is not None
    for path in [out.path / "results.json", out.path / "report.txt", out.path / "report.html",
                 out.path / raw, tmp_path / "other.txt"]:  # fmt: skip
        assert oct(path.stat().st_mode & 0o777) == oct(mode), path
