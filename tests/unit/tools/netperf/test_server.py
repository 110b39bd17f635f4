"""netserver: its busy port told by its own words (its stop is netrun.cleanup.undo's
kill_recorded by group, tested there)."""

from __future__ import annotations

from netrun.tools.netperf.server import BUSY
from tests.conftest import NETPERF_FIXTURES


def test_a_busy_port_is_told_by_netservers_own_words() -> None:
    assert BUSY in (NETPERF_FIXTURES / "netserver_busy.stderr").read_text()
    assert (NETPERF_FIXTURES / "netserver_busy.rc").read_text().strip() == "1"
