"""Running one step on many hosts at once, each failure kept per host (fabric's GroupResult).

A bounded thread pool with one deadline for the whole step, rather than fabric's
ThreadingGroup (which joins without a timeout). Cleanup steps run inside ``cleaning()``:
an interrupt then neither cuts short a command already running nor refuses a new one,
and the pool's worker threads inherit that, so a teardown spread over hosts is whole.
"""

from __future__ import annotations

import contextlib
import functools
import math
import signal
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from netrun.errors import ConnectError, NetrunError
from netrun.hosts.shield import cleaning, in_cleanup

if TYPE_CHECKING:
    from netrun.hosts.host import Host


#: Hosts one step works on at once unless told otherwise: Ansible's default ``forks``.
DEFAULT_FORKS = 5


@contextlib.contextmanager
def stop_on_signal(stop: Callable[[], None]) -> Iterator[None]:
    """On SIGINT/SIGTERM call ``stop`` first (no host starts a new command), then what
    the signal did before (KeyboardInterrupt, the CLI's Interrupted): a step running in
    another thread starts nothing more (a long docker pull) while we unwind."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    old = {s: h for s, h in old.items() if h not in (signal.SIG_IGN, None)}  # ignored stays so

    def handler(signum: int, frame: Any) -> None:
        stop()
        before = old[signal.Signals(signum)]
        if callable(before):
            before(signum, frame)
        elif before == signal.SIG_DFL and signum == signal.SIGINT:
            raise KeyboardInterrupt
        elif before == signal.SIG_DFL:
            signal.signal(signum, signal.SIG_DFL)
            signal.raise_signal(signum)

    for sig in old:
        signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, before in old.items():
            signal.signal(sig, before)


def _inherit(task: Callable[[], None]) -> Callable[[], None]:
    """A task that runs in cleanup mode when the step that submits it does."""
    if not in_cleanup():
        return task

    def run() -> None:
        with cleaning():
            task()

    return run


@dataclass
class GroupResult:
    """Per-host outcomes of one step (after fabric's GroupResult): who succeeded, who failed."""

    succeeded: list[str] = field(default_factory=list)
    failed: dict[str, NetrunError] = field(default_factory=dict)


def in_parallel(
    tasks: Mapping[str, Callable[[], None]], *, deadline: float, max_workers: int = 16
) -> GroupResult:
    """Run named tasks in a pool of ``max_workers`` (forks), with one deadline for all.

    The deadline is one task's: with more tasks than workers it grows by one deadline
    per wave of ``max_workers`` tasks, so a small ``forks`` never fails hosts that only
    waited their turn. A task that raises a NetrunError, or does not finish in time,
    lands in ``failed`` under its name; the others still complete. Unexpected
    exceptions propagate (bugs).
    """
    out = GroupResult()
    if not tasks:
        return out
    workers = max(1, min(max_workers, len(tasks)))
    pool = ThreadPoolExecutor(max_workers=workers)
    interrupted = False
    total = deadline * math.ceil(len(tasks) / workers)
    try:
        futures = {pool.submit(_inherit(task)): name for name, task in tasks.items()}
        _done, pending = wait(futures, timeout=total)
        for fut, name in futures.items():
            if fut in pending:
                out.failed[name] = ConnectError(name, f"no answer within {total:g}s")
                continue
            exc = fut.exception()
            if exc is None:
                out.succeeded.append(name)
            elif isinstance(exc, NetrunError):
                out.failed[name] = exc
            else:
                raise exc
    except BaseException:
        interrupted = True
        raise
    finally:
        # On Ctrl-C, let the steps already running finish (each has its own deadline):
        # cleanup must not run while a step is still starting a container or a server.
        pool.shutdown(wait=interrupted, cancel_futures=True)
    return out


def on_each(
    hosts: Iterable[Host],
    step: Callable[[Host], None],
    *,
    deadline: float,
    max_workers: int = 16,
) -> GroupResult:
    """Run ``step`` on every host in parallel; failures are collected per host name."""
    tasks = {h.name: functools.partial(step, h) for h in hosts}
    return in_parallel(tasks, deadline=deadline, max_workers=max_workers)
