"""Fault suite, secrets: with ansible_password and ansible_become_password set, neither
string appears in anything netrun prints or writes.

The lab hosts log in as root with a key; ``ansible_become: true`` with a become password
makes every command run through the real ``sudo -S`` (sudo must be installed: see the
Makefile). As root, sudo needs no password and does not read it, so the password line is
left on the command's stdin: bravo's iperf3 here is a wrapper that first copies its stdin to
its stdout, as any tool reading stdin would, to prove no command ever gets to read it.
One run passes a test and fails another (charlie has no iperf3), then every report format,
the exporters, plots and ``netrun inventory`` are rendered; then every byte of output and
every file netrun wrote (results folder, JUnit, Prometheus, history database) is searched.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import LabHandle
from tests.integration.helpers import (
    check_fault,
    entry,
    lab_settings,
    run_netrun,
    run_under_fault,
    write_inventory,
    write_scenario,
)

pytestmark = [pytest.mark.integration, pytest.mark.faults]

#: Distinctive, and full of what a shell, YAML or a regex would read specially.
SSH_PASSWORD = "ssh-Pw'7f3a9c $(touch /tmp/x) *Zebra*"
BECOME_PASSWORD = 'sudo-Pw"51e0b2 ; Quokka\\n%s'
SECRETS = (SSH_PASSWORD, BECOME_PASSWORD)
FORMATS = ("table", "markdown", "csv", "json", "html")


@pytest.fixture(autouse=True)
def own_history(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """A history database (and its run lock) per test, so it can be searched too."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    yield


def stdin_echoing_iperf3(tmp_path: Path) -> Path:
    """An iperf3 that prints whatever is on its stdin first, then runs the real one."""
    real = shutil.which("iperf3")
    assert real, "iperf3 not installed"
    path = tmp_path / "bin" / "iperf3-echo"
    path.parent.mkdir()
    path.write_text(f'#!/bin/sh\ncat\nexec {real} "$@"\n')
    path.chmod(0o755)
    return path


def leaks(text: str | bytes, where: str) -> list[str]:
    data = text.encode() if isinstance(text, str) else text
    return [f"{where} holds {'the SSH' if s == SSH_PASSWORD else 'the become'} password"
            for s in SECRETS if s.encode() in data]  # fmt: skip


def files_under(*roots: Path) -> Iterator[Path]:
    for root in roots:
        if root.is_file():
            yield root
        elif root.is_dir():
            yield from (p for p in sorted(root.rglob("*")) if p.is_file())


def test_no_password_in_any_output_or_file(lab: LabHandle, tmp_path: Path) -> None:
    if not shutil.which("sudo"):
        pytest.skip("sudo not installed (make setup installs it)")
    before = lab_settings(lab)
    inv = write_inventory(
        tmp_path,
        lab,
        all_vars={
            "ansible_password": SSH_PASSWORD,
            "ansible_become": True,
            "ansible_become_password": BECOME_PASSWORD,
        },
        host_vars={
            "bravo": {"netrun_iperf3": str(stdin_echoing_iperf3(tmp_path))},
            "charlie": {"netrun_iperf3": "/nonexistent/iperf3"},
        },
    )
    scen = write_scenario(tmp_path, [entry("ab"), entry("cb", server="charlie")])
    out, junit, prom = tmp_path / "out", tmp_path / "junit.xml", tmp_path / "netrun.prom"
    run = run_under_fault(
        [scen, "-i", inv, "-o", out, "--plot", "--junit", junit, "--prometheus", prom],
        cwd=tmp_path,
        outdir=out,
        timeout=180,
    )
    check_fault(
        lab,
        run,
        fault="secrets: passwords set, one test passes, one fails",
        before=before,
        max_seconds=120,
        statuses={"ab": "ok", "cb": "failed"},
        host="charlie",
    )
    log = (out / "netrun.log").read_text()
    assert "sudo -S -p ''" in log, "commands did not go through sudo -S"
    found = leaks(run.proc.stdout, "run stdout") + leaks(run.proc.stderr, "run stderr")

    commands = [[*("report", out, "--format", fmt)] for fmt in FORMATS]
    commands += [["report", out, "--format", fmt, "-o", out / f"again.{fmt}"] for fmt in FORMATS]
    commands += [
        ["report", out, "--plot"],
        ["inventory", "-i", inv, "--list"],
        ["inventory", "-i", inv, "--host", "alpha"],
        ["history", "--last", "5"],
    ]
    for args in commands:
        res = run_netrun(args, cwd=tmp_path, timeout=120)
        assert res.returncode == 0, (args, res.stderr)
        assert "Traceback" not in res.stderr, res.stderr
        what = "netrun " + " ".join(map(str, args[:3]))
        found += leaks(res.stdout, f"{what} stdout") + leaks(res.stderr, f"{what} stderr")
    assert "****" in run_netrun(["inventory", "-i", inv, "--host", "alpha"], cwd=tmp_path).stdout

    written = list(files_under(out, junit, prom, tmp_path / "xdg"))
    names = {p.name for p in written}
    for expected in ("results.json", "netrun.log", "report.txt", "report.html", "junit.xml"):
        assert expected in names, f"{expected} not written: {sorted(names)}"
    assert any(p.parent.name == "raw" for p in written), "no raw iperf3 output saved"
    for path in written:
        found += leaks(path.read_bytes(), str(path.relative_to(tmp_path)))
    assert found == [], found
