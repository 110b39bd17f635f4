"""netperf in the container modes: the server container's command, and one measurement.

The docker modes keep both containers for the whole test (netrun.modes.docker.mode). For
``tool: netperf`` each runs a netserver as its PID 1 (netrun.tools.netperf.tool.resident:
the launch waits for its "Server listening", as for iperf3 and iperf2); a repeat is one
``docker exec`` of the instances script in the client container towards the server
container's address. Removing the containers ends netserver and its per-test children.
The image must have netperf, netserver, sh, grep and sleep (the lab's image does when the
lab has a netperf build; set ``image:``).

In the path-bytes modes (flannel, freeflow) each repeat reads the byte counters of both
ends around it (netrun.modes.docker.pathbytes) and judges each direction on the payload
netperf moved that way (stats.payload_bytes): ``measure_path`` and ``verdict``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from netrun.core.measurement import Measurement
from netrun.modes.docker import pathbytes
from netrun.tools import docker as dk
from netrun.tools.netperf import command, stats
from netrun.tools.netperf import tool as netperf_tool
from netrun.tools.netperf.parse import Instance

if TYPE_CHECKING:
    from netrun.modes.docker.base import ContainerMode

#: Where the client container keeps each process's output until it is printed.
OUT_PREFIX = "/tmp/netrun-netperf"


def measure(
    mode: ContainerMode, repeat: int, ports: list[int] | None = None
) -> tuple[list[Instance], str, dict[str, Any]]:
    """One repeat from the client container to the server container's netserver;
    ``ports``: each process's data port (command.instances_script), else netserver's choice."""
    assert mode.server_ip is not None
    port = int(mode.value("port"))
    argv = netperf_tool.client_argv(mode, mode.server_ip, port, "netperf")
    count = int(mode.test.value("instances"))
    deadline = netperf_tool.deadline(mode.test)
    script = command.instances_script(
        argv, count, deadline, f"{OUT_PREFIX}-r{repeat}", minimal=True, ports=ports
    )
    cmd = dk.exec_command(mode.names["client"], ["sh", "-c", script], mode.docker(mode.client))
    # the path-bytes modes read the client end's counters around it, in its round trip
    own = mode.own_procs(mode.client)
    sent = pathbytes.wrap(cmd, mode.pids.get("client"), own=own) if mode.counts_path else cmd
    res = mode.client.run(sent, timeout=deadline + 20, check=False)
    if mode.counts_path:
        res, before, after = pathbytes.unwrap(res)
        mode.counters.update(client_before=before, client_after=after)
    found, raw = netperf_tool.results_of(
        res.stdout, res.stdout + res.stderr, count, mode.client.name, deadline
    )
    extra: dict[str, Any] = {"target": f"{mode.server_ip}:{port}", "server_ip": mode.server_ip}
    if ports:
        extra["data_ports"] = list(ports)
    return found, raw, extra


def measure_path(
    mode: ContainerMode, repeat: int, ports: list[int] | None = None
) -> tuple[list[Instance], str, dict[str, Any], bool]:
    """``measure`` between two readings of both ends' counters, with the path bytes, the
    payload each way and whether it crossed the overlay in the extra details; also whether
    it left the overlay (accelerated, for the mode that claims it to record)."""
    done: list[tuple[list[Instance], str, dict[str, Any]]] = []

    def run() -> Measurement:
        done.append(measure(mode, repeat, ports))
        return Measurement("", None, {})

    # netserver never says it served a test (serverwait counts iperf3's LISTENING lines):
    # without a count, the server end's reading after is taken as soon as the client ends
    # instead of after a wait for words that do not come (10 s a repeat)
    mode.counters.pop("served", None)
    m, path = pathbytes.around(mode, run)
    found, raw, extra = done[0]
    moved = stats.payload_bytes(
        str(mode.test.value("test")),
        found,
        mode.test.value("request_size"),
        mode.test.value("response_size"),
    )
    accelerated, crossed, why = verdict(path, moved)
    extra.update(
        m.details, path_bytes=path, payload_bytes=moved, crossed_overlay=crossed, path_check=why
    )
    return found, raw, extra, accelerated


def verdict(path: dict[str, Any], moved: dict[str, int]) -> tuple[bool, bool, str]:
    """(accelerated, crossed_overlay, why) over each direction that moved payload: it is
    accelerated (crossed) only when every such direction is."""
    judged = [
        (sender, pathbytes.verdict(path, sent, sender))
        for sender, sent in moved.items()
        if sent > 0
    ]
    if not judged:
        return False, False, "the test moved no bytes"
    accelerated = all(v[0] for _, v in judged)
    crossed = all(v[1] for _, v in judged)
    why = "; ".join(f"{sender} to {_peer(sender)}: {v[2]}" for sender, v in judged)
    return accelerated, crossed, why


def _peer(end: str) -> str:
    return "server" if end == "client" else "client"
