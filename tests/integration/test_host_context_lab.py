"""Each host's context, end to end on the emulated lab (issue 26): recorded once per run in
results.json and the history, named in the baseline verdict and in ``netrun diff`` when a
sysctl changed between two runs. The change is made inside one lab host's namespace
(its own net.ipv4.tcp_congestion_control) and restored whatever happens."""

from __future__ import annotations

import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.integration.conftest import LabHandle
from tests.integration.helpers import assert_nothing_left, load_results, run_netrun, write_scenario

pytestmark = pytest.mark.integration

CC = "net.ipv4.tcp_congestion_control"
CC_FILE = "/proc/sys/net/ipv4/tcp_congestion_control"


def in_ns(namespace: str, *argv: str) -> str:
    done = subprocess.run(
        ["ip", "netns", "exec", namespace, *argv], capture_output=True, text=True, timeout=10
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@contextmanager
def congestion_control(namespace: str) -> Iterator[tuple[str, str]]:
    """Switch the namespace's congestion control to another allowed one; (old, new)."""
    old = in_ns(namespace, "cat", CC_FILE)
    allowed = in_ns(namespace, "cat", "/proc/sys/net/ipv4/tcp_allowed_congestion_control")
    others = [c for c in allowed.split() if c != old]
    if not others:
        pytest.skip(f"{namespace}: no other congestion control allowed ({allowed!r})")
    in_ns(namespace, "sh", "-c", f"echo {others[0]} > {CC_FILE}")
    try:
        yield old, others[0]
    finally:
        in_ns(namespace, "sh", "-c", f"echo {old} > {CC_FILE}")
        assert in_ns(namespace, "cat", CC_FILE) == old


def netrun_ok(tmp: Path, *args: str | Path) -> None:
    res = run_netrun([*args, "-q"], cwd=tmp, timeout=90)
    assert res.returncode == 0, res.stderr


def test_context_recorded_stored_and_a_sysctl_change_named(lab: LabHandle, tmp_path: Path) -> None:
    scenario = write_scenario(
        tmp_path, [{"name": "tcp", "mode": "baremetal"}], defaults={"server": "alpha",
                                                                    "client": "bravo"}
    )  # fmt: skip
    db = tmp_path / "h.sqlite"
    common = (scenario, "-i", lab.inventory, "--db", db)
    netrun_ok(tmp_path, *common, "-o", "one")
    first = load_results(tmp_path / "one")
    for host in ("alpha", "bravo"):
        ctx = first["hosts"][host]["context"]
        assert ctx["kernel"] == first["hosts"][host]["kernel"]
        assert ctx["nic"] == "data0" and ctx["nic_driver"] == "veth"
        assert ctx["offloads"] and ctx["sysctl"][CC]
        assert ctx["qdisc"] and ctx["tools"]["iperf3"] == first["hosts"][host]["iperf3_version"]
        # what a veth cannot tell is said, not guessed
        assert ctx["rings"] is None and "ethtool -g data0" in ctx["unavailable"]["rings"]

    namespace = lab.host("alpha").namespace
    with congestion_control(namespace) as (old, new):
        netrun_ok(tmp_path, *common, "-o", "two", "--baseline", "last")
    second = load_results(tmp_path / "two")
    assert second["hosts"]["alpha"]["context"]["sysctl"][CC] == new
    assert second["hosts"]["bravo"]["context"]["sysctl"][CC] == old
    change = f"alpha: {CC} {old} -> {new}"
    assert second["baseline"]["context_changes"] == [
        {"host": "alpha", "field": CC, "before": old, "after": new}
    ]
    (verdict,) = second["baseline"]["verdicts"]
    assert verdict["detail"].endswith(f"; context changed: {change}")
    report = (tmp_path / "two" / "report.txt").read_text()
    assert f"tcp: {verdict['verdict']}; {change}" in report

    diff = run_netrun(["diff", "one", "two"], cwd=tmp_path)
    assert diff.returncode == 0, diff.stderr
    assert f"host context changed (A -> B):\n  {change}\n" in diff.stdout

    with sqlite3.connect(db) as con:  # the history keeps every field of both runs
        rows = con.execute(
            "SELECT run_id, value FROM host_context WHERE host = 'alpha' AND field = ?", (CC,)
        ).fetchall()
    assert sorted(rows) == sorted([(first["run_id"], old), (second["run_id"], new)])
    assert_nothing_left(lab, tmp_path / "one")
    assert_nothing_left(lab, tmp_path / "two")
