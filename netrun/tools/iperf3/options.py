"""iperf3 options netrun does not model: ``extra_args``, and the release each option needs.

``extra_args`` is a list of iperf3 client arguments passed as they are (each one its own
argv word, so quoted on the way to the host's shell). It may not touch an option netrun
owns: the ones it builds the command from, reads the result by (-J, -i) or manages the
process with; a run that set them behind netrun's back would measure something other than
the test says. An option the host's iperf3 release lacks is refused before the test with
one line naming the host, its release and the first release that has it (iperf3's
RELNOTES.md), instead of the "unrecognized option" iperf3 would print mid-run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from netrun.tools.iperf3 import versions

#: Options netrun sets itself (client_command) or that change what it reads or runs:
#: the option -> the scenario key that sets it, or why it is netrun's.
OWNED: dict[str, str] = {
    **dict.fromkeys(("-c", "--client", "-s", "--server", "-p", "--port"), "the hosts and port"),
    **dict.fromkeys(("-B", "--bind"), "the data address (netrun_data_ip)"),
    **dict.fromkeys(("-J", "--json", "--json-stream", "--json-stream-full"), "its JSON output"),
    **dict.fromkeys(("-i", "--interval", "--forceflush"), "its intervals"),
    **dict.fromkeys(("-t", "--time", "-n", "--bytes", "-k", "--blockcount"), "duration"),
    **dict.fromkeys(("-u", "--udp"), "protocol"),
    **dict.fromkeys(("-P", "--parallel"), "streams"),
    **dict.fromkeys(("-R", "--reverse"), "reverse"),
    "--bidir": "bidir",
    **dict.fromkeys(("-O", "--omit"), "omit"),
    **dict.fromkeys(("-b", "--bitrate", "--bandwidth"), "bitrate"),
    **dict.fromkeys(("-l", "--length"), "length"),
    **dict.fromkeys(("-w", "--window"), "window"),
    "--connect-timeout": "connect_timeout",
    "--get-server-output": "the server's output",
    **dict.fromkeys(("-D", "--daemon", "-I", "--pidfile", "--logfile", "-1", "--one-off"),
                    "the processes it starts and stops"),
    **dict.fromkeys(("-h", "--help", "-v", "--version"), "the probe"),
}  # fmt: skip

#: Client options and the first iperf3 release that has each (iperf3's RELNOTES.md); the
#: ones not listed are in every release netrun reads (3.5+).
FIRST_RELEASE: dict[str, tuple[int, ...]] = {
    "--bidir": versions.BIDIR,
    "--extra-data": (3, 6),
    "--repeating-payload": (3, 6),
    "--timestamps": (3, 9),
    "--bind-dev": (3, 10),
    "--rcv-timeout": (3, 10),
    "--dont-fragment": (3, 10),
    "--snd-timeout": (3, 12),
    "--json-stream": versions.JSON_STREAM,
    "--cntl-ka": (3, 19),
    "-m": (3, 19),
    "--mptcp": (3, 19),
    "--skip-rx-copy": (3, 19),
    "--json-stream-full": (3, 20),
    "--gsro": (3, 21),
}


def _name(arg: str) -> str | None:
    """The option an argument names ("--fq-rate=1G" -> "--fq-rate", "-P4" -> "-P"), or None
    for a value ("bbr")."""
    if arg.startswith("--"):
        return arg.split("=", 1)[0]
    if arg.startswith("-") and len(arg) > 1 and not arg[1].isdigit():
        return arg[:2]
    return None


def check_extra_args(value: Any) -> str | None:
    """An Option.check for ``extra_args``: a list of strings, none an option netrun owns."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return "must be a list of strings, e.g. [-C, bbr]"
    for arg in value:
        if not arg or "\n" in arg or "\0" in arg:
            return f"has an empty or multi-line argument {arg!r}"
        name = _name(arg)
        if name in OWNED:
            return (
                f"must not set {arg!r}: netrun owns it ({OWNED[name]}); "
                "use the scenario key instead, or leave it to netrun"
            )
    return None


def options_used(options: Mapping[str, Any]) -> list[str]:
    """The iperf3 options a test's scenario keys and ``extra_args`` pass to the client."""
    used = ["--bidir"] if options.get("bidir") else []
    extra = options.get("extra_args") or []
    return used + [n for arg in extra if isinstance(arg, str) and (n := _name(arg))]


def refusal(host: str, version: str | None, used: Iterable[str]) -> str | None:
    """One line when ``host``'s iperf3 ``version`` lacks an option in ``used``; None when it
    has them all, or its release is unknown (then iperf3 itself says)."""
    have = versions.release(version)
    if have is None:
        return None
    for option in used:
        first = FIRST_RELEASE.get(option)
        if first is not None and have < first:
            since = ".".join(map(str, first))
            return (
                f"{host}: iperf3 {version} has no {option} (iperf3 {since}+): "
                f"install iperf3 {since} or newer there, or leave {option} out of the test"
            )
    return None


def refuse(options: Mapping[str, Any], hosts: Sequence[tuple[str, str | None]]) -> str | None:
    """The first refusal over the (host, iperf3 version) pairs that run a test's iperf3."""
    used = options_used(options)
    for host, version in hosts:
        if why := refusal(host, version, used):
            return why
    return None
