"""Saving a run: every raw tool output as it arrives, and results.json after each test.

Results are saved raw and rendered separately (see netrun.report.render); results.json is the
contract scripts and cron read, so it is always rewritten whole through a temp file and a
rename: a crash never leaves half a file. A full disk does not stop a run: the failure is
kept and reported at the end, and the measurements still reach the table and the history.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import tempfile
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from netrun.errors import NetrunError
from netrun.results import schema

SCHEMA = 2
#: A results.json document, or one sample of it, as JSON holds it (its schema:
#: netrun.results.schema): what the run builds and saves, and reports read back.
Document = dict[str, Any]
#: Schemas this netrun reads: 1 (before metrics) renders as the iperf3 metrics.
READABLE = (1, 2)
RESULTS = "results.json"
REPORT = "report.txt"
#: A results.json read back (report, baseline, history import, resume) may be at most this.
MAX_LOAD_BYTES = 256 * 1024 * 1024


def utcnow() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def default_dir(scenario: str, root: Path = Path("results")) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return root / f"{safe_name(scenario)}-{stamp}"


def safe_name(text: str) -> str:
    """A file-name-safe form of a test or scenario name."""
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", text).strip("_") or "x"


def atomic_write(path: Path, text: str) -> None:
    """Write via a temp file in the same folder and rename over the target."""
    try:
        write_file(path, text)
    except OSError as exc:
        raise NetrunError(
            f"{path}: cannot write ({exc.strerror or exc}); earlier files kept"
        ) from None


def umask() -> int:
    """The process's umask, read without changing it (Linux /proc), else set and restored."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


def write_file(path: Path, text: str) -> None:
    """atomic_write raising the OSError itself; the temp file goes on every exit path.

    A full disk fails in write or fsync, and Ctrl-C may land anywhere: either way the
    target keeps its earlier content and no ``.NAME.xxxx`` temp file stays beside it.
    """
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        # mkstemp makes 0600; a report shared by a team's web server must follow the umask,
        # as the PNGs (written by matplotlib with open()) already do.
        os.fchmod(fd, 0o666 & ~umask())
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class ResultsDir:
    """One run's output folder: raw/, results.json, report.txt.

    A write that fails (a full disk, a quota) does not stop the run: the measurements are
    still worth printing and storing in the history. The first failure is kept in
    ``error`` for the caller to report; later writes are still tried, each atomically, so
    an earlier file is never left half-overwritten. Only a folder that cannot be created
    at all raises, before anything has been measured.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        #: The first write that failed, as one line naming the file; None while all went well.
        self.error: str | None = None
        self._lock = threading.Lock()
        try:
            (path / "raw").mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise NetrunError(
                f"{path}: cannot create the results folder ({exc.strerror}); {_fix(exc)}"
            ) from None

    def _write(self, path: Path, text: str) -> bool:
        try:
            write_file(path, text)
        except OSError as exc:
            with self._lock:
                if self.error is None:
                    self.error = f"{path}: cannot write ({exc.strerror or exc}); {_fix(exc)}"
            return False
        return True

    def save_raw(self, test: str, repeat: int, text: str, suffix: str) -> str | None:
        """Save one repeat's raw tool output as ``raw/<test>.r<repeat><suffix>`` (the
        suffix says what it holds: .json, .txt); its path relative to the run folder, as
        the sample's ``raw`` records it (None: not saved).

        Readers follow the sample's ``raw``, never a name made up again: runs saved before
        the suffix said what a file holds named every raw file .json, and stay readable."""
        rel = f"raw/{safe_name(test)}.r{repeat}{suffix}"
        return rel if self._write(self.path / rel, text) else None

    def save(self, doc: dict[str, Any]) -> Path:
        path = self.path / RESULTS
        self._write(path, json.dumps(doc, indent=2, sort_keys=False, allow_nan=False) + "\n")
        return path

    def save_report(self, text: str, name: str = REPORT) -> Path:
        path = self.path / name
        self._write(path, text)
        return path


def _fix(exc: OSError) -> str:
    """What to do about a results folder that cannot be written."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "free space there or choose another results folder (-o); earlier files kept"
    return "choose another results folder (-o); earlier files kept"


def load(path: Path) -> dict[str, Any]:
    """Read a results.json (or the folder holding one) back for re-rendering."""
    if path.is_dir():
        path = path / RESULTS
    try:
        if path.is_file() and path.stat().st_size > MAX_LOAD_BYTES:
            raise NetrunError(
                f"{path}: is larger than {MAX_LOAD_BYTES // 2**20} MB; not a netrun results.json"
            )
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise NetrunError(f"{path}: no such results file") from None
    except RecursionError:
        raise NetrunError(f"{path}: not a readable results.json (nested too deeply)") from None
    except (OSError, ValueError) as exc:
        raise NetrunError(f"{path}: not a readable results.json ({exc})") from None
    if not isinstance(doc, dict) or doc.get("schema") not in READABLE:
        raise NetrunError(f"{path}: not a netrun results file of schema 1 or {SCHEMA}")
    return schema.check(doc, path)


def new_document(scenario: str, run_id: str, version: str) -> Document:
    return {
        "schema": SCHEMA,
        "scenario": scenario,
        "run_id": run_id,
        "started": utcnow(),
        "finished": None,
        "netrun_version": version,
        "status": "running",
        "hosts": {},
        "errors": [],
        "metrics": {},
        "tests": [],
    }
