"""The netrun process's start and end (netrun.cli.lifetime): a quick exit loses no output
and never cuts a thread the interpreter would have waited for."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )


def test_leave_flushes_output_and_the_log_and_keeps_the_code(tmp_path: Path) -> None:
    done = run(
        "import logging, sys\n"
        "from netrun.cli import lifetime\n"
        f"logging.basicConfig(filename={str(tmp_path / 'log')!r}, level=logging.INFO)\n"
        "logging.info('logged')\n"
        "print('table', end='')\n"
        "sys.stderr.write('said')\n"
        "lifetime.leave(3)\n"
    )
    assert (done.returncode, done.stdout, done.stderr) == (3, "table", "said")
    assert "logged" in (tmp_path / "log").read_text()


def test_a_thread_the_interpreter_waits_for_still_ends() -> None:
    done = run(
        "import threading, time\n"
        "from netrun.cli import lifetime\n"
        "t = threading.Thread(target=lambda: (time.sleep(0.2), print('thread done')))\n"
        "t.start()\n"
        "lifetime.leave(1)\n"
    )
    assert done.returncode == 1 and done.stdout == "thread done\n"


def test_the_collector_runs_again_after_the_start() -> None:
    done = run(
        "import gc\n"
        "from netrun.cli import lifetime\n"
        "lifetime.pause_collector(); paused = gc.isenabled()\n"
        "lifetime.collect_again(); print(paused, gc.isenabled(), gc.get_freeze_count() > 0)\n"
    )
    assert done.stdout.split() == ["False", "True", "True"]
