"""extra_args (netrun.tools.iperf3.options): passed through as argv words unless they touch an
option netrun owns; an option the host's release lacks is refused with one line."""

from __future__ import annotations

import shlex

import pytest

from netrun.tools.iperf3 import options
from netrun.tools.iperf3.command import client_command


@pytest.mark.parametrize(
    "args",
    [["-4"], ["--flowlabel", "5"], ["--cport", "6000"], ["-T", "x"],
     ["--timestamps"], ["--dont-fragment"], []],
)  # fmt: skip
def test_options_netrun_does_not_own_pass(args: list[str]) -> None:
    assert options.check_extra_args(args) is None


@pytest.mark.parametrize(
    ("args", "owner"),
    [(["-P", "4"], "streams"), (["-P4"], "streams"), (["--parallel=4"], "streams"),
     (["-t", "3"], "duration"), (["-R"], "reverse"), (["--bidir"], "bidir"),
     (["-J"], "its JSON output"), (["--json-stream"], "its JSON output"),
     (["-c", "10.0.0.1"], "the hosts and port"), (["--logfile", "x"], "the processes"),
     (["-i", "0"], "its intervals"), (["-B", "1.2.3.4"], "the data address"),
     (["-C", "bbr"], "congestion"), (["-Z"], "zerocopy"), (["-A", "1"], "affinity"),
     (["--dscp", "46"], "dscp"), (["-S", "4"], "dscp"), (["-M", "1400"], "mss"),
     (["-N"], "no_delay"), (["-6"], "ipv6"),
     (["--fq-rate=1G"], "fq_rate"), (["--skip-rx-copy"], "skip_rx_copy")],
)  # fmt: skip
def test_options_netrun_owns_are_refused(args: list[str], owner: str) -> None:
    problem = options.check_extra_args(args)
    assert problem is not None and f"netrun owns it ({owner}" in problem


@pytest.mark.parametrize("bad", ["-C bbr", ["-C", 3], ["a\nb"], [""]])
def test_extra_args_must_be_a_list_of_single_line_strings(bad: object) -> None:
    assert options.check_extra_args(bad) is not None


def test_a_negative_number_is_a_value_not_an_option() -> None:
    assert options.check_extra_args(["--flowlabel", "-5"]) is None
    assert options.check_extra_args(["-1"]) is not None  # but -1 is one-off, netrun's


def test_keys_become_client_arguments_before_extra_args() -> None:
    got = options.client_args(
        {"congestion": "bbr", "zerocopy": True, "affinity": "0,1", "dscp": "ef", "mss": 1400,
         "no_delay": True, "fq_rate": "100M", "skip_rx_copy": False, "ipv6": True,
         "extra_args": ["-T", "x"]}
    )  # fmt: skip
    assert got == [
        "-C", "bbr", "-Z", "-A", "0,1", "-S", "184", "-M", "1400", "-N",
        "--fq-rate", "100M", "-6", "-T", "x",
    ]  # fmt: skip
    assert options.client_args({"zerocopy": False, "congestion": None}) == []


@pytest.mark.parametrize(("value", "ok"), [(1, True), ("0,1", True), ("a", False), (True, False)])
def test_affinity(value: object, ok: bool) -> None:
    assert (options.check_affinity(value) is None) is ok


@pytest.mark.parametrize(("value", "ok"), [(46, True), ("ef", True), ("AF41", True), (64, False),
                                           ("x;y", False), (True, False)])  # fmt: skip
def test_dscp(value: object, ok: bool) -> None:
    assert (options.check_dscp(value) is None) is ok


def test_extra_args_are_argv_words_after_netrun_s_own() -> None:
    argv = client_command("10.0.0.2", 5201, duration=1, extra_args=["-C", "bbr; rm -rf /"])
    assert argv[-2:] == ["-C", "bbr; rm -rf /"]
    assert shlex.split(shlex.join(argv))[-1] == "bbr; rm -rf /"  # one word on the host


def test_refusal_names_host_release_and_first_release() -> None:
    used = options.options_used({"extra_args": ["--skip-rx-copy"], "bidir": False})
    assert options.refusal("alpha", "3.16", used) == (
        "alpha: iperf3 3.16 has no --skip-rx-copy (iperf3 3.19+): install iperf3 3.19 or "
        "newer there, or leave --skip-rx-copy out of the test"
    )
    assert options.refusal("alpha", "3.19.1", used) is None
    assert options.refusal("alpha", None, used) is None  # unknown: iperf3 itself says


def test_dscp_is_sent_as_its_tos_byte_which_every_release_sets_alike() -> None:
    assert options.tos(46) == options.tos("EF") == "184"
    assert options.tos("af41") == str(34 << 2) and options.tos("cs1") == "32"


def test_dscp_on_a_reverse_test_needs_3_13() -> None:
    why = options.refuse({"dscp": 46, "reverse": True}, [("bravo", "3.12")])
    assert why is not None and "(iperf3 3.13+)" in why
    assert options.refuse({"dscp": 46}, [("bravo", "3.5")]) is None


def test_omit_over_60_needs_3_18_whose_limit_is_600() -> None:
    # iperf3 3.18 raised -O's limit from 60 to MAX_OMIT_TIME, 600 (src/iperf.h)
    why = options.refuse({"omit": 120}, [("bravo", "3.12")])
    assert why == (
        "bravo: iperf3 3.12 has no -O over 60 s (iperf3 3.18+): install iperf3 3.18 or "
        "newer there, or leave -O over 60 s out of the test"
    )
    assert options.refuse({"omit": 120}, [("bravo", "3.18")]) is None
    assert options.refuse({"omit": 60}, [("bravo", "3.5")]) is None
    assert options.MAX_OMIT == 600


def test_a_key_s_release_is_checked_too() -> None:
    assert options.refuse({"skip_rx_copy": True}, [("bravo", "3.16")]) is not None
    assert options.refuse({"skip_rx_copy": False}, [("bravo", "3.16")]) is None


def test_refuse_checks_each_host_that_runs_iperf3() -> None:
    hosts = [("bravo", "3.9"), ("alpha", "3.5")]
    assert options.refuse({"bidir": True}, hosts) == options.refusal("alpha", "3.5", ["--bidir"])
    assert options.refuse({"bidir": True}, [("bravo", "3.7")]) is None
    assert options.refuse({"extra_args": ["--timestamps=%T"]}, [("b", "3.7")]) is not None
