"""netrun.proc: its sh, run for real by /bin/sh, reads /proc as its Python does."""

from __future__ import annotations

import os
import subprocess

from netrun import proc


def sh(script: str, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["/bin/sh", "-c", script], capture_output=True, text=True, timeout=timeout
    )


def test_the_start_time_and_boot_id_read_as_python_reads_them() -> None:
    pid = os.getpid()
    assert sh(f"p={pid}; {proc.start_time()}").stdout.strip() == proc.process_start(pid)
    assert sh(f"x={pid}; {proc.start_time('$x')}").stdout.strip() == proc.process_start(pid)
    assert sh(f"p=4194304; {proc.start_time()}").stdout == ""
    assert sh(proc.READ_BOOT_ID).stdout.strip() == proc.boot_id() != ""
    assert proc.process_start(4194304) is None
