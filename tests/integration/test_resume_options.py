"""--resume refuses options that differ from the run it resumes, naming them (exit 2),
and the run's folder is left as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.conftest import LabHandle
from tests.integration.helpers import entry, error_lines, run_netrun, write_scenario

pytestmark = pytest.mark.integration


def test_resume_with_other_options_is_refused(
    lab: LabHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    scen = write_scenario(tmp_path, [entry("one"), entry("two")], name="resumeopts")
    out = tmp_path / "out"
    first = run_netrun([scen, "-i", lab.inventory, "-o", out, "-q"], cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    saved = (out / "results.json").read_bytes()
    res = run_netrun([scen, "-i", lab.inventory, "--resume", out, "-e", "duration=2"], cwd=tmp_path)
    assert res.returncode == 2, res.stdout + res.stderr
    [line] = error_lines(res.stderr)
    assert f"--resume {out}: " in line
    assert "duration is 2 now, was 1 (in one, two)" in line, line
    assert (out / "results.json").read_bytes() == saved
    same = run_netrun([scen, "-i", lab.inventory, "--resume", out, "-q"], cwd=tmp_path)
    assert same.returncode == 0, same.stderr
