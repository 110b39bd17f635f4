"""Waiting for hosts another run measures (netrun.hosts.lease), all of them or none.

A run takes each host's lease in that host's probe. When another run holds one, the run
either refuses at once (exit 75) or, with a wait, lets go of every lease it took and
tries again for all of its hosts together until the wait runs out: a run never holds one
host while it waits for another, so two runs that each need the other's host cannot
wait on each other until both give up.
"""

from __future__ import annotations

import random
import re
import socket
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from netrun.errors import HostLeased
from netrun.hosts import lease
from netrun.hosts.group import on_each

if TYPE_CHECKING:
    from netrun.hosts.host import Host

#: Seconds between tries while waiting (each try a random part longer: two waiting runs
#: do not keep meeting).
RETRY_S = 2.0


#: The run id and controller in a holder's line (netrun.hosts.lease.holder).
HOLDER = re.compile(r"run ([0-9a-f]{4,32}) from (\S+) ")


def dead_holders(held: dict[str, str], dead: set[str]) -> dict[str, str]:
    """Host name -> run id, for the ``held`` hosts whose holder is a run of this
    controller that no longer runs (``dead``: run ids of the journal's stale entries).
    Its lease outlives it only while the host keeps its lost connection (a network cut:
    sshd waits for TCP to time out), and is this controller's to end."""
    found = {}
    for name, who in held.items():
        m = HOLDER.match(who)
        if m and m.group(1) in dead and m.group(2) == socket.gethostname():
            found[name] = m.group(1)
    return found


def take(host: Host, run_id: str, who: str) -> lease.Answer:
    """Take ``host``'s lease for ``run_id`` on its own (outside a probe)."""
    res = host.run(lease.acquire_script(run_id, who), timeout=30, check=False)
    return lease.parse(res.stdout, run_id) or lease.Answer("none", "the host did not answer")


def take_all(hosts: Sequence[Host], run_id: str, who: str, forks: int) -> dict[str, lease.Answer]:
    """Take every host's lease at once; a host that stopped answering raises (its
    probe again would say why)."""
    answers: dict[str, lease.Answer] = {}

    def one(host: Host) -> None:
        answers[host.name] = take(host, run_id, who)

    failed = on_each(hosts, one, deadline=60, max_workers=forks).failed
    if failed:
        raise next(iter(failed.values()))
    return answers


def release(hosts: Sequence[Host], run_id: str, forks: int) -> None:
    """Let go of ``run_id``'s leases on ``hosts`` (failures only leave a lease that ends
    with the run's connection)."""

    def one(host: Host) -> None:
        host.run(lease.release_script(run_id), timeout=30, check=False)

    on_each(hosts, one, deadline=60, max_workers=forks)


def wait_for_hosts(
    hosts: Sequence[Host],
    held: dict[str, str],
    *,
    run_id: str,
    who: str,
    wait_s: float,
    forks: int,
    progress: Callable[[str], None],
    stopping: Callable[[], bool] = lambda: False,
) -> None:
    """Return once this run holds the lease of every host in ``hosts``; ``held`` (host
    name -> who holds it) are those another run holds now. HostLeased when ``wait_s``
    runs out (at once when it is 0)."""
    if wait_s <= 0:
        raise HostLeased(held)
    names = ", ".join(f"{name} ({who})" for name, who in held.items())
    progress(f"waiting up to {wait_s:g}s for host(s) another run measures: {names}")
    deadline = time.monotonic() + wait_s
    release(hosts, run_id, forks)
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or stopping():
            raise HostLeased(held, waited=wait_s)
        time.sleep(min(left, RETRY_S * (1 + random.random())))
        answers = take_all(hosts, run_id, who, forks)
        now = {n: a.detail for n, a in answers.items() if a.state == "held"}
        if not now:
            return
        held = now
        release([h for h in hosts if answers[h.name].state == "taken"], run_id, forks)
