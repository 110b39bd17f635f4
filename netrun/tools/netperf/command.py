"""netperf's argv, and the sh that runs several netperf processes at once on one host.

Every token goes through ``shlex.join``; each process is bounded on the host by
``timeout``, so it ends even when the controller is gone.
"""

from __future__ import annotations

import shlex

from netrun.hosts import proc
from netrun.tools.netperf.parse import FIELDS, MARK

#: The tests netrun runs; the request/response ones report latency.
TESTS = ("TCP_RR", "UDP_RR", "TCP_CRR", "TCP_STREAM")
RR_TESTS = ("TCP_RR", "UDP_RR", "TCP_CRR")
DEFAULT_TEST = "TCP_RR"
#: The transport each test runs over (results.json's ``protocol``; netperf's PROTOCOL).
PROTOCOLS = {"TCP_RR": "tcp", "UDP_RR": "udp", "TCP_CRR": "tcp", "TCP_STREAM": "tcp"}
DEFAULT_PORT = 12865  # netserver's own default control port
#: Seconds a netperf process may outlive its test length (control setup, results).
SLACK = 15


def client_command(
    target: str,
    *,
    port: int,
    test: str,
    duration: int,
    request_size: int | None = None,
    response_size: int | None = None,
    binary: str = "netperf",
) -> list[str]:
    """One netperf process: banner on (-P 1, it says whether histograms are built in),
    ``-v 2`` for the histogram, the ``-o`` selectors parse.FIELDS reads."""
    argv = [binary, "-H", target, "-p", str(port), "-t", test, "-l", str(int(duration))]
    argv += ["-P", "1", "-v", "2", "--"]
    if test in RR_TESTS:
        if request_size is not None or response_size is not None:
            argv += ["-r", f"{request_size or 1},{response_size or 1}"]
    elif request_size is not None:
        argv += ["-m", str(request_size)]
    return [*argv, "-o", ",".join(FIELDS)]


def data_ports(control_port: int, instances: int) -> list[int]:
    """One netserver data port per process, beside the control port (above it, or below
    it when the ports above run out)."""
    base = control_port + 1 if control_port + instances <= 65535 else control_port - instances
    return [base + i for i in range(instances)]


def instances_script(
    argv: list[str],
    instances: int,
    deadline: float,
    out_prefix: str,
    *,
    minimal: bool = False,
    ports: list[int] | None = None,
) -> str:
    """sh starting ``instances`` copies of ``argv`` at once, each into its own file, then
    printing each one's part as ``MARK <i> rc <exit code>`` and its output (parse.split).

    ``minimal``: for a container image with only sh and cat besides netperf: no folder made,
    no ``timeout`` (the container's own time bound ends it) and no file removed (the
    container goes). ``ports``: each process's netserver data port (``-P ,PORT``, which
    makes netserver bind its data socket before listening; data_ports), else netserver's
    own choice."""
    q = shlex.quote
    lines = [f"prefix={q(out_prefix)}"]
    if not minimal:
        lines.append('mkdir -p "$(dirname "$prefix")" || exit 1')
    # each process's pid in the one pid-file format beside its output (exec keeps it): a
    # run killed meanwhile leaves it to the next run's sweep or `netrun cleanup`
    keep = f'{proc.save_pid(chr(34) + "$0" + chr(34), "$$")} && exec "$@"'
    for i in range(instances):
        one = [*argv, "-P", f",{ports[i]}"] if ports else argv
        if minimal:
            lines.append(f'{shlex.join(one)} >"$prefix.{i}" 2>&1 </dev/null & p{i}=$!')
            continue
        bounded = shlex.join(["timeout", "-k", "5", f"{deadline:g}", "sh", "-c", keep])
        lines.append(
            f'{bounded} "$prefix.{i}.pid" {shlex.join(one)} >"$prefix.{i}" 2>&1 </dev/null '
            f"& p{i}=$!"
        )
    for i in range(instances):
        lines.append(f'wait "$p{i}"; r{i}=$?')
    for i in range(instances):
        drop = "" if minimal else f'; rm -f "$prefix.{i}" "$prefix.{i}.pid"'
        lines.append(f'echo "{MARK}{i} rc $r{i}"; cat "$prefix.{i}"{drop}')
    return "\n".join(lines) + "\n"
