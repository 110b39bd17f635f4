"""netperf as a tool a test picks: request/response latency percentiles and rates.

``test: TCP_RR`` (default), ``UDP_RR``, ``TCP_CRR`` (a connection per transaction) or
``TCP_STREAM``. Each repeat starts a netserver on the server host (netrun.tools.netperf.server),
runs ``instances`` netperf processes at once on the client towards the server's data
address, keeps their output raw, and stops the netserver. Percentiles come from the
processes' ``-v 2`` histograms, pooled (netrun.tools.netperf.stats): a netperf built
without ``--enable-histogram`` leaves them unavailable, with the reason.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from netrun.core.measurement import Measurement
from netrun.core.metrics import Metric
from netrun.core.options import Option, integer
from netrun.core.programs import Program
from netrun.tools.base import Latency, Tool
from netrun.tools.load import spec as load_spec
from netrun.tools.netperf import command, server, stats
from netrun.tools.netperf.parse import Instance, NetperfError, parse, split

if TYPE_CHECKING:
    from netrun.core.spec import TestSpec
    from netrun.tools.base import Placement

MAX_INSTANCES = 64

# fmt: off
OPTIONS: tuple[Option, ...] = (
    Option("test", str, command.DEFAULT_TEST, "netperf test (netperf -t): TCP_RR, UDP_RR, TCP_CRR "
           "(a connection per transaction) or TCP_STREAM", choices=command.TESTS),
    Option("request_size", int, None, "request bytes (-r REQ,RESP; TCP_STREAM: send size, "
           "-m); null: netperf's default (1 byte; TCP_STREAM: the socket buffer)",
           check=integer(1, 65507), nullable=True),
    Option("response_size", int, None, "response bytes (-r REQ,RESP); null: 1 byte",
           check=integer(1, 65507), nullable=True),
    Option("duration", int, 10, "seconds per run (netperf -l)", check=integer(1, 86400)),
    Option("instances", int, 1, "netperf processes at once; their histograms are pooled",
           check=integer(1, MAX_INSTANCES)),
    Option("port", int, command.DEFAULT_PORT, "netserver's control port (netserver -p)",
           check=integer(1, 65535), from_inventory=True),
    load_spec.OPTION,  # latency under load (netrun.tools.load)
)

#: netperf's histogram buckets are 10 us wide: a latency change under one bucket is never
#: judged (see Metric.floor).
BUCKET_US = 10.0
METRICS: tuple[Metric, ...] = (
    Metric("transactions_per_s", "1/s", "higher", "request/response transactions per second "
           "(summed over instances)", tolerance="10%", digits=0),
    Metric("latency_p50_us", "us", "lower", "median transaction time: the low edge of its "
           "pooled histogram bucket (details.bucket_us)", tolerance="20%", digits=0,
           floor=BUCKET_US),
    Metric("latency_p90_us", "us", "lower", "90th percentile transaction time (bucket's low "
           "edge)", tolerance="25%", digits=0, floor=BUCKET_US),
    Metric("latency_p99_us", "us", "lower", "99th percentile transaction time (bucket's low "
           "edge)", tolerance="50%", digits=0, floor=BUCKET_US),
    Metric("latency_p999_us", "us", "lower", "99.9th percentile transaction time (bucket's "
           "low edge; >= 1000 transactions)", tolerance="50%", digits=0, floor=BUCKET_US),
    # the mean transaction time is 1 / transactions_per_s per instance, the headline: judged
    # once, through it, unless a scenario names it in tolerances:
    Metric("latency_mean_us", "us", "lower", "mean transaction time", digits=1,
           floor=BUCKET_US),
    Metric("latency_stddev_us", "us", "lower", "standard deviation of the transaction times",
           tolerance="50%", digits=1, floor=BUCKET_US),
    Metric("latency_max_us", "us", "lower", "longest transaction", tolerance="50%",
           digits=0, floor=BUCKET_US),
    Metric("connections_per_s", "1/s", "higher", "connections per second (TCP_CRR)",
           tolerance="10%", digits=0),
    Metric("throughput_bps", "bits/s", "higher", "TCP_STREAM throughput (summed over "
           "instances)", tolerance="10%", scale=1e6, shown_unit="Mbit/s", digits=1),
)
# fmt: on


def check(options: Mapping[str, Any]) -> list[str]:
    """Problems between options."""
    if options.get("test") == "TCP_STREAM" and options.get("response_size") is not None:
        return ["response_size must be unset for test: TCP_STREAM (it sends one way)"]
    return []


def _deadline(test: TestSpec) -> float:
    if test.value("timeout") is not None:
        return float(test.value("timeout"))
    return float(test.value("duration")) + command.SLACK


def instances(mode: Placement, target: str, port: int, tag: str) -> tuple[list[Instance], str]:
    """Run the test's netperf processes from the client to ``target:port``: their parsed
    results and the raw output of all of them."""
    t, end = mode.test, mode.end("client")
    client = end.host
    argv = client_argv(mode, target, port, end.program("netrun_netperf", "netperf"))
    deadline = _deadline(t)
    q = shlex.quote
    found = f"command -v {q(argv[0])} >/dev/null 2>&1 || echo NETRUN_MISSING"
    probe = end.run(end.at(found), timeout=15, check=False)  # where it runs
    if "NETRUN_MISSING" in probe.stdout:
        raise NetperfError(
            "missing", f"{client.name}: netperf not found ({argv[0]!r}): {server.INSTALL}, "
            "or set netrun_netperf to its path",
        )  # fmt: skip
    count = int(t.value("instances"))
    script = command.instances_script(
        end.wrap(argv), count, deadline, f"{end.workdir}/netperf-{tag}.out"
    )
    res = end.run(script, timeout=deadline + 20, check=False)
    return results_of(res.stdout, res.stdout + res.stderr, count, client.name, deadline)


def client_argv(mode: Placement, target: str, port: int, binary: str) -> list[str]:
    """One netperf process's argv for the test (the container modes run it in a container)."""
    t = mode.test
    return command.client_command(
        target, port=port, test=str(t.value("test")), duration=int(t.value("duration")),
        request_size=t.value("request_size"), response_size=t.value("response_size"),
        binary=binary,
    )  # fmt: skip


def results_of(
    text: str, raw: str, count: int, where: str, deadline: float
) -> tuple[list[Instance], str]:
    """The instances script's output (command.instances_script) parsed, one per process;
    NetperfError naming ``where`` (the client host) when one failed."""
    parts = split(text)
    if len(parts) != count:
        raise NetperfError("bad-output", f"{where}: {len(parts)} of {count} netperf "
                           "processes reported", raw)  # fmt: skip
    found = []
    for rc, part in parts:
        try:
            found.append(parse(part, rc))
        except NetperfError as exc:
            message = exc.message
            if exc.kind == "timeout":
                message = f"netperf did not finish within {deadline:g}s"
            raise NetperfError(exc.kind, f"{where}: {message}", raw) from None
    return found, raw


def deadline(test: TestSpec) -> float:
    """Seconds one netperf process may take."""
    return _deadline(test)


def with_resident(
    mode: Placement, target: str, port: int, repeat: int, ports: list[int] | None
) -> tuple[list[Instance], str]:
    """The test's netperf processes at the client end, in one sh there, towards the
    netserver the server end keeps for the whole test (End.resident: a container's PID 1,
    Tool.resident); ``ports``: each process's data port, else netserver's choice."""
    end = mode.end("client")
    argv = client_argv(mode, target, port, end.program("netrun_netperf", "netperf"))
    count = int(mode.test.value("instances"))
    deadline = _deadline(mode.test)
    script = command.instances_script(
        argv, count, deadline, end.path(f"netperf-r{repeat}"), minimal=True, ports=ports
    )
    res = end.run(end.at(script), timeout=deadline + 20, check=False)
    return results_of(res.stdout, res.stdout + res.stderr, count, mode.client.name, deadline)


def measure(mode: Placement, repeat: int) -> Measurement:
    """One repeat: a netserver at the server end (or the one it keeps), the netperf
    processes at the client end, the leg carried the mode's way."""
    tag = f"t{mode.test.index}r{repeat}"
    port = int(mode.value("port"))
    t, server_end = mode.test, mode.end("server")
    count = int(t.value("instances"))
    # a server end that must bind each socket it listens on: each netperf names its data port
    ports = command.data_ports(port, count) if server_end.needs_bind else None

    dialled: list[str] = []

    def leg(target: str, to: int) -> tuple[list[Instance], str]:
        dialled.append(f"{target}:{to}")
        if server_end.resident:
            return with_resident(mode, target, to, repeat, ports)
        srv = server.start(mode, server_end, port, tag)
        # on a failure or an interrupt the undo record stops it, in the test's teardown (a
        # command sent from here meanwhile would be cancelled, and replace the interrupt)
        found = instances(mode, target, to, tag)
        server.stop(srv)
        return found

    def moved(value: tuple[list[Instance], str]) -> dict[str, int]:
        size = t.value("request_size"), t.value("response_size")
        return stats.payload_bytes(str(t.value("test")), value[0], *size)

    carried = mode.carry(repeat, port, leg, moved)
    found, raw = carried.value
    extra: dict[str, Any] = {"target": dialled[-1], **carried.details}
    if ports:
        extra["data_ports"] = list(ports)
    test = str(mode.test.value("test"))
    metrics, why, details = stats.figures(test, found, mode.client.name)
    return Measurement(raw, found, {**details, **extra}, metrics, why)


def preview(mode: Placement) -> list[tuple[str, str]]:
    """netserver at the server end, the test's netperf processes at the client end."""
    port = int(mode.value("port"))
    srv_end, cli_end = mode.end("server"), mode.end("client")
    program = srv_end.program("netrun_netserver", "netserver")
    srv = [program, "-D", "-L", srv_end.bind, "-p", str(port)]
    cli = client_argv(mode, srv_end.address, port, cli_end.program("netrun_netperf", "netperf"))
    count = int(mode.test.value("instances"))
    times = f"  (x {count} at once)" if count > 1 else ""
    return [
        ("server", shlex.join(srv_end.wrap(srv))),
        ("client", shlex.join(cli_end.wrap(cli)) + times),
    ]


#: What the resident netserver's loop prints once it listens (Tool.resident_ready); it
#: prints nothing once per test (Tool.resident_served: None).
READY = "Server listening"
#: netserver for a whole test (Tool.resident), under a small sh loop that says READY once
#: its port is in /proc/net/tcp ($0 is the port); without -L it listens on both families:
#: tcp or tcp6. Its end needs sh, grep and sleep.
RESIDENT = rf"""
netserver -D -p "$0" & n=$!
h=$(printf ':%04X' "$0")
while ! grep -Eq "$h [0-9A-F]+:0000 0A" /proc/net/tcp /proc/net/tcp6 2>/dev/null; do
    kill -0 "$n" 2>/dev/null || exit 1
    sleep 0.05
done
echo "{READY} on TCP port $0 (netserver)"
wait "$n"
"""


def resident(port: int) -> list[str]:
    """netserver for a whole test, said ready once it listens (Tool.resident)."""
    return ["sh", "-c", RESIDENT, str(int(port))]


def protocol(options: Mapping[str, Any]) -> str:
    """The transport of the test's ``test:`` (tcp, or udp for UDP_RR)."""
    return command.PROTOCOLS[str(options.get("test") or command.DEFAULT_TEST)]


def describe(test: TestSpec) -> str:
    n = int(test.value("instances"))
    return f"netperf {test.value('test')}{f' x{n}' if n > 1 else ''} for {test.value('duration')}s"


#: netperf is in Ubuntu's multiverse; Debian 12 has no package (it is non-free elsewhere).
NETPERF_PACKAGE = (
    "netperf (Ubuntu multiverse; Debian 12 has none: build it from "
    "https://github.com/HewlettPackard/netperf with ./configure --enable-histogram)"
)

TOOL = Tool(
    name="netperf",
    options=OPTIONS,
    metrics=METRICS,
    measure=measure,
    describe=describe,
    check=check,
    protocol_of=protocol,
    # TCP_STREAM's THROUGHPUT is what netserver received (netperf computes it from the
    # remote's received bytes), like iperf3's receiver sum
    top_level=("throughput_bps",),
    needs={"server": ("netserver",), "client": ("netperf",)},
    installs=(
        Program("netperf", "netrun_netperf", NETPERF_PACKAGE, "netperf (EPEL)"),
        Program("netserver", "netrun_netserver", NETPERF_PACKAGE, "netperf (EPEL)"),
    ),
    preview=preview,
    resident=resident,
    resident_ready=READY,
    # only each repeat's netperf processes (Tool.client_only)
    client_only=frozenset({"duration"}),
    latency=Latency("latency_p50_us", "latency_p99_us", per_ms=0.001),
)
