"""Running one step on many hosts at once, each failure kept per host (fabric's GroupResult).

A bounded thread pool with one deadline for the whole step, rather than fabric's
ThreadingGroup (which joins without a timeout). Cleanup steps run inside ``cleaning()``:
an interrupt then neither cuts short a command already running nor refuses a new one,
and the pool's worker threads inherit that, so a teardown spread over hosts is whole.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from netrun.errors import ConnectError, NetrunError

if TYPE_CHECKING:
    from netrun.host import Host

_local = threading.local()


@contextlib.contextmanager
def cleaning() -> Iterator[None]:
    """Mark this thread's commands as cleanup: not cancellable by an interrupt."""
    before = getattr(_local, "cleaning", False)
    _local.cleaning = True
    try:
        yield
    finally:
        _local.cleaning = before


def in_cleanup() -> bool:
    """True inside ``cleaning()`` (in this thread, or in the step that started it)."""
    return bool(getattr(_local, "cleaning", False))


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
    """Run named tasks in a bounded pool, with one deadline for all of them.

    A task that raises a NetrunError, or does not finish in time, lands in ``failed``
    under its name; the others still complete. Unexpected exceptions propagate (bugs).
    """
    out = GroupResult()
    if not tasks:
        return out
    pool = ThreadPoolExecutor(max_workers=min(max_workers, len(tasks)))
    interrupted = False
    try:
        futures = {pool.submit(_inherit(task)): name for name, task in tasks.items()}
        _done, pending = wait(futures, timeout=deadline)
        for fut, name in futures.items():
            if fut in pending:
                out.failed[name] = ConnectError(name, f"no answer within {deadline:g}s")
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
