"""netrun.modes.docker.pathbytes: /proc/net/dev readings and the acceleration verdict.

Fixtures (tests/fixtures/netdev/) are the output of pathbytes.command() on lab host alpha
(real /proc/net/dev of the host namespace, then of an iperf3 container's PID 1), before
and after a 2 s bare-metal iperf3 from bravo to alpha over data0; the iperf3 receiver
counted iperf3-bytes-received.txt bytes.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
from typing import Any

import pytest

from netrun.hosts import cpustat
from netrun.hosts.command import CommandResult
from netrun.modes.docker import pathbytes
from tests.conftest import CPUSTAT_FIXTURES, NETDEV_FIXTURES

DEVICES: dict[str, str | None] = {"overlay": "flannel.1", "host_nic": "data0", "container": "eth0"}


def reading(name: str) -> tuple[pathbytes.Counters, pathbytes.Counters]:
    return pathbytes.parse((NETDEV_FIXTURES / f"{name}.txt").read_text())


def test_command_reads_host_then_container_and_quotes() -> None:
    assert pathbytes.command(None) == "cat /proc/net/dev"
    line = pathbytes.command(4242)
    assert line.startswith("cat /proc/net/dev; echo ")
    assert '"/proc/4242/net/dev"' in line
    assert "@@netrun-container@@" in line


def test_command_output_parses() -> None:
    """The reading runs in sh; this process's own PID stands for a container's PID 1."""
    out = subprocess.run(
        ["sh", "-c", pathbytes.command(os.getpid())], capture_output=True, text=True, check=True
    ).stdout
    host, container, cpu, found = pathbytes.parse(out)
    assert "lo" in host and "lo" in container
    assert cpu is not None and cpu.boot  # the host's per-core CPU rides on the same reading
    # the drop counters of the container's network namespace (here: this process's)
    assert found is not None and "udp_rcvbuf_errors" in found.values


def test_cpu_records_keep_the_tests_window_only() -> None:
    """Two real readings of this machine (tests/fixtures/cpustat): the client's window is
    2 s; a server whose reading before is far older than that gets no CPU figure."""

    def snap(name: str) -> pathbytes.Snapshot:
        return pathbytes.Snapshot({}, {}, cpustat.parse((CPUSTAT_FIXTURES / name).read_text()))

    before = {"client": snap("busy.before"), "server": snap("busy.before")}
    after = {"client": snap("busy.after"), "server": snap("busy.after")}
    found = pathbytes.cpu_records(before, after)
    assert found["server"]["cpu"]["busiest_pct"] == 100 and found["client"]["netns"] == "host"
    old = before["server"].cpu
    assert old is not None
    stale = {**old.cores, "cpu0": {**old.cores["cpu0"], "idle": old.cores["cpu0"]["idle"] - 900}}
    before["server"] = pathbytes.Snapshot({}, {}, cpustat.Reading(stale, old.softirqs, 100))
    found = pathbytes.cpu_records(before, after)
    assert (
        "cpu" not in found["server"] and "not the test's window" in found["server"]["unavailable"]
    )
    assert "cpu" in found["client"]


def test_parse_real_net_dev() -> None:
    host, container, *_ = reading("alpha-before")
    assert host["data0"] == (4602851908, 6097593)
    assert host["flannel.1"] == (1850399959, 1492723)
    assert host["docker0"] == (1492891, 1850807479)  # no space before the colon
    assert "eth0" not in host
    assert container == {"lo": (0, 0), "eth0": (486, 0)}


def test_parse_without_container_part() -> None:
    text = (NETDEV_FIXTURES / "alpha-before.txt").read_text().split("@@")[0]
    host, container, *_ = pathbytes.parse(text)
    assert "data0" in host and container == {}


def test_parse_ignores_garbage() -> None:
    assert pathbytes.parse_net_dev("no: table here\n x: 1 2\n") == {}


def test_delta_of_a_bare_metal_transfer() -> None:
    got = pathbytes.delta(DEVICES, reading("alpha-before"), reading("alpha-after"))
    received = int((NETDEV_FIXTURES / "iperf3-bytes-received.txt").read_text())
    assert got["host_nic"]["device"] == "data0"
    assert got["host_nic"]["rx_bytes"] >= received  # payload plus headers
    assert got["host_nic"]["rx_bytes"] < 1.05 * received
    assert got["overlay"]["rx_bytes"] < 1000 and got["container"]["rx_bytes"] < 1000


def test_delta_names_a_missing_device() -> None:
    got = pathbytes.delta(
        {"overlay": "vxlan.9", "host_nic": None}, reading("alpha-before"), reading("alpha-after")
    )
    assert got["overlay"]["rx_bytes"] is None
    assert "vxlan.9" in got["overlay"]["unavailable"]
    assert got["host_nic"]["tx_bytes"] is None


def ends(client: dict[str, int], server: dict[str, int]) -> dict[str, Any]:
    """Path bytes where the client sent (tx) and the server received (rx)."""

    def side(values: dict[str, int], direction: str) -> dict[str, Any]:
        return {dev: {"device": dev, f"{direction}_bytes": n} for dev, n in values.items()}

    return {"client": side(client, "tx"), "server": side(server, "rx")}


MB = 10**6


def test_verdict_bypassed_overlay_is_accelerated() -> None:
    path = ends(
        {"host_nic": 101 * MB, "overlay": 432, "container": 586},
        {"host_nic": 101 * MB, "overlay": 494, "container": 1122},
    )
    accelerated, crossed, why = pathbytes.verdict(path, 100 * MB, "client")
    assert (accelerated, crossed) == (True, False)
    assert "host NICs carried" in why and "494 bytes" in why


def test_verdict_stand_in_crossed_the_overlay() -> None:
    path = ends(
        {"host_nic": 105 * MB, "overlay": 101 * MB, "container": 101 * MB},
        {"host_nic": 105 * MB, "overlay": 101 * MB, "container": 101 * MB},
    )
    accelerated, crossed, why = pathbytes.verdict(path, 100 * MB, "client")
    assert (accelerated, crossed) == (False, True)
    assert "crossed the overlay" in why


def test_verdict_reverse_reads_the_server_as_sender() -> None:
    path = ends(
        {"host_nic": 100 * MB, "overlay": 0, "container": 0},
        {"host_nic": 100 * MB, "overlay": 0, "container": 0},
    )
    # -R: the server sends, so its tx (absent here) is what counts
    accelerated, _, why = pathbytes.verdict(path, 100 * MB, "server")
    assert accelerated is False and "counters" in why


@pytest.mark.parametrize("missing", ["host_nic", "overlay", "container"])
def test_verdict_without_counters_is_not_accelerated(missing: str) -> None:
    values = {"host_nic": 100 * MB, "overlay": 0, "container": 0}
    path = ends(values, values)
    path["server"][missing]["rx_bytes"] = None
    accelerated, crossed, why = pathbytes.verdict(path, 100 * MB, "client")
    assert (accelerated, crossed) == (False, False)
    assert missing in why and "server" in why


def test_verdict_partial_bypass_is_not_accelerated() -> None:
    path = ends(
        {"host_nic": 100 * MB, "overlay": 40 * MB, "container": 0},
        {"host_nic": 100 * MB, "overlay": 40 * MB, "container": 0},
    )
    accelerated, crossed, why = pathbytes.verdict(path, 100 * MB, "client")
    assert (accelerated, crossed) == (False, False)
    assert "40.0 MB" in why and "100.0 MB" in why


def test_verdict_of_an_empty_test() -> None:
    assert pathbytes.verdict({}, 0, "client")[0] is False


def test_container_records_carry_the_drop_counters_of_its_namespace() -> None:
    """Two real readings (this process standing for a container's PID 1): each end's
    record has the UDP counters of the container's network namespace, where its socket
    lives, so a UDP test's loss can be placed (netrun.tools.iperf3.loss)."""

    def now() -> pathbytes.Snapshot:
        line = pathbytes.shell_reading(str(os.getpid()), nic="lo")
        out = subprocess.run(["sh", "-c", line], capture_output=True, text=True, check=True)
        return pathbytes.parse(out.stdout)

    first, second = now(), now()
    records = pathbytes.cpu_records(
        {"client": first, "server": first}, {"client": second, "server": second}
    )
    for entry in records.values():
        assert entry["netns"] == "container" and entry["iface"] == "eth0"
        assert entry["udp_rcvbuf_errors"] is not None and entry["udp_rcvbuf_errors"] >= 0


def test_the_client_end_readings_survive_the_sections_they_ride_in() -> None:
    """The client's command carries its readings in sections (``wrap``): the counters'
    own start must not read as one of them."""
    line = pathbytes.wrap_line("echo hi", pathbytes.shell_reading(str(os.getpid()), nic="lo"))
    out = subprocess.run(["sh", "-c", line], capture_output=True, text=True, check=True)
    res, before, after = pathbytes.unwrap(CommandResult("h", line, 0, out.stdout, "", 0.1))
    assert res.stdout == "hi"
    assert before is not None and after is not None
    assert before.counters is not None and after.counters is not None and after.cpu is not None


@pytest.mark.parametrize(
    ("count", "shown"),
    [
        (0, "0 bytes"),
        (1, "1 byte"),
        (494, "494 bytes"),
        (999.6, "1.0 KB"),
        (999_960, "1.0 MB"),
        (18407, "18.4 KB"),
        (978216, "978.2 KB"),
        (231.2 * MB, "231.2 MB"),
        (11271.1 * MB, "11.3 GB"),
    ],
)
def test_size_reads_in_the_unit_of_its_magnitude(count: float, shown: str) -> None:
    assert pathbytes.size(count) == shown


def test_verdict_of_a_few_kb_says_kb_not_0_0_mb() -> None:
    # flannel TCP_RR x2 for 2 s on the lab: 18407 bytes of payload, flannel.1 ~0.98 MB
    path = ends(
        {"host_nic": 2157906, "overlay": 978216, "container": 1236306},
        {"host_nic": 2158290, "overlay": 978216, "container": 1237148},
    )
    _, crossed, why = pathbytes.verdict(path, 18407, "client")
    assert crossed is True
    assert why == "the test's 18.4 KB crossed the overlay device (978.2 KB)"


def test_the_freeflow_routers_cpu_rides_on_the_reading() -> None:
    """Readings on lab host alpha (tests/fixtures/freeflow/), the real router running:
    pathbytes.command of its container's PID 1 (pid 9071, the start script) with the router
    process (9148, its child) as the mode's own, before and after a 3 s netperf TCP_CRR
    through it (each connection is set up by the router: 0.24 CPU-seconds)."""
    from netrun.hosts import counters
    from tests.conftest import FIXTURES

    def snap(name: str) -> pathbytes.Snapshot:
        return pathbytes.parse((FIXTURES / "freeflow" / f"reading-router-{name}.txt").read_text())

    before, after = snap("before"), snap("after")
    assert before.counters is not None and after.counters is not None
    assert before.counters.procs["router"] == (9148, 40)  # utime 4 + stime 36 ticks
    found = pathbytes.cpu_records({"server": before}, {"server": after})["server"]
    assert found["procs"] == {"container": 0.0, "shim": 0.0, "router": 0.24}
    # the router gone by the reading after (it died of SIGPIPE once on the lab): said so
    dead = dataclasses.replace(after.counters, procs={"container": (9071, 1)})
    entry = counters.record(before.counters, dead, iface="eth0", netns="container")
    assert "router" not in entry["procs"] and "shim" not in entry["procs"]
    assert "9148 was gone" in entry["procs_unavailable"]["router"]


def test_own_procs_are_shell_words_with_the_known_pid_as_default() -> None:
    assert pathbytes.own_words({"router": 9148, "other": None}) == {
        "router": "${nr_p_router:-9148}",
        "other": "${nr_p_other:-0}",
    }
    line = pathbytes.command(9071, {"router": 9148})
    assert '"/proc/${nr_p_router:-9148}/stat"' in line and "pid router" in line
    with pytest.raises(ValueError):
        pathbytes.own_var("a; rm")
