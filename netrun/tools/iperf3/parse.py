"""iperf3's output: ``parse``, a defensive read of iperf3's JSON (the types: result.py).

iperf3 reports errors inside the JSON (``"error"``) even when it exits 0, may print an
``iperf3: error - ...`` line after the JSON, may print two objects, bare ``nan`` tokens or
stop half-way. Each of those raises ``Iperf3Error`` with a ``kind`` the runner can act on
(retry on "busy", fail the host on "missing", ...). What counts as a measurement is
decided in netrun.tools.iperf3.command's docstring; the commands live there too.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from netrun.core import numeric
from netrun.tools.iperf3 import bidir as iperf3_bidir
from netrun.tools.iperf3 import streams as iperf3_streams
from netrun.tools.iperf3 import tcpinfo, versions
from netrun.tools.iperf3.result import PROTOCOLS, Interval, Iperf3Error, Iperf3Result

_VERSION = re.compile(r"\biperf\s+(\d+\.\d+(?:\.\d+)*)")


def parse_version(text: str) -> str:
    """ "iperf 3.12 (cJSON 1.7.15)" -> "3.12"; the first line of ``iperf3 --version``."""
    found = _VERSION.search(text)
    if not found:
        raise Iperf3Error("bad-output", "cannot read the iperf3 version", text)
    return found.group(1)


# -- parsing --------------------------------------------------------------------------------
_NONFINITE = re.compile(r'"(?:[^"\\]|\\.)*"|(-?\b(?:nan|inf(?:inity)?)\b)', re.IGNORECASE)
_ERROR_LINE = re.compile(r"^iperf3?:\s*(?:error\s*-\s*)?(.+)$", re.IGNORECASE)
_NOT_FOUND = re.compile(r"command not found|: not found\b|No such file or directory")
_JSON_ERROR = re.compile(r'"error"\s*:\s*"((?:[^"\\]|\\.)*)"')


def _null_nonfinite(text: str) -> tuple[str, bool]:
    """Replace nan/-nan/inf tokens outside strings with null (iperf3 prints them bare)."""
    hits = 0

    def repl(match: re.Match[str]) -> str:
        nonlocal hits
        if match.group(1) is None:
            return match.group(0)
        hits += 1
        return "null"

    return _NONFINITE.sub(repl, text), hits > 0


def error_kind(message: str) -> str:
    """Sort an iperf3 error message into one of ``KINDS``."""
    low = message.lower()
    if "busy" in low:
        return "busy"
    if "unable to read from stream socket" in low and "temporarily unavailable" in low:
        # a UDP stream's setup datagram (or the server's reply) was lost: iperf3 has no
        # retransmit for it and gives up before any data (esnet/iperf#862); try again
        return "setup-lost"
    if "refused" in low:
        return "refused"
    if "timed out" in low or "timeout" in low:
        return "timeout"
    if "unreachable" in low or "no route to host" in low:
        return "unreachable"
    return "error"


def _fail(message: str, text: str) -> Iperf3Error:
    return Iperf3Error(error_kind(message), f"iperf3 failed: {message}", text)


def _decode_objects(text: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Every JSON object in the text, and the lines of text around them."""
    decoder = json.JSONDecoder()
    objects: list[dict[str, Any]] = []
    extra: list[str] = []
    pos = 0
    while True:
        start = text.find("{", pos)
        if start < 0:
            extra += text[pos:].splitlines()
            break
        extra += text[pos:start].splitlines()
        obj, pos = decoder.raw_decode(text, start)  # JSONDecodeError: truncated
        if isinstance(obj, dict):
            objects.append(obj)
    return objects, [line.strip() for line in extra if line.strip()]


_float = numeric.finite  # a 400-digit integer or 1e400 is missing data, not an OverflowError
_int = numeric.whole


def _bps(summary: Mapping[str, Any], warnings: list[str], label: str) -> float:
    """bits_per_second of a summary, worked out from bytes/seconds when iperf3 gave nan."""
    bps = _float(summary.get("bits_per_second"))
    if bps is not None:
        return bps
    size, seconds = _float(summary.get("bytes")), _float(summary.get("seconds"))
    if size is not None and seconds and math.isfinite(size * 8 / seconds):
        warnings.append(f"{label} rate was not a number; computed from bytes and seconds")
        return size * 8 / seconds
    raise ValueError(f"no usable {label} rate (bits_per_second, or bytes over seconds)")


def _mapping(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a JSON object, else an empty one (a field of the wrong type)."""
    return value if isinstance(value, Mapping) else {}


def _summary(end: Mapping[str, Any], *keys: str) -> Mapping[str, Any] | None:
    for key in keys:
        value = end.get(key)
        if isinstance(value, Mapping) and value:
            return value
    return None


def parse(text: str, exit_status: int | None = None, stderr: str = "") -> Iperf3Result:
    """Read an iperf3 -J client run; raise ``Iperf3Error`` unless it is a whole, clean result.

    ``stderr`` is read too: iperf3 writes errors met after its JSON there.
    """
    if not text.strip() and stderr.strip():
        text, stderr = stderr, ""
    if stderr.strip():
        text = text.rstrip("\n") + "\n" + stderr
    if not text.strip():
        if exit_status == 127:
            raise Iperf3Error("missing", "iperf3 not found (exit status 127)")
        how = "" if exit_status is None else f" (exit status {exit_status})"
        raise Iperf3Error("no-output", f"iperf3 printed nothing{how}")
    if "{" not in text:
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if exit_status == 127 or any(_NOT_FOUND.search(line) for line in lines):
            raise Iperf3Error("missing", "iperf3 not found", text)
        for line in lines:
            found = _ERROR_LINE.match(line)
            if found:
                raise _fail(found.group(1), text)
        raise Iperf3Error("bad-output", "iperf3 printed no JSON", text)

    cleaned, had_nonfinite = _null_nonfinite(text)
    try:
        objects, extra = _decode_objects(cleaned)
    except RecursionError:
        raise Iperf3Error("bad-output", "iperf3 JSON is nested too deeply", text) from None
    except json.JSONDecodeError as exc:
        found = _JSON_ERROR.search(text)
        if found:
            raise _fail(found.group(1), text) from exc
        message = f"iperf3 JSON is cut short or broken ({exc.msg})"
        raise Iperf3Error("bad-output", message, text) from exc

    errors = [str(obj["error"]) for obj in objects if obj.get("error")]
    late: list[str] = []  # "iperf3: error - ..." lines outside the JSON
    warnings: list[str] = []
    for line in extra:
        found = _ERROR_LINE.match(line)
        if found and "warning" not in line.lower():
            late.append(found.group(1))
        else:
            warnings.append(f"extra output: {line}")
    if errors:
        raise _fail("; ".join(dict.fromkeys(errors + late)), text)
    if late:
        reason = "; ".join(dict.fromkeys(late))
        message = f"iperf3 failed after printing its JSON ({reason}); the result is not used"
        raise Iperf3Error(error_kind(reason), message, text)
    if exit_status not in (None, 0):
        raise Iperf3Error("error", f"iperf3 exited with status {exit_status}", text)

    finished = [o for o in objects if isinstance(o.get("end"), Mapping) and o["end"]]
    if not finished:
        raise Iperf3Error("bad-output", "iperf3 JSON has no end summary", text)
    distinct: list[dict[str, Any]] = []
    for obj in objects:
        if obj not in distinct:
            distinct.append(obj)
    if len(distinct) > 1:
        raise Iperf3Error(
            "bad-output",
            f"iperf3 printed {len(distinct)} different JSON results; cannot tell which is "
            "this run's",
            text,
        )
    if len(objects) > 1:
        warnings.append(f"iperf3 printed the same JSON {len(objects)} times; read it once")
    if had_nonfinite:
        warnings.append("output held nan/inf values; they were read as missing")
    try:
        return _result(finished[-1], warnings)
    except (ValueError, TypeError, KeyError) as exc:
        what = "iperf3 printed nan where a number was needed" if had_nonfinite else None
        message = f"{what or 'iperf3 JSON is not as expected'}: {exc}"
        raise Iperf3Error("bad-output", message, text) from exc


def _result(obj: Mapping[str, Any], warnings: list[str]) -> Iperf3Result:
    start = _mapping(obj.get("start"))
    test = _mapping(start.get("test_start"))
    end = obj["end"]
    protocol = str(test.get("protocol") or "").lower()
    if protocol not in PROTOCOLS:
        protocol = "udp" if "jitter_ms" in _mapping(end.get("sum")) else "tcp"
    version = start.get("version")
    version = parse_version(version) if isinstance(version, str) and version else None
    raw_intervals = obj.get("intervals") or []
    end, raw_intervals, missing = _this_version(
        end, raw_intervals, protocol, bool(test.get("reverse")), version, warnings,
        server=_mapping(obj.get("server_output_json")), length=_int(test.get("blksize")),
    )  # fmt: skip

    sent = _summary(end, "sum_sent", *(("sum",) if protocol == "udp" else ()))
    received = _summary(end, "sum_received")
    if sent is None or (received is None and not missing):
        raise ValueError("end has no sum_sent/sum_received/sum")
    # UDP loss and jitter: end.sum counts packets as sent, which is what lost_percent is
    # computed from; sum_received (iperf3 >= 3.10) only adds the receiver's own rate.
    loss = _summary(end, "sum", "sum_received") if protocol == "udp" else None
    loss_fallback = _mapping(end.get("sum_received"))

    def udp_value(key: str) -> Any:
        if loss is None:
            return None
        return loss.get(key) if loss.get(key) is not None else loss_fallback.get(key)

    cpu = _mapping(end.get("cpu_utilization_percent"))
    seconds = _float(_mapping(received).get("seconds")) or _float(sent.get("seconds")) or 0.0
    duration = _float(test.get("duration")) or seconds
    reverse = bool(test.get("reverse"))
    bidir = iperf3_bidir.is_bidir(end)
    intervals, intervals_of = _receiver_intervals(obj, raw_intervals, reverse, bidir, warnings)
    tcp, tcp_why, tcp_of = tcpinfo.read(obj, protocol, reverse, bidir, version)
    server_output = obj.get("server_output_text")
    if server_output is None and obj.get("server_output_json") is not None:
        server_output = json.dumps(obj["server_output_json"])
    result = Iperf3Result(
        protocol=protocol,
        version=version,
        duration=duration,
        streams=_int(test.get("num_streams")) or len(end.get("streams") or []) or 1,
        reverse=reverse,
        sender_bps=_bps(sent, warnings, "sender"),
        receiver_bps=None if received is None else _bps(received, warnings, "receiver"),
        bytes_sent=_int(sent.get("bytes")) or 0,
        bytes_received=None if received is None else _int(received.get("bytes")) or 0,
        retransmits=_int(sent.get("retransmits")) if protocol == "tcp" else None,
        cpu_client_pct=_float(cpu.get("host_total")),
        cpu_server_pct=_float(cpu.get("remote_total")),
        jitter_ms=_float(udp_value("jitter_ms")),
        lost_packets=_int(udp_value("lost_packets")),
        packets=_int(udp_value("packets")),
        lost_percent=_float(udp_value("lost_percent")),
        intervals=intervals,
        warnings=tuple(warnings),
        server_output=server_output if isinstance(server_output, str) else None,
        tcp_mss=_int(start.get("tcp_mss") or start.get("tcp_mss_default")),
        blksize=_int(test.get("blksize")),
        unavailable={**tcp_why, **({"throughput_bps": missing} if missing else {})},
        intervals_of=intervals_of,
        target_bps=_float(test.get("target_bitrate")) or None,
        stream_bps=iperf3_streams.receiver_rates(end, protocol),
        tcp_info=tcp,
        tcp_info_of=tcp_of,
    )
    if iperf3_bidir.is_bidir(end):
        return iperf3_bidir.merge(result, end, raw_intervals)
    return result


def _this_version(
    end: Mapping[str, Any],
    intervals: Sequence[Any],
    protocol: str,
    reverse: bool,
    version: str | None,
    warnings: list[str],
    *,
    server: Mapping[str, Any] | None = None,
    length: int | None = None,
) -> tuple[Mapping[str, Any], Sequence[Any], str | None]:
    """``end`` and the intervals in 3.11+'s shape (netrun.tools.iperf3.versions), and why
    the receiver's figure is missing when this version does not report it (a UDP figure
    worked out from the server's JSON or counters says so in ``warnings``)."""
    missing = None
    if versions.old_bidir(end):
        end, missing = versions.bidir_sums(end, protocol == "udp")
        intervals = versions.bidir_intervals(intervals)
        warnings.append(
            f"iperf3 {version or '(unknown version)'} --bidir: both directions summed from "
            "end.streams (its end sums hold one direction only)"
        )
    elif protocol == "udp":
        end, missing, source = versions.udp_receiver(
            end, intervals, reverse, version, server, length
        )
        if source is not None:
            shown = f"iperf3 {version}" if version else "this iperf3"
            warnings.append(
                f"receiver figure from {source}: {shown} reports no UDP receiver bytes to "
                "the client (before 3.11)"
            )
    return end, intervals, missing


def _receiver_intervals(
    obj: Mapping[str, Any],
    own: Sequence[Any],
    reverse: bool,
    bidir: bool,
    warnings: list[str],
) -> tuple[tuple[Interval, ...], str]:
    """The receiver's interval series where the output has it, and whose series it is.

    A forward test's client intervals are what it sent: a UDP test asked 500M of a link
    that delivers 410 draws 500 beside a table that says 410. With --get-server-output
    (and the server's -J) the server's own intervals are the receiver's. ``own``: the
    client's intervals (in 3.11+'s shape).
    """
    if bidir:  # the client's sums of both directions (netrun.tools.iperf3.bidir)
        return _intervals(own, warnings), "both"
    if reverse:
        return _intervals(own, warnings), "receiver"
    server = _mapping(obj.get("server_output_json"))
    theirs = server.get("intervals")
    if isinstance(theirs, list) and theirs:
        found = _intervals(theirs, [])
        if len(found) > 1 and _sliver(found):  # the server's last few ms after the test
            found = found[:-1]
        if found:
            return found, "receiver"
    return _intervals(own, warnings), "sender"


def _sliver(found: Sequence[Interval]) -> bool:
    """Whether the last interval is a sliver (under a tenth of the others' length): the
    server reports the milliseconds between the test's end and the client's last
    datagrams as an interval of its own, whose rate is noise, not a drop."""
    lengths = sorted(i.end - i.start for i in found[:-1])
    last = found[-1].end - found[-1].start
    return bool(lengths) and last < 0.1 * lengths[len(lengths) // 2]


def _intervals(raw: Sequence[Any], warnings: list[str]) -> tuple[Interval, ...]:
    """The measured intervals (omitted warm-up ones dropped); nan rates become 0 with a warning."""
    kept: list[Interval] = []
    unreadable = stalled = 0
    for item in raw:
        summary = item.get("sum") if isinstance(item, Mapping) else None
        if not isinstance(summary, Mapping) or summary.get("omitted"):
            continue
        bps = _float(summary.get("bits_per_second"))
        if bps is None:
            unreadable += 1
        elif bps == 0:
            stalled += 1
        kept.append(
            Interval(
                start=_float(summary.get("start")) or 0.0,
                end=_float(summary.get("end")) or 0.0,
                bits_per_second=bps or 0.0,
                retransmits=_int(summary.get("retransmits")),
                jitter_ms=_float(summary.get("jitter_ms")),
                lost_percent=_float(summary.get("lost_percent")),
            )
        )
    if unreadable:
        warnings.append(f"{unreadable} interval(s) had no readable rate (read as 0)")
    if stalled:
        warnings.append(f"{stalled} of {len(kept)} interval(s) moved no data")
    return tuple(kept)
