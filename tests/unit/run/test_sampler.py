"""The live sampler: its counter loop, parsing real captured counter lines, the figure.

Fixture ``alpha-fwd-then-rev.txt`` is the loop's real output on the lab's alpha during a
4 s forward test (alpha received) and a 4 s reverse test (alpha sent) on a 1 Gbit/s link.
"""

from __future__ import annotations

import io
import re
import subprocess
import threading
from itertools import pairwise
from types import SimpleNamespace
from typing import Any

import pytest

from netrun.run import sampler
from netrun.run.progress import Console, Events
from netrun.tools import get_tool
from tests.conftest import SAMPLER_FIXTURES


def captured() -> list[str]:
    text = (SAMPLER_FIXTURES / "alpha-fwd-then-rev.txt").read_text()
    return [line for line in text.splitlines() if not line.startswith("#")]


def spec(**options: Any) -> Any:
    server = options.pop("server", "alpha")
    client = options.pop("client", "bravo")
    tool = options.pop("tool", "iperf3")
    return SimpleNamespace(
        name="t", server=server, client=client, tool=tool, repeat=1,
        options={"duration": 4, "omit": 0, **options},
    )  # fmt: skip


FACTS = {h: SimpleNamespace(nic=SimpleNamespace(iface="data0")) for h in ("alpha", "bravo")}


def test_the_real_counters_show_the_link_rate_while_data_flows() -> None:
    shown: list[str] = []
    meter = sampler.Meter(sampler.Target("alpha", "data0", "rx", 19), shown.append)
    for line in captured():
        meter.feed(line[:10])  # lines arrive in pieces
        meter.feed(line[10:] + "\n")
    assert len(shown) == len(captured()) - 1
    rates = [float(s.split(" rx ")[1].split()[0]) for s in shown]
    assert rates[0] == 0 and max(rates) > 900 and max(rates) < 1000  # tbf at 1 Gbit/s
    assert shown[3].startswith("NIC alpha:data0 rx ") and " Mbit/s avg " in shown[3]
    assert "avg" not in shown[0]


def test_tx_is_the_reverse_tests_figure() -> None:
    readings = [sampler.parse(line) for line in captured()]
    assert all(readings)
    tx = [sampler.rate_bps(a, b, "tx") for a, b in pairwise(readings)]
    assert max(r or 0 for r in tx[6:]) > 900e6 and max(r or 0 for r in tx[:4]) < 1e6


def test_parse_and_rate_refuse_what_is_not_a_figure() -> None:
    assert sampler.parse("30719.50 3300440419") is None
    assert sampler.parse("sh: 1: cannot open /sys/...: No such file") is None
    assert sampler.parse("") is None
    a, b = sampler.Reading(10.0, 1000, 0), sampler.Reading(10.0, 2000, 0)
    assert sampler.rate_bps(a, b, "rx") is None  # no time passed
    assert sampler.rate_bps(b, sampler.Reading(11.0, 5, 0), "rx") is None  # a reset counter
    assert sampler.rate_bps(a, sampler.Reading(11.0, 2000, 1000), "rx+tx") == 16000


def test_figures_keep_about_three_significant_digits() -> None:
    assert [sampler.mbps(x) for x in (938.4e6, 52.44e6, 1.634e6)] == ["938", "52.4", "1.63"]


def test_the_loop_runs_in_sh_ends_by_itself_and_quotes_the_interface() -> None:
    out = subprocess.run(
        ["sh", "-c", sampler.script("lo", 2)], capture_output=True, text=True, timeout=10
    )
    lines = out.stdout.splitlines()
    assert out.returncode == 0 and len(lines) == 2 and all(map(sampler.parse, lines))
    missing = subprocess.run(["sh", "-c", sampler.script("nope0", 5)], timeout=5)
    assert missing.returncode == 3  # no such NIC: ends at once
    assert "'/sys/class/net/x;reboot/statistics'" in sampler.script("x;reboot", 1)


def find(test: Any, facts: dict[str, Any]) -> sampler.Target | None:
    """The NIC sampled for ``test``, its tool's declaration read (Tool.live_nic)."""
    return sampler.target(test, facts, get_tool(test.tool))


def test_the_receiver_is_sampled() -> None:
    assert find(spec(), FACTS) == sampler.Target("alpha", "data0", "rx", 4 + 15)
    assert find(spec(reverse=True), FACTS).host == "bravo"  # type: ignore[union-attr]
    both = find(spec(bidir=True, omit=2), FACTS)
    assert both == sampler.Target("bravo", "data0", "rx+tx", 6 + 15)
    assert find(spec(tool="iperf2"), FACTS) is not None


@pytest.mark.parametrize(
    "test,facts",
    [
        (spec(tool="ping"), FACTS),  # not a throughput
        (spec(server="alpha", client="alpha"), FACTS),  # loopback: the NIC sees nothing
        (spec(duration=None), FACTS),
        (spec(), {"alpha": SimpleNamespace(nic=SimpleNamespace(iface=None))}),
        (spec(), {}),  # never probed
    ],
)
def test_no_figure_where_the_nic_cannot_tell(test: Any, facts: dict[str, Any]) -> None:
    assert find(test, facts) is None


def test_a_local_host_is_sampled_by_a_local_process() -> None:
    shown: list[str] = []
    got = threading.Event()

    def show(text: str) -> None:
        shown.append(text)
        got.set()

    s = sampler.Sampler(object(), sampler.Target("local", "lo", "rx", 5), show)
    s.start()
    assert got.wait(5), "a figure within two seconds"
    s.stop()
    s._thread.join(3)
    assert not s._thread.is_alive() and shown[0].startswith("NIC local:lo rx ")


def test_watch_does_nothing_unless_a_live_line_wants_it() -> None:
    inventory = SimpleNamespace(get=lambda name: pytest.fail("no host looked up"))
    with sampler.watch(Events(), spec(), 1, inventory, FACTS, get_tool("iperf3")):
        pass
    off_tty = Console(io.StringIO(), live=False)
    with sampler.watch(off_tty, spec(), 1, inventory, FACTS, get_tool("iperf3")):
        pass


def test_the_console_shows_the_figure_of_a_running_sample_only() -> None:
    con = Console(io.StringIO(), live=True)
    test = spec()
    con.total = 1
    con.figure(test, 1, "NIC alpha:data0 rx 938 Mbit/s")
    assert "NIC" not in con.status()  # not running: a late line is dropped
    con.start(test, 1)
    con.figure(test, 1, "NIC alpha:data0 rx 938 Mbit/s avg 930")
    assert "t repeat 1/1 0:00/0:04 NIC alpha:data0 rx 938 Mbit/s avg 930" in con.status()
    con.done(test, 1, {"status": "ok", "throughput_bps": 935e6})
    assert "NIC" not in con.status() and "last: t 935.0 Mbit/s" in con.status()
    con.close()


def test_a_stopped_connection_opens_no_channel() -> None:
    from netrun.errors import Cancelled, ConnectError
    from netrun.hosts.ssh.settings import SSHSettings
    from netrun.hosts.ssh.transport import SSHTransport

    ssh = SSHTransport(SimpleNamespace(name="alpha"), SSHSettings())  # type: ignore[arg-type]
    with pytest.raises(ConnectError):
        ssh.open_channel("true")  # never connected
    ssh.interrupt(running=False)
    with pytest.raises(Cancelled):
        ssh.open_channel("true")  # Ctrl-C: nothing new starts


def test_a_channel_that_cannot_open_is_a_connect_error_that_says_why() -> None:
    """The sampler's channel opens as every command's does (netrun.hosts.ssh.channel.open_channel):
    paramiko's own error becomes a ConnectError naming the host, a dropped link says so."""
    from netrun.errors import ConnectError
    from netrun.hosts.ssh.failures import LOST
    from netrun.hosts.ssh.settings import SSHSettings
    from netrun.hosts.ssh.transport import SSHTransport

    def refuse(timeout: float) -> None:
        raise EOFError("administratively prohibited")

    ssh = SSHTransport(SimpleNamespace(name="alpha"), SSHSettings())  # type: ignore[arg-type]
    for active, said in ((True, "cannot open an SSH channel"), (False, LOST)):
        link = SimpleNamespace(open_session=refuse, is_active=lambda active=active: active)
        ssh._conn = SimpleNamespace(get_transport=lambda link=link: link)  # type: ignore[assignment]
        with pytest.raises(ConnectError, match=re.escape(said)) as caught:
            ssh.open_channel("true")
        assert caught.value.host == "alpha"
