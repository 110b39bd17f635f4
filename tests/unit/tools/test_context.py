"""netrun.tools.context against the real output of the probe with the context script
(tests/fixtures/capture_context.sh): a veth in a namespace (ethtool -g unsupported, a tbf
qdisc, reno set in that namespace), the same without ethtool and tc, and this machine's
own first NIC in the root namespace (virtio_net, with ring sizes)."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from netrun.tools.context import SYSCTL_ROOT, SYSCTLS, _qdisc, context_script, parse_context
from netrun.tools.facts import parse_probe
from tests.conftest import CONTEXT_FIXTURES


def out(name: str) -> str:
    base = CONTEXT_FIXTURES / name
    return base.with_suffix(".stdout").read_text() + base.with_suffix(".stderr").read_text()


def test_veth_in_a_namespace() -> None:
    ctx = parse_context(out("veth"))
    why = ctx["unavailable"]
    assert ctx["kernel"] and ctx["cpu_model"] and ctx["cpus"] >= 1
    assert ctx["nic"] == "data0" and ctx["nic_driver"] == "veth"
    assert ctx["nic_driver_version"] == "1.0"
    # veth has no firmware, bus or ring settings: said, never guessed
    assert ctx["nic_firmware"] is None and "no firmware-version" in why["nic_firmware"]
    assert ctx["nic_bus"] is None and "no bus-info" in why["nic_bus"]
    assert ctx["rings"] is None
    assert why["rings"] == "ethtool -g data0: netlink error: Operation not supported (exit 1)"
    assert ctx["offloads"]["generic-receive-offload"] == "off"  # veth: off by default
    assert ctx["offloads"]["tcp-segmentation-offload"] == "on"
    assert ctx["qdisc"] == "tbf root rate 1Gbit burst 262125b lat 20ms"
    assert ctx["sysctl"]["net.ipv4.tcp_congestion_control"] == "reno"
    assert ctx["sysctl"]["net.ipv4.tcp_rmem"] == "4096 131072 33554432"  # tabs -> spaces
    assert set(ctx["sysctl"]) == set(SYSCTLS)
    # init-namespace-only sysctls are absent in a namespace: None with the reason
    assert ctx["sysctl"]["net.core.default_qdisc"] is None
    assert "net.core.default_qdisc" in why
    assert ctx["tools"] == {"iperf3": "3.12", "ip": "6.1.0", "ping": "20221126", "iperf": "2.1.8"}
    assert "context" not in why  # the script finished


def test_the_probe_reads_the_same_output_unchanged() -> None:
    """The context rides on the probe: the probe's own parse still reads its sections."""
    facts = parse_probe(out("veth"), data_ip="10.203.33.1")
    assert facts.nic.iface == "data0" and facts.nic.driver == "veth" and not facts.problems


def test_a_host_without_ethtool_or_tc() -> None:
    ctx = parse_context(out("no_ethtool"))
    why = ctx["unavailable"]
    for key in ("nic_driver", "nic_firmware", "offloads", "rings"):
        assert ctx[key] is None
        assert why[key] == "ethtool is not installed (or not in PATH)", key
    assert ctx["qdisc"] is None and why["qdisc"] == "tc is not installed (or not in PATH)"
    assert ctx["sysctl"]["net.ipv4.tcp_congestion_control"] == "reno"  # /proc/sys needs no tool
    assert ctx["kernel"] and ctx["tools"]["iperf3"] == "3.12"


def test_a_vm_nic_in_the_root_namespace() -> None:
    ctx = parse_context(out("host_nic"))
    assert ctx["nic_driver"] == "virtio_net" and ctx["nic_bus"] == "0000:00:03.0"
    assert ctx["rings"] == {"rx": "256", "rx-max": "256", "tx": "256", "tx-max": "256",
                            "tx-push": "off"}  # fmt: skip
    assert ctx["qdisc"].startswith("pfifo_fast root bands 3")
    assert ctx["sysctl"]["net.core.default_qdisc"] == "pfifo_fast"
    assert ctx["cpu_governor"] is None
    assert "no cpufreq" in ctx["unavailable"]["cpu_governor"]


def test_output_cut_short_is_said_per_field() -> None:
    text = out("veth")
    cut = text[: text.index("==netrun:ctx-ethtool-k==")]
    ctx = parse_context(cut)
    why = ctx["unavailable"]
    assert ctx["nic_driver"] == "veth"
    assert ctx["offloads"] is None and "cut short" in why["offloads"]
    assert "cut short" in why["sysctl"] and "cut short" in why["context"]


def test_qdisc_handles_and_refcounts_are_left_out() -> None:
    text = (
        "qdisc htb 1: root refcnt 2 r2q 10 default 0x10 direct_packets_stat 0\n"
        "qdisc tbf 8003: parent 1:10 rate 1Gbit burst 256Kb lat 20ms\n"
    )
    assert _qdisc(text) == (
        "htb root r2q 10 default 0x10 direct_packets_stat 0 | "
        "tbf parent 1:10 rate 1Gbit burst 256Kb lat 20ms"
    )
    assert _qdisc("qdisc noqueue 0: root refcnt 2 \n") == "noqueue root"


@pytest.mark.skipif(shutil.which("sh") is None, reason="no sh")
def test_the_script_quotes_what_it_is_given() -> None:
    script = context_script({"iperf3": "/opt/my iperf3/bin/iperf3", "x;rm": "x;rm"}, "a'b")
    assert "ctx_if='a'\"'\"'b'" in script
    check = subprocess.run(["sh", "-n"], input=script, text=True, capture_output=True)
    assert check.returncode == 0, check.stderr
    ctx = parse_context(subprocess.run(["sh"], input=script, text=True,
                                       capture_output=True).stdout)  # fmt: skip
    assert ctx["nic"] == "a'b"
    assert ctx["tools"]["iperf3"] is None
    assert "not installed" in ctx["unavailable"]["iperf3"]


@pytest.mark.skipif(shutil.which("sh") is None, reason="no sh")
def test_each_program_is_asked_its_version_its_own_way(tmp_path: Path) -> None:
    """The version arguments come from the program's declaration (Program.version_flag:
    iperf2's -v), quoted; a program with none is asked --version."""
    echo = tmp_path / "says"
    echo.write_text('#!/bin/sh\necho "v $*"\n')
    echo.chmod(0o755)
    script = context_script(
        {"iperf": str(echo), "other": str(echo), "odd": str(echo)},
        "lo",
        flags={"iperf": "-v", "odd": "version --client;x"},
    )
    out = subprocess.run(["sh"], input=script, text=True, capture_output=True).stdout
    assert "v -v" in out and parse_context(out)["tools"]["iperf"] is not None
    assert "v --version" in out and "v version --client;x" in out


def test_sysctls_are_read_by_one_grep_and_a_missing_one_says_why() -> None:
    """The script's grep prints path:value (an integer sysctl cannot be read by sh's own
    read: it answers past its first byte with EOF); one a namespace lacks prints nothing."""
    from netrun.tools.context import SYSCTLS, _sysctls

    why: dict[str, str] = {}
    found = _sysctls(
        "/proc/sys/net/ipv4/tcp_rmem:4096\t131072\t6291456\n"
        "/proc/sys/net/ipv4/tcp_congestion_control:bbr\n",
        why,
    )
    assert found["net.ipv4.tcp_rmem"] == "4096 131072 6291456"
    assert found["net.ipv4.tcp_congestion_control"] == "bbr"
    assert found["net.core.default_qdisc"] is None and "net.core.default_qdisc" in why
    assert set(found) == set(SYSCTLS)


def test_the_script_hands_its_grep_the_sysctls_as_paths() -> None:
    """The shell variable holds /proc/sys paths, not sysctl names, and is named so."""
    script = context_script({})
    assert "ctx_sysctls" not in script
    (line,) = [x for x in script.splitlines() if x.startswith("ctx_sysctl_paths=")]
    paths = shlex.split(line.split("=", 1)[1])[0].split()
    assert paths == [SYSCTL_ROOT + k.replace(".", "/") for k in SYSCTLS]
    assert "grep -H '' $ctx_sysctl_paths" in script


def test_beside_a_start_the_context_is_read_the_same_and_its_file_removed(tmp_path) -> None:
    """A probe that starts a server runs the context in the background (beside the
    start's waits): its output comes whole after the start's, the same fields, and the
    file it went through is gone."""
    from netrun.tools.context import beside

    script = context_script({"iperf3": "iperf3"}, "lo")
    path = tmp_path / "context.out"
    start, after = beside(script, str(path))
    inline = subprocess.run(["sh"], input=script, text=True, capture_output=True).stdout
    run = f"{start}\necho ==netrun:prestart==\n{{ wait; echo NETRUN_READY 1 5201 x; }}\n{after}"
    said = subprocess.run(["sh"], input=run, text=True, capture_output=True).stdout
    head, _, tail = said.partition("NETRUN_READY 1 5201 x\n")
    assert "==netrun:ctx-" not in head and tail.startswith("==netrun:ctx-kernel==")
    assert parse_context(said) == parse_context(inline)
    assert not path.exists()


def test_an_htb_root_keeps_its_root_classes_for_the_ceiling() -> None:
    """veth_htb: an htb root whose rates are in its classes (a 400 Mbit/s root class and
    a 300/400 child): the context keeps the root class, and its ceil is the shaping rate."""
    from netrun.core.linerate import shaper_of

    ctx = parse_context(out("veth_htb"))
    assert ctx["qdisc"].startswith("htb root r2q 10 default 0x10")
    assert ctx["qdisc_classes"] == (
        "class htb 1:1 root rate 400Mbit ceil 400Mbit burst 1600b cburst 1600b"
    )
    found = shaper_of(ctx["qdisc"], ctx["qdisc_classes"], "alpha's data0 egress")
    assert found is not None and (found.kind, found.mbps) == ("htb", 400.0)
    assert "qdisc_classes" not in parse_context(out("veth"))  # a tbf: its rate is its own
