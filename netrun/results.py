"""Saving a run: every raw iperf3 output as it arrives, and results.json after each test.

Results are saved raw and rendered separately (see netrun.report); results.json is the
contract scripts and cron read, so it is always rewritten whole through a temp file and a
rename: a crash never leaves half a file.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from netrun.errors import NetrunError

SCHEMA = 1
RESULTS = "results.json"
REPORT = "report.txt"


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
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise NetrunError(
            f"{path}: cannot write ({exc.strerror or exc}); earlier files kept"
        ) from None


class ResultsDir:
    """One run's output folder: raw/, results.json, report.txt."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            (path / "raw").mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise NetrunError(
                f"{path}: cannot create the results folder ({exc.strerror})"
            ) from None

    def save_raw(self, test: str, repeat: int, text: str) -> str:
        """Save one raw iperf3 output; return its path relative to the run folder."""
        rel = f"raw/{safe_name(test)}.r{repeat}.json"
        atomic_write(self.path / rel, text)
        return rel

    def save(self, doc: dict[str, Any]) -> Path:
        path = self.path / RESULTS
        atomic_write(path, json.dumps(doc, indent=2, sort_keys=False, allow_nan=False) + "\n")
        return path

    def save_report(self, text: str, name: str = REPORT) -> Path:
        path = self.path / name
        atomic_write(path, text)
        return path


def load(path: Path) -> dict[str, Any]:
    """Read a results.json (or the folder holding one) back for re-rendering."""
    if path.is_dir():
        path = path / RESULTS
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise NetrunError(f"{path}: no such results file") from None
    except (OSError, ValueError) as exc:
        raise NetrunError(f"{path}: not a readable results.json ({exc})") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise NetrunError(f"{path}: not a netrun results file of schema {SCHEMA}")
    return doc


def new_document(scenario: str, run_id: str, version: str) -> dict[str, Any]:
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
        "tests": [],
    }
