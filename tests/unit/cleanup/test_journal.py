"""The run journal: which runs are dead, what is left to sweep, and bad files ignored."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from netrun.cleanup.journal import Journal, host_key
from netrun.hosts.host import Host
from netrun.hosts.proc import process_start

ALPHA = Host("alpha", {"ansible_host": "10.0.0.1", "ansible_user": "lab"})
BRAVO = Host("bravo", {"ansible_host": "10.0.0.2", "ansible_port": 2222})


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_host_key_is_user_address_port() -> None:
    assert host_key(ALPHA) == "lab@10.0.0.1:22"
    assert host_key(BRAVO).endswith("@10.0.0.2:2222")


def test_own_live_run_is_not_stale_until_it_ends(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "runs")
    journal.begin("aa11", [(ALPHA, "/tmp", "docker"), (BRAVO, "/var/tmp", "docker")])
    assert journal.stale() == []
    journal.end("aa11", unswept=[host_key(BRAVO)])
    (stale,) = journal.stale()
    assert stale.run_id == "aa11" and list(stale.hosts) == [host_key(BRAVO)]
    assert stale.hosts[host_key(BRAVO)]["remote_tmp"] == "/var/tmp"
    journal.forget("aa11", [host_key(BRAVO)])
    assert journal.stale() == [] and list((tmp_path / "runs").iterdir()) == []


def test_a_clean_end_removes_the_entry(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "runs")
    journal.begin("bb22", [(ALPHA, "/tmp", "docker")])
    journal.end("bb22")
    assert list((tmp_path / "runs").iterdir()) == []


def test_dead_or_reused_pid_is_stale(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    hosts = {host_key(ALPHA): {"name": "alpha", "remote_tmp": "/tmp", "docker": "docker"}}
    dead = {"run_id": "cc33", "pid": dead_pid(), "started": "1", "hosts": hosts}
    reused = {"run_id": "dd44", "pid": os.getpid(), "started": "0", "hosts": hosts}
    live = {"run_id": "ee55", "pid": os.getpid(), "started": process_start(os.getpid())}
    for doc in (dead, reused, {**live, "hosts": hosts}):
        (runs / f"{doc['run_id']}.json").write_text(json.dumps(doc))
    assert sorted(e.run_id for e in Journal(runs).stale()) == ["cc33", "dd44"]
    assert [e.run_id for e in Journal(runs).stale(exclude="cc33")] == ["dd44"]


def test_junk_files_and_a_missing_folder_are_ignored(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    assert Journal(runs).stale() == []
    runs.mkdir()
    (runs / "x.json").write_text("{not json")
    (runs / "y.json").write_text(json.dumps({"run_id": "../../etc", "pid": 1, "hosts": {}}))
    (runs / "z.json").write_text(json.dumps([1, 2]))
    assert Journal(runs).stale() == []


def test_unwritable_folder_never_raises(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    journal = Journal(blocker / "runs")
    journal.begin("ff66", [(ALPHA, "/tmp", "docker")])
    journal.end("ff66")
    assert journal.stale() == []


def test_entries_a_sweep_could_not_use_are_ignored(tmp_path: Path) -> None:
    """A sweep builds a remote script from an entry: one it could not build (a field missing
    or not a string, a run id the sweep refuses) would fail every later run's start."""
    runs = tmp_path / "runs"
    runs.mkdir()
    good = {"name": "alpha", "remote_tmp": "/tmp", "docker": "docker"}
    docs = {
        "a1a1": {"alpha": {"name": "alpha", "docker": "docker"}},  # no remote_tmp
        "a2a2": {"alpha": {**good, "docker": 7}},
        "a3a3": {"alpha": [1]},
        "zz99": {"alpha": good},  # alphanumeric, but not a run id
        "a4a4": {"alpha": good},
    }
    for run_id, hosts in docs.items():
        doc = {"run_id": run_id, "pid": dead_pid(), "started": "1", "hosts": hosts}
        (runs / f"{run_id}.json").write_text(json.dumps(doc))
    (runs / "a5a5.json").write_text(json.dumps({**doc, "run_id": "a5a5", "started": 12}))
    assert [e.run_id for e in Journal(runs).stale()] == ["a4a4"]


def test_resume_keeps_the_killed_runs_other_hosts(tmp_path: Path) -> None:
    """--resume reuses the run id: hosts it does not visit stay for a later sweep."""
    runs = tmp_path / "runs"
    killed = Journal(runs)
    killed.begin("ab12", [(ALPHA, "/tmp", "docker"), (BRAVO, "/tmp", "docker")])
    killed.end("ab12", unswept=[host_key(ALPHA), host_key(BRAVO)])  # as if never swept
    resumed = Journal(runs)
    resumed.begin("ab12", [(ALPHA, "/tmp", "docker")])  # -l alpha
    resumed.end("ab12")
    (left,) = Journal(runs).stale()
    assert list(left.hosts) == [host_key(BRAVO)]
