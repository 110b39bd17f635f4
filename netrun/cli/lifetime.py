"""The netrun process's own start and end, apart from what a command does.

A run's overhead is what the engineer waits for beyond the test (docs/benchmark.md), and
two costs of it are the interpreter's, not netrun's: the garbage collections that the
start's imports (some 500 modules) set off, though none of their objects is garbage, about
0.03 s; and the teardown of those modules, paramiko's transports and their threads once
everything is done, 0.03-0.05 s (the lab, 2026-12-04). The command pauses the collector
for the start and leaves with ``os._exit`` once its work is saved.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import sys
import threading
from typing import NoReturn


def pause_collector() -> None:
    """No garbage collection until ``collect_again``: the start only builds what lives on."""
    gc.disable()


def collect_again() -> None:
    """Collect garbage again (a run of hours makes some); what the start made is moved out
    of the collector's view first (gc.freeze), as it lives until the process ends."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def leave(code: int) -> NoReturn:
    """Exit with ``code`` once a command returned: every file it wrote is closed and every
    remote command has ended, so the streams and the log are flushed and the process ends
    without the interpreter's teardown; unless a thread the interpreter would wait for
    still runs, which it then waits for, as always."""
    others = [t for t in threading.enumerate() if t is not threading.current_thread()]
    if any(not t.daemon for t in others):
        sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a reader that left: the code stands
            stream.flush()
    logging.shutdown()
    os._exit(code)
