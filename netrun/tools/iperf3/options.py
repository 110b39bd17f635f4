"""iperf3's tuning options as scenario keys, ``extra_args`` for the rest, and the release
each option needs.

``KEYS`` are the client options a scenario sets by name (``congestion: bbr`` is ``-C bbr``);
they sweep like any other key and are part of what a baseline compares. ``extra_args`` is a
list of iperf3 client arguments passed as they are (each one its own argv word, so quoted on
the way to the host's shell). It may not touch an option netrun owns: the ones it builds the
command from (``KEYS`` too), reads the result by (-J, -i) or manages the process with; a run
that set them behind netrun's back would measure something other than the test says. An
option the host's iperf3 release lacks is refused before the test with one line naming the
host, its release and the first release that has it (iperf3's RELNOTES.md), instead of the
"unrecognized option" iperf3 would print mid-run.
"""

from __future__ import annotations

import re
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
    **dict.fromkeys(("-C", "--congestion"), "congestion"),
    **dict.fromkeys(("-Z", "--zerocopy"), "zerocopy"),
    **dict.fromkeys(("-A", "--affinity"), "affinity"),
    **dict.fromkeys(("--dscp", "-S", "--tos"), "dscp"),
    **dict.fromkeys(("-M", "--set-mss"), "mss"),
    **dict.fromkeys(("-N", "--no-delay"), "no_delay"),
    "--fq-rate": "fq_rate",
    "--skip-rx-copy": "skip_rx_copy",
    **dict.fromkeys(("-6", "--version6"), "ipv6"),
}  # fmt: skip

#: Scenario key -> the iperf3 client option it sets (declared in netrun.tools.iperf3.tool).
KEYS: dict[str, str] = {
    "congestion": "-C",
    "zerocopy": "-Z",
    "affinity": "-A",
    "dscp": "-S",  # as the TOS byte: see tos()
    "mss": "-M",
    "no_delay": "-N",
    "fq_rate": "--fq-rate",
    "skip_rx_copy": "--skip-rx-copy",
    "ipv6": "-6",
}

#: iperf3's own limit on -O (MAX_OMIT_TIME in src/iperf.h, 3.18+); older releases take 60.
MAX_OMIT = 600
OMIT_OVER_60 = "-O over 60 s"

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
    #: before 3.13 the server's sending socket kept TOS 0 in a reverse test (esnet/iperf#638)
    "--dscp with -R": (3, 13),
    #: before 3.18 iperf3 refused -O above 60 ("bogus value for --omit"; #1770/PR#1774)
    OMIT_OVER_60: (3, 18),
}
#: DSCP names iperf3 knows, as numbers (RFC 2474, 2597, 3246, 5865, 8622).
DSCP_NAMES = {
    "ef": 46, "va": 44, "le": 1,
    **{f"cs{x}": 8 * x for x in range(8)},
    **{f"af{x}{y}": 8 * x + 2 * y for x in range(1, 5) for y in range(1, 4)},
}  # fmt: skip


def _name(arg: str) -> str | None:
    """The option an argument names ("--fq-rate=1G" -> "--fq-rate", "-P4" -> "-P"), or None
    for a value ("bbr")."""
    if arg.startswith("--"):
        return arg.split("=", 1)[0]
    if arg[:2] in ("-1", "-4", "-6"):  # iperf3's digit options (one-off, IPv4, IPv6)
        return arg[:2]
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


def check_affinity(value: Any) -> str | None:
    """-A n, or n,m: the client's CPU and the server's."""
    text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
    if isinstance(text, str) and re.fullmatch(r"[0-9]{1,4}(,[0-9]{1,4})?", text):
        return None
    return "must be a CPU number, or client,server CPUs such as 0,1"


def check_dscp(value: Any) -> str | None:
    """dscp: 0..63, or a name iperf3 knows (ef, af11, cs1, ...)."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 63:
        return None
    if isinstance(value, str) and value.lower() in DSCP_NAMES:
        return None
    return "must be 0..63 or a DSCP name such as ef, af41 or cs1"


def tos(dscp: int | str) -> str:
    """The TOS byte of a DSCP (its six high bits), for ``-S``: iperf3 before 3.11 set
    ``--dscp N`` as TOS N, not N x 4 (esnet/iperf#1162); ``-S`` means the same in all."""
    value = DSCP_NAMES[dscp.lower()] if isinstance(dscp, str) else int(dscp)
    return str(value << 2)


def _set(value: Any) -> bool:
    return value is not None and value is not False


def client_args(options: Mapping[str, Any]) -> list[str]:
    """The client arguments of a test's ``KEYS``, then its ``extra_args``, as argv words."""
    out: list[str] = []
    for key, flag in KEYS.items():
        value = options.get(key)
        if key == "dscp" and isinstance(value, int | str):
            value = tos(value)
        if _set(value):
            out += [flag] if value is True else [flag, str(value)]
    return out + [str(arg) for arg in options.get("extra_args") or ()]


def options_used(options: Mapping[str, Any]) -> list[str]:
    """The iperf3 options a test's scenario keys and ``extra_args`` pass to the client."""
    used = ["--bidir"] if options.get("bidir") else []
    used += [flag for key, flag in KEYS.items() if _set(options.get(key))]
    if _set(options.get("dscp")) and options.get("reverse"):
        used.append("--dscp with -R")
    omit = options.get("omit")
    if isinstance(omit, int | float) and not isinstance(omit, bool) and omit > 60:
        used.append(OMIT_OVER_60)
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


def releases_needed(options: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(option, its first release, e.g. "3.18") of each option a test uses that an older
    iperf3 lacks: what ``refuse`` checks once the hosts' versions are known."""
    return [
        (option, ".".join(map(str, FIRST_RELEASE[option])))
        for option in dict.fromkeys(options_used(options))
        if option in FIRST_RELEASE
    ]


def refuse(options: Mapping[str, Any], hosts: Sequence[tuple[str, str | None]]) -> str | None:
    """The first refusal over the (host, iperf3 version) pairs that run a test's iperf3."""
    used = options_used(options)
    for host, version in hosts:
        if why := refusal(host, version, used):
            return why
    return None
