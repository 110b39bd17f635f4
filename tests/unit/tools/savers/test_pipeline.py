"""Which test's server and client a run starts ahead (netrun.tools.savers.pipeline)."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

from netrun.modes.base import RunContext
from netrun.tools.savers.pipeline import Pipeline


def NO_PLAN(*_a: Any, **_k: Any) -> None:
    return None


def spec(name: str, repeat: int = 1, port: int | None = None) -> Any:
    """A test that is its own plan too (the pipeline reads a plan's ``spec``)."""
    found = SimpleNamespace(
        name=name, repeat=repeat, duration=1, value=lambda key: port if key == "port" else None
    )
    found.spec = found
    return found


def test_the_next_test_follows_in_run_order() -> None:
    a, b, c = spec("a"), spec("b"), spec("c")
    plan = NO_PLAN
    pipe = Pipeline([a, b, c], inventory=None, ctx=RunContext(run_id="abcd"), plan=plan)  # type: ignore[arg-type]
    assert pipe.next == {"a": [b], "b": [c]}


def test_nothing_starts_ahead_before_the_last_repeat_after_the_last_test_or_on_a_fixed_port() -> (
    None
):
    planned: list[str] = []

    def plan(test: Any, *_a: Any, **_k: Any) -> None:
        planned.append(test.name)

    a, b, c = spec("a", repeat=2), spec("b"), spec("c", port=5299)
    pipe = Pipeline([a, b, c], inventory=None, ctx=RunContext(run_id="abcd"), plan=plan)  # type: ignore[arg-type]
    pipe.ahead(a, 1, 10)  # a's second repeat comes next, with its own start
    pipe.ahead(c, 1, 10)  # the last test
    pipe.ahead(b, 1, 10)  # c, next, has a fixed port: it starts once b's server is gone
    assert planned == []
    pipe.ahead(a, 2, 10)
    assert planned == ["b"]


def test_a_start_not_yet_begun_is_called_off_when_its_test_starts() -> None:
    """The test before failed early: its successor must not wait out the delay."""
    armed: list[str] = []
    pre = SimpleNamespace(host="a", wait_s=0.0, tag="t1r1", arm=lambda: armed.append("armed"))

    def plan(*_a: Any, **_k: Any) -> Any:
        return pre

    a, b = spec("a"), spec("b")
    a.duration = 100  # its successor's start would begin 99.4 s after a's client
    pipe = Pipeline([a, b], inventory=None, ctx=RunContext(run_id="abcd"), plan=plan)  # type: ignore[arg-type]
    pipe.ahead(a, 1, 10)
    started = time.monotonic()
    pipe.wait("a", "t1r1")
    assert time.monotonic() - started < 2 and armed == []


def test_in_a_parallel_run_a_test_starts_ahead_the_next_rounds_test_its_hosts_serve() -> None:
    ab, cd = spec("ab"), spec("cd")
    ca, db = spec("ca"), spec("db")
    for test, server, client in ((ab, "a", "b"), (cd, "c", "d"), (ca, "c", "a"), (db, "d", "b")):
        test.server, test.hosts, test.deadline = server, (server, client), 41.0
    rounds = [[ab, cd], [ca, db]]
    pipe = Pipeline([ab, cd, ca, db], None, RunContext(run_id="abcd"), rounds, plan=NO_PLAN)  # type: ignore[arg-type]
    assert pipe.next == {"ab": [], "cd": [ca, db]}  # c serves ca, d serves db next
    assert pipe.wait_s["cd"] == 41.0


def test_a_start_ahead_runs_whole_even_when_the_run_is_interrupted() -> None:
    """Cut short, its script would go on on the host and could start the server after
    the final sweep looked for it: it runs as cleanup does, never cut by an interrupt."""
    from netrun.hosts.shield import in_cleanup

    seen: list[bool] = []

    def run(script: str, **_kw: Any) -> Any:
        seen.append(in_cleanup())
        return SimpleNamespace(stdout="NETRUN_READY 1 5201 /tmp/x.log\n")

    host = SimpleNamespace(run=run)
    pre = SimpleNamespace(host="a", wait_s=0.0, tag="t2r1", script="true", arm=lambda: None)
    pre.take = lambda _text: None

    def plan(*_a: Any, **_k: Any) -> Any:
        return pre

    a, b = spec("a"), spec("b")
    a.duration = 0
    inventory = SimpleNamespace(get=lambda _name: host)
    pipe = Pipeline([a, b], inventory=inventory, ctx=RunContext(run_id="abcd"), plan=plan)  # type: ignore[arg-type]
    pipe.ahead(a, 1, 10)
    deadline = time.monotonic() + 10
    while not seen and time.monotonic() < deadline:  # no delay: it begins at once
        time.sleep(0.01)
    pipe.join_all()
    assert seen == [True] and not in_cleanup()


def test_a_retry_of_the_running_test_plans_nothing_again() -> None:
    """A busy-port retry calls ``ahead`` again: the duplicate is found before any plan
    work (a mode object, the server's script), not after it."""
    planned: list[str] = []

    def plan(test: Any, *_a: Any, **_k: Any) -> None:
        planned.append(test.name)

    a, b = spec("a"), spec("b")
    pipe = Pipeline([a, b], inventory=None, ctx=RunContext(run_id="abcd"), plan=plan)  # type: ignore[arg-type]
    pipe.ahead(a, 1, 10)
    pipe.ahead(a, 1, 10)
    assert planned == ["b"]


def test_a_start_on_the_running_tests_host_carries_its_reading_after() -> None:
    """The next test's server start waits for the running test's process on its host:
    what it printed is the running test's reading after there (``reading_after``)."""
    ctx = RunContext(run_id="abcd")
    scripts: list[str] = []

    def run(script: str, **_kw: Any) -> Any:
        scripts.append(script)
        return SimpleNamespace(stdout="NETRUN_READY 1 5202 /tmp/x.log\n==reading==\n")

    def plan(test: Any, *_a: Any, after: str | None = None, **_k: Any) -> Any:
        pre = SimpleNamespace(host=test.server, tag=f"{test.name}r1", script=str(after))
        pre.wait_s = 11.0 if after else 0.0
        pre.arm = lambda: None
        key = (test.server, f"{test.name}r1")
        pre.take = lambda text: ctx.ahead.prestarted.__setitem__(key, text.partition("\n")[2])
        return pre

    a, b, c = spec("a"), spec("b"), spec("c")
    a.duration = b.duration = 0
    a.server, b.server, c.server = "alpha", "alpha", "charlie"
    inventory = SimpleNamespace(get=lambda _name: SimpleNamespace(run=run))
    pipe = Pipeline([a, b, c], inventory=inventory, ctx=ctx, plan=plan)  # type: ignore[arg-type]
    running = {"alpha": "/run/a.5201.pid", "bravo": "/run/a.client.pid"}
    assert pipe.ahead(a, 1, 10, running) == {"alpha"}
    assert pipe.reading_after(a, "alpha") == "NETRUN_READY 1 5202 /tmp/x.log\n==reading==\n"
    assert scripts == ["/run/a.5201.pid"]
    assert pipe.reading_after(a, "alpha") is None  # once
    # c's server runs on a host b has no process on: its start waits for nothing
    assert pipe.ahead(b, 1, 10, {"alpha": "/run/b.5202.pid"}) == set()
    assert pipe.reading_after(b, "alpha") is None
    pipe.join_all()
