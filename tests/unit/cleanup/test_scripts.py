"""Hosts that share a remote tmp (one machine's namespaces, NFS homes): each host's sweep
acts only on the run folders, records and pids it made (run in real sh)."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from netrun.cleanup.owner import HOST_FILE, mark_script
from netrun.cleanup.scripts import cleanup_script
from netrun.hosts.host import Host, folder_key
from netrun.hosts.proc import READ_HOST_ID, boot_id, kill_recorded, recorded, save_pid
from netrun.modes.base import RunContext


def sh(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=30)


def me() -> str:
    return sh(READ_HOST_ID).stdout.strip()


def folder(tmp: Path, name: str, host_id: str | None, marker: Path) -> Path:
    """A killed run's folder of host ``name``: an undo record that touches ``marker``."""
    d = tmp / f"netrun-abcd1234-{name}"
    (d / "undo").mkdir(parents=True)
    (d / "undo" / "00000000000000000001-000000.sh").write_text(f"# mtu back\ntouch {marker}\n")
    if host_id is not None:
        (d / HOST_FILE).write_text(host_id + "\n")
    return d


def test_each_host_has_its_own_run_folder() -> None:
    ctx = RunContext("abcd1234")
    a, b = Host("alpha", {}), Host("bravo", {})
    assert ctx.workdir(a) == "/tmp/netrun-abcd1234-alpha" != ctx.workdir(b)
    # a name unsafe in a file name: a safe form plus a hash, so two never meet
    odd, other = folder_key("we b/1"), folder_key("we_b_1")
    assert odd.startswith("we_b_1-") and other == "we_b_1" and odd != other
    assert "/" not in folder_key("../..") and folder_key("").startswith("_-")


def test_the_mark_names_the_host(tmp_path: Path) -> None:
    workdir = tmp_path / "netrun-abcd1234-alpha"
    assert sh(mark_script(str(workdir))).returncode == 0
    found = (workdir / HOST_FILE).read_text().split()
    assert found[0] == boot_id() and found[1].startswith("net:[")
    assert found == me().split()


@pytest.mark.parametrize("run_id", [None, "abcd1234"])
def test_a_sweep_runs_only_its_own_hosts_records(tmp_path: Path, run_id: str | None) -> None:
    ran = {n: tmp_path / f"{n}-ran" for n in ("alpha", "bravo", "charlie", "old")}
    # alpha: this kernel, another namespace; bravo: another machine (NFS); charlie: here
    alpha = folder(tmp_path, "alpha", f"{boot_id()} net:[1]", ran["alpha"])
    bravo = folder(tmp_path, "bravo", f"another-boot {me().split()[1]}", ran["bravo"])
    charlie = folder(tmp_path, "charlie", me(), ran["charlie"])
    old = tmp_path / "netrun-abcd1234"  # a folder of a version before host marks
    (old / "undo").mkdir(parents=True)
    (old / "undo" / "1.sh").write_text(f"# old\ntouch {ran['old']}\n")
    other = tmp_path / "netrun-fuzz-x"  # another program's: not a run id
    other.mkdir()
    out = sh(cleanup_script(str(tmp_path), run_id, docker=None, spare_live=True)).stdout
    assert ran["charlie"].exists() and ran["old"].exists(), out
    assert not ran["alpha"].exists() and not ran["bravo"].exists(), out
    assert alpha.exists() and bravo.exists() and other.exists()
    assert not charlie.exists() and not old.exists()
    assert str(alpha) not in out and str(bravo) not in out, out


@pytest.fixture
def elsewhere() -> subprocess.Popen[bytes]:
    """A process in another network namespace (another host on this kernel)."""
    if os.geteuid() != 0:
        pytest.skip("needs root for a network namespace")
    proc = subprocess.Popen(["unshare", "-n", "sleep", "30"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def wait_unshared(proc: subprocess.Popen[bytes]) -> None:
    """Until unshare has exec'd sleep in its own namespace."""
    for _ in range(500):
        try:
            moved = os.readlink(f"/proc/{proc.pid}/ns/net") != os.readlink("/proc/self/ns/net")
            if moved and b"sleep" in Path(f"/proc/{proc.pid}/cmdline").read_bytes():
                return
        except OSError:
            pass
        subprocess.run(["sleep", "0.01"])
    pytest.fail("unshare -n never entered its namespace")


def test_a_pid_of_another_namespace_is_never_signalled(
    elsewhere: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    wait_unshared(elsewhere)
    pid = elsewhere.pid
    pidfile = tmp_path / "p"
    assert sh(save_pid(str(pidfile), str(pid))).returncode == 0
    assert sh(f"{recorded(str(pidfile))} && echo ours || echo not").stdout == "not\n"
    sh(kill_recorded(str(pidfile), grace=0.1))
    # its pid file in a folder of this host (a mark that matches): still spared
    d = tmp_path / "netrun-abcd1234-charlie"
    d.mkdir()
    (d / HOST_FILE).write_text(me() + "\n")
    (d / "x.5201.pid").write_text(pidfile.read_text())
    out = sh(cleanup_script(str(tmp_path), None, docker=None)).stdout
    assert "killed" not in out and elsewhere.poll() is None, out


def test_a_recorded_pid_of_another_boot_is_never_signalled(tmp_path: Path) -> None:
    proc = subprocess.Popen(["sleep", "30"])
    try:
        pidfile = tmp_path / "p"
        assert sh(save_pid(str(pidfile), str(proc.pid))).returncode == 0
        pid, start, _boot = pidfile.read_text().split()
        pidfile.write_text(f"{pid} {start} another-boot\n")
        sh(kill_recorded(str(pidfile), grace=0.1))
        assert proc.poll() is None
        pidfile.write_text(f"{pid} {start}\n")  # not the one format (no boot): spared
        sh(kill_recorded(str(pidfile), grace=0.1))
        assert proc.poll() is None
        assert sh(save_pid(str(pidfile), str(proc.pid))).returncode == 0
        assert sh(f"{recorded(str(pidfile))} && echo ours").stdout == "ours\n"
        sh(kill_recorded(str(pidfile), grace=0.1))
        assert proc.wait(timeout=5) != 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_two_hosts_on_one_freeflow_dir_one_claims_it_the_other_is_refused(
    tmp_path: Path,
) -> None:
    from netrun.errors import ModeError
    from netrun.modes.freeflow.router import (
        RouterPlan,
        claim_file,
        claim_script,
        read,
        unclaim_script,
    )

    path = claim_file(str(tmp_path), "abcd1234")
    said = '; echo "[$ffclaim]"'
    assert sh(claim_script(path, "alpha") + said).stdout == "[]\n"  # this host's now
    assert sh(claim_script(path, "alpha") + said).stdout == "[]\n"  # and still, later
    if os.geteuid() == 0:  # bravo: another network namespace on this kernel
        other = ["unshare", "-n", "sh", "-c", claim_script(path, "bravo") + said]
        out = subprocess.run(other, capture_output=True, text=True, timeout=30).stdout
        assert out == "[alpha]\n"
    Path(path).write_text("another-boot net:[1]\ncharlie\n")  # or another machine (NFS)
    assert sh(claim_script(path, "alpha") + said).stdout == "[charlie]\n"
    sh(unclaim_script(path))  # not this host's claim: it stays
    assert Path(path).exists()
    Path(path).unlink()
    sh(claim_script(path, "alpha"))
    sh(unclaim_script(path))
    assert not Path(path).exists()
    plan = RouterPlan(
        docker="docker", name="freeflow", library=f"{tmp_path}/libfsocket.so", argv=[],
        image_id=None, image="freeflow/freeflow:tcp", timeout=30, vnet=None,
        subnet_env="/run/flannel/subnet.env", network="bridge",
        scratch="/tmp/netrun-1a2b/router-state.out",
    )  # fmt: skip
    with pytest.raises(ModeError) as err:
        read({"router": "shared alpha"}, plan, "bravo", "abcd1234")
    assert str(err.value) == (
        f"bravo: freeflow_dir {tmp_path} is alpha's too in this run (one folder seen by both "
        "hosts: FreeFlow's router socket and library there would collide); give each host "
        "its own netrun_freeflow_dir"
    )


def test_of_two_hosts_claiming_at_once_exactly_one_wins(tmp_path: Path) -> None:
    from netrun.modes.freeflow.router import claim_file, claim_script

    if os.geteuid() != 0:
        pytest.skip("needs root for a network namespace")
    for n in range(5):
        path = claim_file(str(tmp_path), f"abcd{n:04d}")
        said = '; echo "[$ffclaim]"'
        procs = [
            subprocess.Popen(
                ["unshare", "-n", "sh", "-c", claim_script(path, name) + said],
                stdout=subprocess.PIPE,
                text=True,
            )
            for name in ("alpha", "bravo")
        ]
        outs = sorted(p.communicate(timeout=30)[0] for p in procs)
        assert outs in (["[]\n", "[alpha]\n"], ["[]\n", "[bravo]\n"]), outs


def test_a_cleanup_removes_only_its_hosts_containers_on_a_shared_daemon(tmp_path: Path) -> None:
    """``docker ps`` lines as the format asks (id, run id, host; no host: older netrun)."""
    removed = tmp_path / "removed"
    stub = tmp_path / "docker"
    listing = "c1 abcd1234 charlie\nc2 abcd1234 alpha\nc3 abcd1234 \nc4 bbbb2222 charlie\n"
    (tmp_path / "ps.txt").write_text(listing)
    stub.write_text(
        "#!/bin/sh\n"
        f'case "$1" in ps) cat {tmp_path}/ps.txt;; rm) shift; shift; echo "$@" >> {removed};; '
        "esac\n"
    )
    stub.chmod(0o755)
    script = cleanup_script(
        str(tmp_path), None, docker=str(stub), skip=["bbbb2222"], host="charlie"
    )
    out = sh(script).stdout
    assert removed.read_text().split() == ["c1", "c3"], out


def timed_stubborn(tmp: Path, pidfile: Path) -> int:
    """What netrun starts (netrun.tools.ends.End.start): a program under ``timeout``, the
    pid recorded ``timeout``'s; the program ignores SIGTERM (an iperf2 server slow to end
    on it) and outlives a ``timeout`` killed alone. Its own pid is returned."""
    child = tmp / "child.pid"
    program = f"echo $$ > {child}; trap '' TERM; while :; do sleep 0.1; done"
    start = (
        f"timeout -k 60 60 sh -c {shlex.quote(program)} >/dev/null 2>&1 </dev/null & "
        + save_pid(str(pidfile))
    )
    assert sh(start).returncode == 0
    for _ in range(100):
        if child.exists() and child.read_text().strip():
            return int(child.read_text())
        time.sleep(0.05)
    raise AssertionError("the program under timeout did not start")


@pytest.fixture
def started() -> Iterator[list[int]]:
    """The programs a test started: killed by pid at its end, whatever it asserted."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def gone(pid: int) -> bool:
    for _ in range(100):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def test_an_undo_ends_what_runs_under_a_recorded_timeout_after_the_grace(
    tmp_path: Path, started: list[int]
) -> None:
    pidfile = tmp_path / "server.pid"
    program = timed_stubborn(tmp_path, pidfile)
    started.append(program)
    timeout_pid = int(pidfile.read_text().split()[0])
    sh(kill_recorded(str(pidfile), grace=0.2))
    assert gone(timeout_pid) and gone(program)


def test_a_sweep_ends_what_runs_under_a_recorded_timeout(
    tmp_path: Path, started: list[int]
) -> None:
    """A SIGKILLed run's server: the next run's sweep kills the group ``timeout`` leads."""
    d = tmp_path / "netrun-abcd1234-alpha"
    d.mkdir()
    (d / HOST_FILE).write_text(me() + "\n")
    program = timed_stubborn(tmp_path, d / "iperf2-t0r1.pid")
    started.append(program)
    out = sh(cleanup_script(str(tmp_path), None, docker=None, spare_live=True)).stdout
    assert "killed timeout pid" in out, out
    assert gone(program) and not d.exists()
