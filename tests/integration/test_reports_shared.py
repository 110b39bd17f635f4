"""Reports a team can share: a run's files follow the umask, and report.html is one page.

With umask 022 every file of the run folder (results.json, report.txt, report.html, raw
iperf3 outputs, PNGs, the log) is 0644, so a team web server can serve them; with 077 all
are private. report.html carries its plots inline, a sweep as a curve, and no password
(the secrets suite searches every file for the passwords).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.integration.conftest import LabHandle
from tests.integration.helpers import entry, run_netrun, write_scenario

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(("mask", "mode"), [(0o022, 0o644), (0o077, 0o600)])
def test_run_files_follow_the_umask(
    lab: LabHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mask: int, mode: int
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    tests = [entry("tp"), entry("sz", protocol="udp", bitrate="50M", sweep={"length": [400, 1400]})]
    scen = write_scenario(tmp_path, tests, name="shared")
    out = tmp_path / "out"
    old = os.umask(mask)
    try:
        res = run_netrun([scen, "-i", lab.inventory, "-o", out, "-q", "--plot"], cwd=tmp_path)
    finally:
        os.umask(old)
    assert res.returncode == 0, res.stderr
    files = sorted(p for p in out.rglob("*") if p.is_file())
    names = {p.name for p in files}
    assert {"results.json", "report.txt", "report.html", "sweeps.png", "intervals.png"} <= names
    assert any(p.parent.name == "raw" for p in files)
    wrong = {str(p.relative_to(out)): oct(p.stat().st_mode & 0o777) for p in files
             if p.stat().st_mode & 0o777 != mode}  # fmt: skip
    assert not wrong, f"umask {oct(mask)}: expected {oct(mode)}: {wrong}"
    page = (out / "report.html").read_text()
    assert page.count('src="data:image/png;base64,') == 3, "throughput, intervals, sweeps"
    assert not re.search(r'(src|href)="(?!data:)', page), "nothing outside the page"
