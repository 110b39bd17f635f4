"""Saving results.json while a run goes: at once for small runs, coalesced for large ones.

results.json is rewritten whole after every sample, so that a killed run keeps what it
measured. The cost grows with the document: a 32-host mesh (992 tests, ~2 MB) rewrote it
about 2,000 times, tens of seconds of JSON encoding under the lock every test's thread
needs. Past ``AT_ONCE`` samples a change is written within ``DELAY`` s, every change of
that window in one write; ``flush`` writes what is pending at once (the run's end).
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

#: Up to this many samples every change is written at once (every small run, every test).
AT_ONCE = 64
#: Past it, the longest a change waits for its write.
DELAY = 0.3


class Target(Protocol):
    def save(self, doc: dict[str, Any]) -> Any: ...


class Saver:
    """Writes ``doc`` to ``out`` after each change, holding ``lock`` (the document's)."""

    def __init__(self, out: Target, doc: dict[str, Any], lock: threading.RLock) -> None:
        self.out = out
        self.doc = doc
        self.lock = lock
        self._timer: threading.Timer | None = None
        self._dirty = False

    def changed(self) -> None:
        """The document changed: write it now, or within DELAY s for a large one."""
        with self.lock:
            self._dirty = True
            if len(self.doc.get("tests", ())) < AT_ONCE:
                self._write()
            elif self._timer is None:
                self._timer = threading.Timer(DELAY, self._write)
                self._timer.daemon = True
                self._timer.start()

    def flush(self) -> None:
        """Write what is pending now, and stop waiting to."""
        with self.lock:
            if self._timer is not None:
                self._timer.cancel()
            self._write()

    def _write(self) -> None:
        with self.lock:
            self._timer = None
            if self._dirty:
                self._dirty = False
                self.out.save(self.doc)
