"""Running a scenario's tests several at once: never two tests on one host, in plan order.

A test holds every host of every role it names (server, client, relay...). It starts as
soon as all of them are free, so disjoint tests overlap and a test sharing a host waits.
The tests come in the order of their rounds (netrun.run.rounds), and a test never overtakes an
earlier waiting one on a host: the hosts of a test that must wait are reserved for it, so
a later round's test cannot slip in and push the planned round back.
On Ctrl-C or SIGTERM (which reach the main thread only) ``interrupt`` stops every host's
running command, and each worker records its test as interrupted and tears it down
before the run's own cleanup starts.
A test that must run ``alone`` (it changes something beyond its hosts: a Kubernetes
cluster's CNI MTU, netrun.modes.base.Mode.alone) starts once every earlier test has ended,
and nothing starts beside it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Protocol, TypeVar


class Placed(Protocol):
    """A test as the scheduler sees it (a TestSpec, or its plan: netrun.run.plan): the
    hosts it holds while it runs."""

    @property
    def hosts(self) -> tuple[str, ...]: ...


P = TypeVar("P", bound=Placed)


def run_parallel(
    tests: list[P],
    width: int,
    run_test: Callable[[P, int, int], None],
    interrupt: Callable[[], None],
    shielded: Callable[[], contextlib.AbstractContextManager[None]] = contextlib.nullcontext,
    alone: Callable[[P], bool] = lambda test: False,
) -> None:
    """Run up to ``width`` tests at once with ``run_test(test, number, total)``.

    ``shielded`` keeps signals out while the workers wind down after an interrupt;
    ``alone(test)``: the test runs with no other.
    """
    total = len(tests)
    waiting = list(enumerate(tests, 1))
    running: dict[Future[None], set[str]] = {}
    busy: set[str] = set()
    solo: set[Future[None]] = set()  # a running test that runs alone
    pool = ThreadPoolExecutor(max_workers=min(width, total), thread_name_prefix="test")
    try:
        while waiting or running:
            reserved: set[str] = set()
            for item in list(waiting):
                if len(running) >= width or solo:
                    break
                number, test = item
                by_itself = alone(test)
                if by_itself and (running or reserved):
                    break  # after every earlier test, and nothing later overtakes it
                hosts = set(test.hosts)
                if hosts & (busy | reserved):
                    reserved |= hosts
                    continue
                waiting.remove(item)
                busy |= hosts
                fut = pool.submit(run_test, test, number, total)
                running[fut] = hosts
                if by_itself:
                    solo.add(fut)
                    break
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in finished:
                solo.discard(fut)
                busy -= running.pop(fut)
                fut.result()  # a bug in a worker stops the run, as it would sequentially
    except BaseException:
        with shielded():
            interrupt()
            pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
