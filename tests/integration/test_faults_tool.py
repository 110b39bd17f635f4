"""The fault suite, tool faults: an iperf3 on one host's PATH that prints broken output.

The fake sits in bravo's lab bin folder (first on PATH in SSH sessions there). It passes
``--version`` and server runs through to the real iperf3 untouched, so the probe and alpha's
side are real. As a client it runs the real iperf3 3.12 client against netrun's real server,
then bends that real output into one broken shape. Each shape must be classified: a failed
test whose one-line error names bravo and says what was wrong, the raw output saved beside
results.json, and nothing left behind.

Two shapes carry a measurement that can be recovered, and netrun keeps it on purpose, with
a warning in the test's ``details.warnings``: the same JSON printed twice (iperf3 3.16/3.17
did, esnet/iperf#1688) and nan rates where bytes and seconds give the rate (iperf3 computes
it the same way). A different second object, an error line after the JSON, or nan where no
rate can be worked out are not recoverable: nothing says the numbers are this run's, or whole.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import IPERF3_FIXTURES
from tests.integration.conftest import LabHandle
from tests.integration.helpers import (
    check_fault,
    entry,
    lab_settings,
    only_test,
    run_under_fault,
    write_scenario,
)

pytestmark = [pytest.mark.integration, pytest.mark.faults]

#: Real iperf3 3.12 output from an earlier run (tests/fixtures/capture.sh): the "other" object.
STALE = IPERF3_FIXTURES / "tcp_1stream.stdout"

#: The fake client: run the real one, then bend its output (SHAPE is filled in per test).
FAKE = r"""#!{python}
import json, os, re, subprocess, sys

REAL, SHAPE, STALE = {real!r}, {shape!r}, {stale!r}
args = sys.argv[1:]
if "-c" not in args:  # --version (the probe) and servers: the real thing
    os.execv(REAL, [REAL, *args])
done = subprocess.run([REAL, *args], capture_output=True, text=True)
out, err, code = done.stdout, done.stderr, done.returncode
RATE = r'("bits_per_second":\s*)[-0-9.e+]+'
if SHAPE == "truncated":
    out = out[: len(out) // 2]
elif SHAPE == "error-line":
    err += "iperf3: error - unable to send control message: Bad file descriptor\n"
elif SHAPE == "two-objects":
    out = open(STALE).read() + out
elif SHAPE == "nan":
    head, tail = out.split('"sum_received"', 1)
    tail = re.sub(r'("seconds":\s*)[-0-9.e+]+', r"\1nan", tail, count=1)
    out = head + '"sum_received"' + re.sub(RATE, r"\1nan", tail, count=1)
elif SHAPE == "error-exit-0":
    out = out.rstrip()[:-1].rstrip() + ',\n\t"error":\t"the server has terminated"\n}}\n'
    code = 0
elif SHAPE == "nothing":
    out = err = ""
    code = 0
elif SHAPE == "same-twice":
    out = out + out
elif SHAPE == "nan-rates":
    out = re.sub(RATE, r"\1nan", out)
sys.stdout.write(out)
sys.stderr.write(err)
sys.exit(code)
"""

#: shape -> the words its one-line error must hold (after "bravo: ").
BROKEN = {
    "truncated": "iperf3 JSON is cut short or broken",
    "error-line": "iperf3 failed after printing its JSON (unable to send control message",
    "two-objects": "iperf3 printed 2 different JSON results; cannot tell which is this run's",
    "nan": "iperf3 printed nan where a number was needed: no usable receiver rate",
    "error-exit-0": "iperf3 failed: the server has terminated",
    "nothing": "iperf3 printed nothing (exit status 0)",
}
#: shape -> the warning a kept measurement carries.
RECOVERABLE = {
    "same-twice": "iperf3 printed the same JSON 2 times; read it once",
    "nan-rates": "rate was not a number; computed from bytes and seconds",
}


@pytest.fixture
def fake_iperf3(lab: LabHandle) -> Iterator[Any]:
    """Install the fake on bravo for one shape; removed afterwards."""
    path = lab.bin_dir("bravo") / "iperf3"
    real = shutil.which("iperf3")
    assert real is not None

    def install(shape: str) -> None:
        path.write_text(
            FAKE.format(python=sys.executable, real=real, shape=shape, stale=str(STALE))
        )
        path.chmod(0o755)

    try:
        yield install
    finally:
        path.unlink(missing_ok=True)


def run(lab: LabHandle, tmp: Path) -> Any:
    scen = write_scenario(tmp, [entry("ab")])
    argv = [scen, "-i", lab.inventory, "-q", "-o", "out", "--db", tmp / "history.sqlite"]
    return run_under_fault(argv, cwd=tmp, outdir=tmp / "out", timeout=60)


@pytest.mark.parametrize("shape", list(BROKEN))
def test_broken_output_is_classified(
    lab: LabHandle, tmp_path: Path, fake_iperf3: Any, shape: str
) -> None:
    fake_iperf3(shape)
    before = lab_settings(lab)
    fault = run(lab, tmp_path)
    doc = check_fault(
        lab,
        fault,
        fault=f"iperf3 output: {shape}",
        before=before,
        max_seconds=20,
        statuses={"ab": "failed"},
        host="bravo",
        error_has=f"bravo: {BROKEN[shape]}",
    )
    sample = only_test(doc, "ab")
    assert sample["error"].startswith(f"bravo: {BROKEN[shape]}"), sample["error"]
    assert sample["throughput_bps"] is None
    if shape == "nothing":
        assert sample["raw"] is None  # nothing to keep
    else:
        raw = (fault.outdir / sample["raw"]).read_text()
        assert '"start"' in raw, raw[:200]  # iperf3's own text, kept as it came


@pytest.mark.parametrize("shape", list(RECOVERABLE))
def test_recoverable_output_is_kept_with_a_warning(
    lab: LabHandle, tmp_path: Path, fake_iperf3: Any, shape: str
) -> None:
    fake_iperf3(shape)
    before = lab_settings(lab)
    fault = run(lab, tmp_path)
    doc = check_fault(
        lab,
        fault,
        fault=f"iperf3 output: {shape} (recovered)",
        before=before,
        max_seconds=20,
        statuses={"ab": "ok"},
        host=None,
        exit_code=0,
    )
    sample = only_test(doc, "ab")
    assert sample["throughput_bps"] > 0
    warnings = sample["details"].get("warnings", [])
    assert any(RECOVERABLE[shape] in w for w in warnings), warnings
    raw = (fault.outdir / sample["raw"]).read_text()
    if shape == "nan-rates":
        first = json.loads(raw.replace("nan", "null"))
        sent = first["end"]["sum_received"]
        assert sample["throughput_bps"] == pytest.approx(sent["bytes"] * 8 / sent["seconds"])
