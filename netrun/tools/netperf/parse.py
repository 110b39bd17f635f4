"""netperf's output: the ``-o`` CSV line of one process, its banner and ``-v 2`` histogram.

Built from real netperf 2.7.1 output between two lab hosts (tests/fixtures/netperf, captured
by tests/fixtures/capture_netperf.sh): TCP_RR, UDP_RR, TCP_CRR, TCP_STREAM, two processes at
once, a build without histograms, an unknown test, a refused control connection.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass

from netrun.core.numeric import finite
from netrun.errors import ToolError
from netrun.tools.netperf import histogram
from netrun.tools.netperf.histogram import Histogram

#: The ``-o`` output selectors netrun asks for, in order, and the key each is kept under.
FIELDS: dict[str, str] = {
    "THROUGHPUT": "throughput",
    "THROUGHPUT_UNITS": "throughput_units",
    "P50_LATENCY": "p50_us",
    "P90_LATENCY": "p90_us",
    "P99_LATENCY": "p99_us",
    "MEAN_LATENCY": "mean_us",
    "STDDEV_LATENCY": "stddev_us",
    "MAX_LATENCY": "max_us",
    "MIN_LATENCY": "min_us",
    "ELAPSED_TIME": "elapsed_s",
    "PROTOCOL": "protocol",
    "DIRECTION": "direction",
}
_TEXT = {"throughput_units", "protocol", "direction"}
#: THROUGHPUT_UNITS -> bits per second per unit (TCP_STREAM; netperf's default -f m).
BITS_PER_UNIT = {
    "10^9bits/s": 1e9,
    "10^6bits/s": 1e6,
    "10^3bits/s": 1e3,
    "GBytes/s": 8 * 2**30,
    "MBytes/s": 8 * 2**20,
    "KBytes/s": 8 * 2**10,
}


class NetperfError(ToolError):
    """netperf failed or printed output that cannot be trusted; ``kind`` says which way:
    missing, unknown-test, refused, timeout, bad-output, failed."""

    def __init__(self, kind: str, message: str, output: str = "") -> None:
        self.kind = kind
        self.message = message
        super().__init__(message, output)


@dataclass(frozen=True)
class Instance:
    """One netperf process's result: its ``-o`` values, its histogram (None: its build
    prints none), and whether its banner says it was built with histograms."""

    values: dict[str, float | str | None]
    histogram: Histogram | None
    has_histogram: bool
    banner: str

    def number(self, key: str) -> float | None:
        value = self.values.get(key)
        return None if isinstance(value, str) else value

    @property
    def throughput_bps(self) -> float | None:
        """TCP_STREAM's rate in bits/s (None for a request/response test's Trans/s)."""
        rate, unit = self.number("throughput"), self.values.get("throughput_units")
        per = BITS_PER_UNIT.get(str(unit))
        return None if rate is None or per is None else rate * per


def _failure(text: str, rc: int | None) -> NetperfError:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if any("is unknown to this netperf" in line for line in lines):
        which = next(line for line in lines if "is unknown" in line)
        return NetperfError("unknown-test", which.rstrip("."), text)
    if any(line.startswith("establish control") for line in lines):
        return NetperfError(
            "refused", "no netserver answered the control connection (refused; stopped?)", text
        )
    if rc in (126, 127) or any("not found" in line for line in lines[-2:]):
        return NetperfError("missing", "netperf not found on the host", text)
    if rc == 124:
        return NetperfError("timeout", "netperf did not finish in time", text)
    last = lines[-1] if lines else "no output"
    return NetperfError("failed", f"netperf failed (exit {rc}): {last[:200]}", text)


def parse(text: str, rc: int | None = 0) -> Instance:
    """One netperf process's output (``-P 1 -v 2 ... -- -o FIELDS``)."""
    lines = text.splitlines()
    header = next((i for i, line in enumerate(lines) if line.startswith("Throughput,")), None)
    if header is None or header + 1 >= len(lines) or rc not in (0, None):
        raise _failure(text, rc)
    row = next(csv.reader([lines[header + 1]]), [])
    if len(row) != len(FIELDS):
        raise NetperfError(
            "bad-output", f"netperf printed {len(row)} values, not {len(FIELDS)}", text
        )
    values: dict[str, float | str | None] = {}
    for key, cell in zip(FIELDS.values(), row, strict=True):
        if key in _TEXT:
            values[key] = cell.strip()
            continue
        try:
            number = finite(float(cell))
        except ValueError:
            number = None
        # netperf prints -1 for a figure it did not compute
        values[key] = None if number is None or number < 0 else number
    if values["throughput"] is None:
        raise NetperfError("bad-output", "netperf printed no throughput", text)
    banner = next((line for line in lines[:header] if " TEST " in line), "")
    return Instance(
        values=values,
        histogram=histogram.parse(text),
        has_histogram=": histogram" in banner,
        banner=banner.strip(),
    )


def split(text: str) -> list[tuple[int | None, str]]:
    """The per-process parts of command.instances_script's output: (exit code, text) each."""
    parts: list[tuple[int | None, str]] = []
    for chunk in text.split(MARK)[1:]:
        head, _, body = chunk.partition("\n")
        words = head.split()
        rc = int(words[-1]) if words and words[-1].lstrip("-").isdigit() else None
        parts.append((rc, body.rstrip("\n")))
    return parts


#: Starts each process's part in the instances script's output: "MARK <i> rc <code>".
MARK = "==netrun:netperf "
