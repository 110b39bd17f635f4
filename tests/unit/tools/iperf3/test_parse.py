"""netrun.tools.iperf3.command against real iperf3 3.12 output (tests/fixtures/capture.sh made it).

Shapes iperf3 prints in the wild but that are hard to provoke on demand (nan tokens, cut-off
JSON, text after the JSON, two objects) are derived from a captured file by a transformation
written next to each test.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from netrun.hosts.proc import boot_id, process_start
from netrun.tools.iperf3 import command as iperf3
from netrun.tools.iperf3 import parse as iperf3_parse
from netrun.tools.iperf3 import server as iperf3_server
from netrun.tools.iperf3.parse import parse
from netrun.tools.iperf3.result import Iperf3Error
from tests.conftest import IPERF3_FIXTURES


def load(name: str) -> tuple[str, str, int]:
    """(stdout, stderr, exit status) of one captured run."""
    base = IPERF3_FIXTURES / name
    return (
        base.with_suffix(".stdout").read_text(),
        base.with_suffix(".stderr").read_text(),
        int(base.with_suffix(".rc").read_text()),
    )


def raw(name: str) -> dict:
    return json.loads(load(name)[0])


# -- successful runs ------------------------------------------------------------------------
def test_tcp_one_stream() -> None:
    data = raw("tcp_1stream")
    result = parse(*load("tcp_1stream")[::2])
    assert result.protocol == "tcp"
    assert result.version == "3.12"
    assert (result.streams, result.reverse, result.duration) == (1, False, 3.0)
    assert result.sender_bps == data["end"]["sum_sent"]["bits_per_second"]
    assert result.receiver_bps == data["end"]["sum_received"]["bits_per_second"]
    assert 0.9e9 < result.receiver_bps < 1e9  # tbf 1 Gbit/s link
    assert result.bytes_sent == data["end"]["sum_sent"]["bytes"]
    assert result.bytes_received == data["end"]["sum_received"]["bytes"]
    assert result.retransmits == 0
    cpu = data["end"]["cpu_utilization_percent"]
    assert (result.cpu_client_pct, result.cpu_server_pct) == (
        cpu["host_total"],
        cpu["remote_total"],
    )
    assert result.sender == "client" and result.sender_cpu_pct == result.cpu_client_pct
    assert result.jitter_ms is None and result.lost_packets is None and result.packets is None
    assert len(result.intervals) == 3
    first = result.intervals[0]
    assert first.start == 0 and first.end == pytest.approx(1.0, abs=0.01)
    assert first.bits_per_second == data["intervals"][0]["sum"]["bits_per_second"]
    assert first.retransmits == 0 and first.jitter_ms is None
    assert result.warnings == ()


def test_tcp_four_streams_reads_the_sums() -> None:
    data = raw("tcp_4streams")
    result = parse(load("tcp_4streams")[0])
    assert result.streams == 4
    assert result.receiver_bps == data["end"]["sum_received"]["bits_per_second"]
    assert len(data["end"]["streams"]) == 4


def test_tcp_reverse_sender_is_the_server() -> None:
    data = raw("tcp_reverse")
    result = parse(load("tcp_reverse")[0], 0)
    assert result.reverse is True and result.sender == "server"
    assert result.sender_bps == data["end"]["sum_sent"]["bits_per_second"]
    assert result.receiver_bps == data["end"]["sum_received"]["bits_per_second"]
    assert result.sender_cpu_pct == result.cpu_server_pct
    assert result.receiver_cpu_pct == result.cpu_client_pct
    assert all(i.retransmits is None for i in result.intervals)  # the client only receives


def test_omitted_intervals_are_dropped_and_server_output_kept() -> None:
    data = raw("tcp_server_output")
    assert data["intervals"][0]["sum"]["omitted"] is True
    result = parse(load("tcp_server_output")[0])
    assert len(result.intervals) == len(data["intervals"]) - 1
    assert result.server_output is not None and "Accepted connection" in result.server_output


def test_udp() -> None:
    data = raw("udp_100m")
    result = parse(load("udp_100m")[0])
    assert result.protocol == "udp" and result.retransmits is None
    assert result.receiver_bps == data["end"]["sum_received"]["bits_per_second"]
    assert result.receiver_bps == pytest.approx(100e6, rel=0.01)
    assert result.jitter_ms == data["end"]["sum"]["jitter_ms"]
    assert (result.lost_packets, result.lost_percent) == (0, 0.0)
    assert result.packets == data["end"]["sum"]["packets"]


def test_udp_overload_reports_loss_and_the_receivers_rate() -> None:
    """2 Gbit/s offered on a 1 Gbit/s link: end.sum carries the sender's rate and the loss."""
    end = raw("udp_overload")["end"]
    result = parse(load("udp_overload")[0])
    assert result.sender_bps == end["sum_sent"]["bits_per_second"]
    assert result.receiver_bps == end["sum_received"]["bits_per_second"]
    assert result.receiver_bps < result.sender_bps
    assert result.lost_packets == end["sum"]["lost_packets"] > 0
    assert result.packets == end["sum"]["packets"]
    assert result.lost_percent == pytest.approx(100 * result.lost_packets / result.packets)


def test_udp_reverse() -> None:
    end = raw("udp_reverse")["end"]
    result = parse(load("udp_reverse")[0])
    assert result.reverse and result.protocol == "udp"
    assert result.jitter_ms == end["sum"]["jitter_ms"]
    assert all(i.jitter_ms is not None for i in result.intervals)  # the client receives


# -- failures, as captured ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "kind", "words"),
    [
        ("refused", "refused", "Connection refused"),
        ("udp_setup_lost", "setup-lost", "unable to read from stream socket"),
        ("busy", "busy", "server is busy"),
        ("connect_timeout", "timeout", "Connection timed out"),
        ("server_killed", "error", "the server has terminated"),
        ("bad_option", "error", "unrecognized option '--no-such-option'"),
        ("not_found", "missing", "not found"),
    ],
)
def test_captured_failures(name: str, kind: str, words: str) -> None:
    stdout, stderr, rc = load(name)
    with pytest.raises(Iperf3Error) as caught:
        parse(stdout + stderr, rc)
    assert caught.value.kind == kind
    assert words in str(caught.value)
    assert "output ends:" in str(caught.value)  # the tail travels with the error


def test_error_key_wins_even_with_exit_status_zero() -> None:
    stdout, _, rc = load("busy")
    assert rc == 0  # iperf3 3.12 exits 0 here
    with pytest.raises(Iperf3Error, match="busy"):
        parse(stdout, rc)


def test_exit_127_with_no_output_is_missing() -> None:
    stdout, _, rc = load("not_found")
    with pytest.raises(Iperf3Error) as caught:
        parse(stdout, rc)  # stdout alone is empty
    assert caught.value.kind == "missing"


@pytest.mark.parametrize("text", ["", "  \n"])
def test_empty_output(text: str) -> None:
    with pytest.raises(Iperf3Error) as caught:
        parse(text, 0)
    assert caught.value.kind == "no-output"


def test_text_that_is_not_json() -> None:
    with pytest.raises(Iperf3Error) as caught:
        parse(load("version")[0], 0)
    assert caught.value.kind == "bad-output"


def test_good_json_with_a_failing_exit_status() -> None:
    with pytest.raises(Iperf3Error) as caught:
        parse(load("tcp_1stream")[0], 1)
    assert caught.value.kind == "error" and "status 1" in str(caught.value)


# -- shapes derived from captured files -----------------------------------------------------
def test_truncated_at_half() -> None:
    """Transformation: keep the first half of the characters (a connection cut mid-print)."""
    text = load("tcp_1stream")[0]
    with pytest.raises(Iperf3Error) as caught:
        parse(text[: len(text) // 2])
    assert caught.value.kind == "bad-output" and "cut short" in str(caught.value)


def test_truncated_after_the_error_key_still_says_why() -> None:
    """Transformation: cut the captured busy output just before its closing brace."""
    text = load("busy")[0]
    with pytest.raises(Iperf3Error) as caught:
        parse(text[: text.rindex("}")])
    assert caught.value.kind == "busy"


def test_error_line_after_the_json_is_reported() -> None:
    """Transformation: append the line iperf3 prints when the control socket drops late."""
    text = load("tcp_1stream")[0] + "iperf3: error - control socket has closed unexpectedly\n"
    with pytest.raises(Iperf3Error) as caught:
        parse(text, 0)
    assert caught.value.kind == "error"
    assert "control socket has closed unexpectedly" in str(caught.value)


def test_other_text_around_the_json_becomes_a_warning() -> None:
    """Transformation: a warning line before the captured JSON."""
    text = "warning: Ignoring nonsense TCP MSS 0\n" + load("tcp_1stream")[0]
    result = parse(text)
    assert result.receiver_bps > 0
    assert any("Ignoring nonsense" in w for w in result.warnings)


def test_two_different_objects_fail() -> None:
    """Transformation: the 1-stream output followed by the 4-stream output (a stale result
    and this run's, say): nothing tells which is this run's, so neither is taken."""
    text = load("tcp_1stream")[0] + load("tcp_4streams")[0]
    with pytest.raises(Iperf3Error) as caught:
        parse(text, 0)
    assert caught.value.kind == "bad-output"
    assert "2 different JSON results" in str(caught.value)


def test_the_same_object_twice_is_read_once() -> None:
    """Transformation: the output printed twice, as iperf3 3.16/3.17 did (esnet/iperf#1688)."""
    text = load("tcp_1stream")[0]
    result = parse(text + text, 0)
    assert result.receiver_bps == raw("tcp_1stream")["end"]["sum_received"]["bits_per_second"]
    assert any("same JSON 2 times" in w for w in result.warnings)


def test_error_line_on_stderr_after_the_json_fails() -> None:
    """Transformation: iperf3's own error line on stderr (where iperf_err writes once the
    JSON is out), with exit status 0: the run did not end cleanly."""
    line = "iperf3: error - unable to send control message: Bad file descriptor\n"
    with pytest.raises(Iperf3Error) as caught:
        parse(load("tcp_1stream")[0], 0, stderr=line)
    assert caught.value.kind == "error"
    assert "after printing its JSON (unable to send control message" in str(caught.value)
    assert "Bad file descriptor" in caught.value.output


def test_stderr_warning_is_kept_as_a_warning() -> None:
    result = parse(load("tcp_1stream")[0], 0, stderr="warning: Ignoring nonsense TCP MSS 0\n")
    assert any("Ignoring nonsense" in w for w in result.warnings)


def test_stderr_alone_is_read_when_stdout_is_empty() -> None:
    stdout, stderr, rc = load("bad_option")
    assert not stdout.strip()
    with pytest.raises(Iperf3Error, match="unrecognized option"):
        parse(stdout, rc, stderr=stderr)


def test_nan_rate_and_seconds_fail() -> None:
    """Transformation: the receiver's sum has nan for both its rate and its seconds, so the
    rate cannot be worked out either (iperf3 prints nan when it divides by a zero time)."""
    text = load("tcp_1stream")[0]
    text = re.sub(
        r'("sum_received":\s*\{[^}]*?"seconds":\s*)[0-9.]+(.*?"bits_per_second":\s*)[0-9.]+',
        r"\1nan\2nan",
        text,
        count=1,
        flags=re.S,
    )
    assert text.count("nan") == 2
    with pytest.raises(Iperf3Error) as caught:
        parse(text, 0)
    assert caught.value.kind == "bad-output"
    assert "nan where a number was needed: no usable receiver rate" in str(caught.value)


def test_error_names_its_host() -> None:
    with pytest.raises(Iperf3Error) as caught:
        parse("", 0)
    err = caught.value.on("bravo")
    assert str(err) == "bravo: iperf3 printed nothing (exit status 0)"
    assert err.kind == "no-output" and err.on("bravo") is err


def test_two_objects_one_with_an_error_raise() -> None:
    """Transformation: a good result followed by the busy object."""
    with pytest.raises(Iperf3Error) as caught:
        parse(load("tcp_1stream")[0] + load("busy")[0])
    assert caught.value.kind == "busy"


def test_bare_nan_tokens() -> None:
    """Transformation: the first interval's rate and the sender's sum rate become nan/-nan,
    as iperf3 prints them when an interval's length rounds to zero; and the cookie string
    gets "nan" inside it, which must survive."""
    text = load("tcp_1stream")[0]
    data = json.loads(text)
    # The first two rates in the file are interval 0's stream and interval 0's sum.
    text = re.sub(r'("bits_per_second":\s*)[0-9.]+', r"\1nan", text, count=2)
    text = re.sub(r'("sum_sent":\s*\{[^}]*"bits_per_second":\s*)[0-9.]+', r"\1-nan", text, count=1)
    text = text.replace(data["start"]["cookie"], "nan-inf-cookie")
    sent = data["end"]["sum_sent"]
    assert "nan," in text and "-nan," in text
    result = parse(text)
    assert result.intervals[0].bits_per_second == 0.0
    assert result.sender_bps == pytest.approx(sent["bytes"] * 8 / sent["seconds"])
    assert any("nan" in w for w in result.warnings)
    cleaned, hit = iperf3_parse._null_nonfinite(text)
    assert hit and json.loads(cleaned)["start"]["cookie"] == "nan-inf-cookie"


def test_json_without_an_end_summary() -> None:
    """Transformation: drop everything after the intervals (an empty end object)."""
    data = raw("tcp_1stream")
    data["end"] = {}
    with pytest.raises(Iperf3Error) as caught:
        parse(json.dumps(data))
    assert caught.value.kind == "bad-output"


# -- commands -------------------------------------------------------------------------------
def test_client_command_tcp() -> None:
    argv = iperf3.client_command("10.203.0.2", 5201, duration=10)
    assert argv == [
        "iperf3", "-c", "10.203.0.2", "-p", "5201", "-J", "-t", "10",
        "--connect-timeout", "3000",
    ]  # fmt: skip


def test_client_command_every_option() -> None:
    argv = iperf3.client_command(
        "10.203.0.2",
        5202,
        duration=2.5,
        protocol="udp",
        streams=4,
        reverse=True,
        omit=1,
        bitrate="100M",
        length=1400,
        window="4M",
        connect_timeout_ms=1000,
        binary="/opt/iperf3",
        bind="10.203.0.1",
        get_server_output=True,
    )
    assert argv[0] == "/opt/iperf3" and "-J" in argv
    joined = " ".join(argv)
    for part in ("-t 2.5", "-u", "-P 4", "-R", "-O 1", "-b 100M", "-l 1400", "-w 4M"):
        assert part in joined
    assert "--connect-timeout 1000" in joined and "-B 10.203.0.1" in joined
    assert argv[-1] == "--get-server-output"


def test_client_command_numeric_bitrate_and_quoting() -> None:
    argv = iperf3.client_command("h;rm -rf /", 5201, duration=1, bitrate=100_000_000)
    assert "100000000" in argv
    assert shlex.split(shlex.join(argv))[2] == "h;rm -rf /"


@pytest.mark.parametrize(("kwargs"), [{"protocol": "sctp"}, {"streams": 0}, {"duration": 0}])
def test_client_command_rejects_nonsense(kwargs: dict) -> None:
    args = {"duration": 1, **kwargs}
    with pytest.raises(ValueError):
        iperf3.client_command("10.203.0.2", 5201, **args)


def test_server_and_version_commands() -> None:
    assert iperf3.server_command("10.203.0.2", 5201) == [
        "iperf3", "-s", "-B", "10.203.0.2", "-p", "5201", "-1",
    ]  # fmt: skip
    assert "-1" not in iperf3.server_command("::1", 5201, one_off=False)
    assert iperf3.version_command("/x/iperf3") == ["/x/iperf3", "--version"]
    assert iperf3.stop_command(42) == ["kill", "42"]


def test_parse_version() -> None:
    assert iperf3_parse.parse_version(load("version")[0]) == "3.12"
    with pytest.raises(Iperf3Error):
        iperf3_parse.parse_version(load("not_found")[1])


# -- server_script, run for real on loopback --------------------------------------------
needs_iperf3 = pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 not installed")


def free_ports(count: int) -> list[int]:
    """Ports the kernel just handed out (closed again, so very likely still free)."""
    socks = [socket.socket() for _ in range(count)]
    try:
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]
    finally:
        for sock in socks:
            sock.close()


def listening(port: int) -> bool:
    out = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True)
    return bool(out.stdout.strip())


@pytest.fixture
def started() -> Iterator[list[int]]:
    """Pids this test started; each is killed on the way out."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def run_script(tmp_path: Path, ports: list[int], binary: str = "iperf3", **kw: object) -> str:
    script = iperf3_server.server_script(
        binary=binary,
        bind_ip=str(kw.get("bind_ip", "127.0.0.1")),
        ports=ports,
        workdir=str(kw.get("workdir", tmp_path / "work dir's")),
        tag=str(kw.get("tag", "t1")),
        wait_s=float(kw.get("wait_s", 3.0)),  # type: ignore[arg-type]
    )
    done = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=20)
    return done.stdout + done.stderr


@needs_iperf3
def test_server_script_starts_a_server_that_serves(tmp_path: Path, started: list[int]) -> None:
    (port,) = free_ports(1)
    began = time.monotonic()
    out = run_script(tmp_path, [port])
    pid, got_port, log = iperf3_server.parse_server_ready(out)
    started.append(pid)
    assert time.monotonic() - began < 2.5  # polled, no fixed sleep
    assert got_port == port and listening(port)
    workdir = tmp_path / "work dir's"
    assert stat.S_IMODE(workdir.stat().st_mode) == 0o700
    recorded = (workdir / f"t1.{port}.pid").read_text().split()  # pid start boot
    assert recorded == [str(pid), process_start(pid), boot_id()]
    assert log == str(workdir / f"t1.{port}.log")
    assert os.getsid(pid) == pid  # detached into its own session
    client = subprocess.run(
        iperf3.client_command("127.0.0.1", port, duration=1), capture_output=True, text=True
    )
    assert parse(client.stdout, client.returncode).receiver_bps > 0


@needs_iperf3
def test_server_script_skips_a_busy_port(tmp_path: Path, started: list[int]) -> None:
    first, second = free_ports(2)
    foreign = subprocess.Popen(
        iperf3.server_command("127.0.0.1", first),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    started.append(foreign.pid)
    for _ in range(250):
        if listening(first):
            break
        time.sleep(0.02)
    pid, port, _ = iperf3_server.parse_server_ready(run_script(tmp_path, [first, second]))
    started.append(pid)
    assert port == second and pid != foreign.pid


@needs_iperf3
def test_server_script_moves_on_from_address_in_use(tmp_path: Path, started: list[int]) -> None:
    """A socket bound but not listening is invisible to ss; iperf3's own bind then fails."""
    first, second = free_ports(2)
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", first))
        pid, port, _ = iperf3_server.parse_server_ready(run_script(tmp_path, [first, second]))
        started.append(pid)
    assert port == second


@needs_iperf3
def test_server_script_all_ports_busy(tmp_path: Path) -> None:
    (port,) = free_ports(1)
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", port))
        holder.listen()
        out = run_script(tmp_path, [port])
    with pytest.raises(Iperf3Error) as caught:
        iperf3_server.parse_server_ready(out)
    assert caught.value.kind == "busy" and str(port) in str(caught.value)
    comm = Path("/proc/self/comm").read_text().strip()
    assert caught.value.busy == {port: f"{comm} {os.getpid()}"}  # who holds it, from ss -p


@needs_iperf3
def test_server_script_names_a_foreign_iperf3_on_the_port(
    tmp_path: Path, started: list[int]
) -> None:
    (port,) = free_ports(1)
    foreign = subprocess.Popen(
        iperf3.server_command("127.0.0.1", port, one_off=False),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    started.append(foreign.pid)
    for _ in range(250):
        if listening(port):
            break
        time.sleep(0.02)
    with pytest.raises(Iperf3Error) as caught:
        iperf3_server.parse_server_ready(run_script(tmp_path, [port]))
    assert caught.value.kind == "busy"
    assert caught.value.busy == {port: f"iperf3 {foreign.pid}"}
    assert caught.value.on("alpha").busy == caught.value.busy
    assert foreign.poll() is None  # not ours: left running


def test_server_script_missing_binary(tmp_path: Path) -> None:
    out = run_script(tmp_path, free_ports(1), binary="iperf3-nope")
    assert out.startswith("NETRUN_FAIL iperf3 not found")
    with pytest.raises(Iperf3Error) as caught:
        iperf3_server.parse_server_ready(out)
    assert caught.value.kind == "missing" and "iperf3-nope" in str(caught.value)


@needs_iperf3
def test_server_script_reports_iperf3s_own_error(tmp_path: Path) -> None:
    """192.0.2.1 (TEST-NET-1) is on no interface here: binding it fails, nothing is sent."""
    out = run_script(tmp_path, free_ports(1), bind_ip="192.0.2.1")
    with pytest.raises(Iperf3Error) as caught:
        iperf3_server.parse_server_ready(out)
    assert caught.value.kind == "error"
    assert "Cannot assign requested address" in str(caught.value)


def test_server_script_quotes_every_value(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    evil = f"$(touch {marker}); `touch {marker}`"
    script = iperf3_server.server_script(
        binary=evil, bind_ip=evil, ports=[5201], workdir=str(tmp_path / evil), tag=evil, wait_s=1
    )
    subprocess.run(["sh", "-c", script], capture_output=True, timeout=20)
    assert not marker.exists()


def test_parse_server_ready_without_a_verdict() -> None:
    with pytest.raises(Iperf3Error) as caught:
        iperf3_server.parse_server_ready("sh: 1: syntax error\n")
    assert caught.value.kind == "bad-output"


# -- whose interval series (issue 25) -----------------------------------------------------------
def test_udp_intervals_are_the_receivers_from_the_servers_json() -> None:
    """400M asked of a 200 Mbit/s link, with --get-server-output and the server's -J: the
    series is the server's (what arrived), not the client's (what it sent)."""
    data = raw("udp_shaped_server_json")
    result = parse(load("udp_shaped_server_json")[0])
    assert result.intervals_of == "receiver"
    server = [i["sum"]["bits_per_second"] for i in data["server_output_json"]["intervals"]]
    # the server's fourth "interval" is the 3 ms after the test's end: left out, not a drop
    assert len(server) == 4 and data["server_output_json"]["intervals"][3]["sum"]["seconds"] < 0.01
    assert [i.bits_per_second for i in result.intervals] == server[:3]
    assert result.intervals[0].lost_percent is not None  # the receiver counts the loss
    assert result.target_bps == 400e6
    assert result.sender_bps == data["end"]["sum_sent"]["bits_per_second"]
    assert result.receiver_bps == data["end"]["sum_received"]["bits_per_second"]


def test_whose_series_without_the_servers_json() -> None:
    assert parse(load("udp_100m")[0]).intervals_of == "sender"
    assert parse(load("tcp_server_output")[0]).intervals_of == "sender"  # its text, not JSON
    assert parse(load("udp_reverse")[0]).intervals_of == "receiver"  # -R: the client receives
    assert parse(load("udp_bidir")[0]).intervals_of == "both"
    reverse = parse(load("udp_50m_reverse_server_json")[0])
    assert reverse.intervals_of == "receiver" and reverse.reverse


def test_the_server_starts_with_json_only_when_asked() -> None:
    args = dict(binary="iperf3", bind_ip="10.0.0.1", ports=[5201], workdir="/tmp/w", tag="t")
    assert "json=-J" in iperf3_server.server_script(**args, wait_s=1, json=True)
    assert "json=\n" in iperf3_server.server_script(**args, wait_s=1)
