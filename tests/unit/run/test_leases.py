"""netrun.run.leases: which held hosts a run may take over (its own controller's dead runs only)."""

from __future__ import annotations

import socket

from netrun.hosts import lease
from netrun.run.leases import dead_holders


def test_only_dead_runs_of_this_controller_are_taken_over() -> None:
    here = socket.gethostname()
    mine_dead = lease.holder("aaaa1111")
    held = {
        "alpha": mine_dead,
        "bravo": lease.holder("bbbb2222"),  # this controller's, still running
        "charlie": f"run cccc3333 from not-{here} (user x, pid 1, started 2026-12-03T00:00:00Z)",
        "delta": "by a run that did not say who",
    }
    assert mine_dead.startswith(f"run aaaa1111 from {here} ")
    assert dead_holders(held, {"aaaa1111", "cccc3333"}) == {"alpha": "aaaa1111"}
    assert dead_holders(held, set()) == {}
