"""Which measurement sweeps which host early (netrun.tools.savers.sweep), and the armed client's
shell (netrun.tools.iperf3.run.ARMED_WRAPPER) run by a real sh."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from netrun.cleanup.scripts import SWEPT
from netrun.hosts.host import Host
from netrun.tools.iperf3.run import ARMED_WRAPPER
from netrun.tools.savers.sweep import IDENTITY, EarlySweep


def spec(name: str, hosts: tuple[str, ...], repeat: int = 1) -> Any:
    return SimpleNamespace(name=name, hosts=hosts, repeat=repeat)


def early_sweep(*tests: Any) -> EarlySweep:
    return EarlySweep(list(tests), lambda h: f"/tmp/{h.name}/netrun-abcd")


A, B, C = Host("a"), Host("b"), Host("c")


def probed(f: EarlySweep, **folders: str) -> None:
    for name, ident in folders.items():
        f.note(Host(name), f"probe output\n{IDENTITY}\n{ident}\n")


def test_a_hosts_last_measurement_is_its_last_tests_last_repeat() -> None:
    ab, bc = spec("ab", ("a", "b"), repeat=2), spec("bc", ("b", "c"))
    f = early_sweep(ab, bc)
    probed(f, a="boot net:[1]", b="boot net:[2]", c="boot net:[3]")
    assert not f.is_last(A, ab, 1)
    assert f.is_last(A, ab, 2)
    assert not f.is_last(B, ab, 2)  # b has bc after it
    assert f.is_last(B, bc, 1) and f.is_last(C, bc, 1)


def test_two_names_of_one_host_or_an_unknown_host_are_not_swept_early() -> None:
    """One kernel and network namespace under two names: the first name's sweep would end
    the other's folders and lease. Namespaces of one machine (one boot id, one /tmp) are
    hosts of their own: each sweeps only its own folder."""
    ab = spec("ab", ("a", "b"))
    f = early_sweep(ab)
    probed(f, a="boot net:[1]", b="boot net:[1]")  # one host, two names
    assert not f.is_last(A, ab, 1) and not f.is_last(B, ab, 1)
    assert f.is_last(A, ab, 1, probed=False)  # before the probes: it may be
    g = early_sweep(ab)
    g.note(A, "no identity line")
    probed(g, b="boot net:[2]")
    assert not g.is_last(A, ab, 1) and g.is_last(B, ab, 1)
    h = early_sweep(ab)
    probed(h, a="boot", b="boot net:[2]")  # a's namespace unknown: a's sweep waits
    assert not h.is_last(A, ab, 1) and h.is_last(B, ab, 1)


def test_namespaces_of_one_machine_sharing_its_tmp_are_swept_early() -> None:
    ab = spec("ab", ("a", "b"))
    f = early_sweep(ab)
    probed(f, a="boot net:[1]", b="boot net:[2]")  # a lab: one kernel, one /tmp
    assert f.is_last(A, ab, 1) and f.is_last(B, ab, 1)


def test_the_probes_line_is_the_hosts_identity_read_by_sh() -> None:
    f = early_sweep(spec("ab", ("a", "b")))
    out = subprocess.run(
        ["sh", "-c", f.probe_script(A)], capture_output=True, text=True, check=True
    ).stdout
    f.note(A, out)
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    assert f.identities["a"].split() == [boot, os.readlink("/proc/self/ns/net")]


def test_done_only_when_the_sweep_worked_and_nothing_ran_after() -> None:
    f = early_sweep(spec("ab", ("a", "b")))
    host = Host("a")
    f.sent(host, lambda: True)
    assert f.done(host)
    assert not f.done(host)  # once
    f.sent(host, lambda: True)
    host.commands += 1  # a later command (a failed test's stop)
    assert not f.done(host)
    f.sent(host, lambda: False)
    assert not f.done(host)


def armed(tmp: Path, line: str, sweep: str = "") -> subprocess.CompletedProcess[str]:
    work = tmp / "netrun-abcd"
    argv = ["sh", "-c", ARMED_WRAPPER, "netrun-client", sweep, str(work), str(work / "c.pid")]
    return subprocess.run(
        [*argv, "5", "echo", "client"], input=line, capture_output=True, text=True, timeout=10
    )


def test_armed_client_runs_with_the_port_it_is_given(tmp_path: Path) -> None:
    res = armed(tmp_path, "5202\n")
    assert res.returncode == 0 and res.stdout == "client -p 5202\n", res
    assert not (tmp_path / "netrun-abcd" / "c.pid").exists()  # removed after it


def test_armed_client_abandoned_runs_nothing(tmp_path: Path) -> None:
    for line in ("", "stop\n", "52x1\n"):
        res = armed(tmp_path, line)
        assert res.returncode == 0 and res.stdout == "", (line, res)
        assert not (tmp_path / "netrun-abcd").exists()


def test_armed_client_sweeps_its_host_when_told(tmp_path: Path) -> None:
    work = tmp_path / "netrun-abcd"
    res = armed(tmp_path, "5201 sweep\n", sweep=f"rmdir {work}")
    assert res.stdout == "client -p 5201\n" and res.stderr == f"{SWEPT}\n", res
    assert not work.exists()
    kept = armed(tmp_path, "5201\n", sweep=f"rmdir {work}")
    assert kept.stderr == "" and work.exists()


def test_the_server_hosts_sweep_reads_its_counters_once_the_server_exited(
    tmp_path: Path,
) -> None:
    """The sweep waits for the one-shot server anyway: the server end's reading after
    rides on it, and its output is read once, by the measurement or the run's end."""

    class Started:  # the transport's started command, as a local sh
        def __init__(self, script: str) -> None:
            self.proc = subprocess.Popen(
                ["sh", "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
            )

        def send(self, text: str) -> None:
            assert self.proc.stdin is not None
            self.proc.stdin.write(text)
            self.proc.stdin.close()

        head = ""

        def read_until(self, marker: str, _timeout: float) -> str:
            assert self.proc.stdout is not None
            while marker not in self.head and (line := self.proc.stdout.readline()):
                self.head += line
            return self.head

        def wait(self, timeout: float) -> tuple[int, str, str]:
            assert self.proc.stdout is not None
            out = self.head + self.proc.stdout.read()
            return self.proc.wait(timeout), out, ""

        def abandon(self) -> None:
            self.proc.kill()

    host = Host("a")
    host.transport = SimpleNamespace(start=Started)  # type: ignore[assignment]
    f = EarlySweep([spec("t", ("a",))], lambda _h: str(tmp_path / "run"))
    server = subprocess.Popen(["sleep", "0.3"])
    pidfile = tmp_path / "s.pid"
    pidfile.write_text(f"{server.pid}\n")
    waiting = f.server_sweep(host, str(pidfile), None, 5, read="echo READING-AFTER")
    assert waiting is not None
    assert waiting.output().endswith("READING-AFTER\n==netrun:read==\n")  # not its tail
    server.wait()
    assert waiting.worked() and f.done(host)
    assert "READING-AFTER" in waiting.result()[1]
