"""The runs this controller started and has not yet swept up after: one small file per run.

A run that is SIGKILLed (by cron's timeout, the OOM killer, a power cut) never reaches its
final sweep, and its iperf3 servers and containers stay on the hosts, holding their ports.
So each run writes an entry here before it touches a host, and removes it once its sweep
has reached every host it used. The next run reads the entries of runs whose process is
gone and sweeps their leftovers on the hosts it connects to anyway: a nightly job recovers
from last night's kill by itself, and `netrun cleanup` stays for hosts no run visits.

Only this controller's own dead runs are swept: an entry names the process (pid and start
time) that wrote it, and a run of another controller, or one still running, is left alone.
The journal is best effort: a journal that cannot be written never stops a measurement.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netrun.cleanup.scripts import RUN_ID
from netrun.hosts.host import Host
from netrun.hosts.proc import process_start
from netrun.results.store import write_file

log = logging.getLogger("netrun.cleanup.journal")
#: What a sweep of one host needs from an entry: each a string.
HOST_FIELDS = ("name", "remote_tmp", "docker")


def journal_beside(database: Path | str) -> Path:
    """The journal of runs that use this history database (and its run lock): ``runs/``."""
    return Path(database).parent / "runs"


def host_key(host: Host) -> str:
    """Who a host is, whatever an inventory calls it: user@address:port."""
    return f"{host.user or ''}@{host.address}:{host.port}"


@dataclass
class Entry:
    """One run that may have left things on its hosts."""

    run_id: str
    pid: int
    started: str | None
    #: host key -> {"name", "remote_tmp", "docker"}: what a sweep of that host needs, and
    #: "undo": {record path: what it undoes} for the undo records left on that host.
    hosts: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def alive(self) -> bool:
        return self.started is not None and process_start(self.pid) == self.started


class Journal:
    """The folder of entries; every method tolerates a missing or unwritable folder."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        #: run id -> the host keys this process's run visits (the rest of a resumed
        #: run's entry is a killed run's, and stays for a later sweep).
        self._visiting: dict[str, set[str]] = {}
        self._lock = threading.Lock()  # parallel tests note their undo records at once

    def _path(self, run_id: str) -> Path:
        return self.directory / f"{run_id}.json"

    def begin(self, run_id: str, hosts: Iterable[tuple[Host, str, str]]) -> None:
        """Record this process's run over ``hosts`` (host, remote tmp, docker command)."""
        pid = os.getpid()
        entry = Entry(run_id, pid, process_start(pid))
        earlier = self._read(self._path(run_id))  # --resume reuses a killed run's id
        if earlier is not None:
            entry.hosts.update(earlier.hosts)
        visiting = self._visiting.setdefault(run_id, set())
        for host, tmp, docker in hosts:
            entry.hosts[host_key(host)] = {"name": host.name, "remote_tmp": tmp, "docker": docker}
            visiting.add(host_key(host))
        self._write(entry)

    def note_undo(self, run_id: str, host: Host, path: str, what: str) -> None:
        """An undo record written on ``host`` before a change (kept until it has run)."""
        with self._lock:
            entry = self._read(self._path(run_id))
            if entry is None or host_key(host) not in entry.hosts:
                return
            entry.hosts[host_key(host)].setdefault("undo", {})[path] = what
            self._write(entry)

    def drop_undo(self, run_id: str, host: Host, path: str) -> None:
        """An undo record that has run."""
        with self._lock:
            entry = self._read(self._path(run_id))
            if entry is None or host_key(host) not in entry.hosts:
                return
            entry.hosts[host_key(host)].get("undo", {}).pop(path, None)
            self._write(entry)

    def end(self, run_id: str, unswept: Iterable[str] = ()) -> None:
        """The run's sweep is done; keep only the hosts (keys) it could not reach."""
        entry = self._read(self._path(run_id))
        if entry is None:
            return
        visited = self._visiting.pop(run_id, set(entry.hosts))
        keep = set(unswept) | (set(entry.hosts) - visited)
        entry.hosts = {k: v for k, v in entry.hosts.items() if k in keep}
        entry.started = None  # the process is ending: the rest is for the next run to sweep
        self._write(entry)

    def stale(self, exclude: str | None = None) -> list[Entry]:
        """Entries of runs whose process is gone (their leftovers are anyone's to sweep)."""
        found = []
        try:
            paths = sorted(self.directory.glob("*.json"))
        except OSError:
            return []
        for path in paths:
            entry = self._read(path)
            if entry is not None and entry.run_id != exclude and not entry.alive:
                found.append(entry)
        return found

    def live(self) -> list[Entry]:
        """Entries of runs still measuring (their process is alive): never to be swept."""
        try:
            paths = sorted(self.directory.glob("*.json"))
        except OSError:
            return []
        return [e for p in paths if (e := self._read(p)) is not None and e.alive]

    def forget(self, run_id: str, keys: Iterable[str]) -> None:
        """Hosts (keys) of a dead run that have now been swept."""
        entry = self._read(self._path(run_id))
        if entry is None:
            return
        for key in keys:
            entry.hosts.pop(key, None)
        self._write(entry)

    # -- files ------------------------------------------------------------------------------
    def _write(self, entry: Entry) -> None:
        path = self._path(entry.run_id)
        try:
            if not entry.hosts:
                path.unlink(missing_ok=True)
                return
            self.directory.mkdir(parents=True, exist_ok=True)
            write_file(path, json.dumps(entry.__dict__, sort_keys=True))
        except OSError as exc:
            log.warning("run journal %s not updated: %s", path, exc)

    @staticmethod
    def _read(path: Path) -> Entry | None:
        try:
            data: Any = json.loads(path.read_text(encoding="utf-8"))
            entry = Entry(
                run_id=str(data["run_id"]),
                pid=int(data["pid"]),
                started=data.get("started"),
                hosts={str(k): dict(v) for k, v in dict(data["hosts"]).items()},
            )
            # A sweep builds a remote script from these: a field missing or of another
            # type would fail every later run's start, not just this entry.
            for value in entry.hosts.values():
                if not all(isinstance(value.get(f), str) for f in HOST_FIELDS):
                    raise ValueError("a host without name, remote_tmp and docker strings")
                undo = value.setdefault("undo", {})
                if not isinstance(undo, dict) or not all(
                    isinstance(k, str) and isinstance(v, str) for k, v in undo.items()
                ):
                    raise ValueError("undo is not a mapping of record path to text")
            if not (entry.started is None or isinstance(entry.started, str)):
                raise ValueError("started is not a string")
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            with contextlib.suppress(OSError):  # a file we cannot read is not a run
                if path.exists() and path.suffix == ".json":
                    log.warning("run journal: unreadable entry %s ignored", path)
            return None
        if not RUN_ID.fullmatch(entry.run_id):  # it names folders in the sweep's script
            return None
        return entry
