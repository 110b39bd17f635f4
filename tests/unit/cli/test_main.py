"""`netrun inventory --list | head`: a reader that leaves early ends netrun quietly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT


def test_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    inventory = tmp_path / "inv.ini"
    inventory.write_text(
        "".join(f"node{i:03} ansible_host=10.9.{i // 250}.{i % 250}\n" for i in range(3000))
    )
    reader = subprocess.Popen(
        ["head", "-c", "10"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL
    )
    done = subprocess.run(
        [sys.executable, "-m", "netrun", "inventory", "-i", str(inventory), "--list"],
        stdout=reader.stdin,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    reader.stdin.close()  # type: ignore[union-attr]
    reader.wait(timeout=10)
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    assert done.returncode in (0, 1)
