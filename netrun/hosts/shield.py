"""Commands that are cleanup: not cut short by an interrupt, nor by a second Ctrl-C.

A teardown that an interrupt could cut short would leave servers, containers or MTU
changes behind; its commands run inside ``cleaning()`` and its signals are held off by
``shielded()``. Lowest of netrun.hosts: every transport asks ``in_cleanup()``."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

_local = threading.local()


@contextlib.contextmanager
def cleaning() -> Iterator[None]:
    """Mark this thread's commands as cleanup: not cancellable by an interrupt."""
    before = getattr(_local, "cleaning", False)
    _local.cleaning = True
    try:
        yield
    finally:
        _local.cleaning = before


def in_cleanup() -> bool:
    """True inside ``cleaning()`` (in this thread, or in the step that started it)."""
    return bool(getattr(_local, "cleaning", False))


@contextlib.contextmanager
def shielded() -> Iterator[None]:
    """Ignore SIGINT/SIGTERM while cleaning up, so a second Ctrl-C cannot leave debris."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
