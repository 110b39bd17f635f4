"""One netrun run at a time: an flock on a file beside the history database.

Two nightly jobs that overlap would measure each other's traffic and race on the history
file. ``RunLock`` takes an exclusive ``fcntl.flock`` on ``<database>.lock`` and writes its pid
into it, so the run that is refused can say who holds the lock. The kernel drops the lock
when the holder exits, even on SIGKILL, so a stale lock file is harmless; the file itself is
never deleted (deleting a lock file lets two processes lock two different inodes).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path
from types import TracebackType

from netrun.errors import LockError, NetrunError

POLL = 0.05  # seconds between tries while waiting with a timeout


def lock_path_for(database: Path | str) -> Path:
    """The lock file that guards ``database``: the same name plus ``.lock``."""
    db = Path(database)
    return db.with_name(db.name + ".lock")


def read_holder(path: Path) -> int | None:
    """The pid written into a lock file, or None when it is empty or unreadable."""
    try:
        text = path.read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


class RunLock:
    """An exclusive lock held for the life of a ``with`` block.

    ``wait=False`` fails at once with LockError when another process holds it; ``wait=True``
    blocks until it is free, or until ``timeout`` seconds have passed when one is given.
    """

    def __init__(self, path: Path | str, wait: bool = False, timeout: float | None = None) -> None:
        self.path = Path(path)
        self.wait = wait
        self.timeout = timeout
        self._fd: int | None = None

    @classmethod
    def beside(cls, database: Path | str, wait: bool = False) -> RunLock:
        """The lock for a history database (``history.sqlite`` -> ``history.sqlite.lock``)."""
        return cls(lock_path_for(database), wait=wait)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def _refused(self, how: str = "") -> LockError:
        # The holder writes its pid just after it takes the lock: give it that moment.
        pid = read_holder(self.path)
        for _ in range(25):
            if pid is not None:
                break
            time.sleep(0.02)
            pid = read_holder(self.path)
        who = f"pid {pid}" if pid is not None else "pid unknown"
        return LockError(
            f"another netrun run holds {self.path} ({who}){how}; wait for it or pass --wait-lock"
        )

    def acquire(self) -> None:
        """Take the lock (see the class docstring for waiting) and record our pid in it."""
        if self._fd is not None:
            raise NetrunError(f"{self.path}: lock already held by this process")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise NetrunError(
                f"{self.path}: cannot create the lock file ({exc.strerror}); "
                "pick another database folder with --db"
            ) from None
        try:
            self._lock(fd)
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def _lock(self, fd: int) -> None:
        if self.wait and self.timeout is None:
            fcntl.flock(fd, fcntl.LOCK_EX)
            return
        deadline = time.monotonic() + (self.timeout or 0.0)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if not self.wait:
                    raise self._refused() from None
                if time.monotonic() >= deadline:
                    raise self._refused(f" for more than {self.timeout:g}s") from None
                time.sleep(POLL)

    def release(self) -> None:
        """Clear our pid from the file and drop the lock; the file stays (see module doc)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
