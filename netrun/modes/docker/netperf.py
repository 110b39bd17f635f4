"""netperf in the container modes: the server container's command, and one measurement.

The docker modes keep both containers for the whole test (netrun.modes.docker.mode). For
``tool: netperf`` each runs a netserver under a small sh loop that says "Server listening"
once netserver's port is in the container's /proc/net/tcp (the launch waits for those
words, as for iperf3 and iperf2); a repeat is one ``docker exec`` of the instances script in
the client container towards the server container's address. Removing the containers ends
netserver and its per-test children. The image must have netperf, netserver, sh, grep and
sleep (the lab's image does when the lab has a netperf build; set ``image:``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from netrun.modes.docker import pathbytes
from netrun.tools import docker as dk
from netrun.tools.netperf import command
from netrun.tools.netperf import tool as netperf_tool
from netrun.tools.netperf.parse import Instance

if TYPE_CHECKING:
    from netrun.modes.docker.base import ContainerMode

#: PID 1 of a netperf container: netserver, and the words the launch waits for once it
#: listens ($0 is the port). netserver without -L listens on both families: tcp or tcp6.
SERVER = r"""
netserver -D -p "$0" & n=$!
h=$(printf ':%04X' "$0")
while ! grep -Eq "$h [0-9A-F]+:0000 0A" /proc/net/tcp /proc/net/tcp6 2>/dev/null; do
    kill -0 "$n" 2>/dev/null || exit 1
    sleep 0.05
done
echo "Server listening on TCP port $0 (netserver)"
wait "$n"
"""
#: Where the client container keeps each process's output until it is printed.
OUT_PREFIX = "/tmp/netrun-netperf"


def server_args(port: int) -> tuple[str, list[str]]:
    """Entrypoint and arguments of a netperf container."""
    return "sh", ["-c", SERVER, str(int(port))]


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
    sent = pathbytes.wrap(cmd, mode.pids.get("client")) if mode.counts_path else cmd
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
