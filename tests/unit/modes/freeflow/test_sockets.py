"""netrun.modes.freeflow.sockets and FreeFlow.setup: a UDP test is refused in mode
freeflow before anything reaches a host, since FreeFlow's library hands only SOCK_STREAM
sockets to its router (the test would measure the plain overlay)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from netrun.errors import ModeError
from netrun.hosts.host import Host
from netrun.modes.base import RunContext
from netrun.modes.freeflow import sockets
from netrun.modes.freeflow.mode import FreeFlow
from netrun.scenario.loader import load_scenario


class NoCommand:
    """A host that must not be asked anything: the refusal comes first."""

    def run(self, argv: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"a command reached the host: {argv}")


def freeflow(tmp_path: Path, test: str) -> FreeFlow:
    scen = tmp_path / "s.yaml"
    scen.write_text(
        f"tests:\n  - {{name: t, mode: freeflow, server: alpha, client: bravo, {test}}}\n"
    )
    (spec,) = load_scenario(scen, hosts=["alpha", "bravo"]).tests
    alpha, bravo = Host("alpha", {}), Host("bravo", {})
    alpha.transport = bravo.transport = NoCommand()  # type: ignore[assignment]
    return FreeFlow(spec, alpha, bravo, RunContext(run_id="1a2b"))


def test_iperf3_udp_is_refused_in_one_line_naming_the_test_and_the_other_modes() -> None:
    assert sockets.IPERF3_UDP in FreeFlow.cannot
    udp = sockets.IPERF3_UDP.matches("iperf3", {"protocol": "udp"}.get)
    assert udp and not sockets.IPERF3_UDP.matches("iperf3", {"protocol": "tcp"}.get)
    why = sockets.IPERF3_UDP.why.format(test="udp-500m", mode="freeflow")
    assert "\n" not in why
    assert why.startswith("test udp-500m: iperf3 protocol udp cannot run in mode freeflow: ")
    assert "SOCK_STREAM" in why and "mode flannel or docker" in why


@pytest.mark.parametrize(
    ("test", "refused"),
    [
        ("protocol: udp, bitrate: 200M", "iperf3 protocol udp cannot run in mode freeflow"),
        ("tool: netperf, test: UDP_RR", "netperf test UDP_RR cannot run in mode freeflow"),
    ],
)
def test_setup_refuses_a_udp_test_before_any_host_command(
    tmp_path: Path, test: str, refused: str
) -> None:
    with pytest.raises(ModeError, match=refused):
        freeflow(tmp_path, test).setup()
