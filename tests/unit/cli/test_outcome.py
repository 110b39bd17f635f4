"""netrun.cli.outcome: exit 2 replaces yesterday's exports; -q stamps every stderr line.

Driven through netrun's own main() with a scenario file that does not load (nothing
connects to a host), so the exit-2 path is the CLI's real one.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from netrun.cli.main import main

STAMP = re.compile(r" \[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ no run\]$")


def test_bad_input_replaces_the_exports_and_stamps_its_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prom, xml = tmp_path / "netrun.prom", tmp_path / "junit.xml"
    prom.write_text(
        "# HELP netrun_last_success_timestamp_seconds x\n"
        "# TYPE netrun_last_success_timestamp_seconds gauge\n"
        'netrun_last_success_timestamp_seconds{scenario="nightly"} 1700000000\n'
        "# HELP netrun_iperf3_throughput_bytes_per_second x\n"
        "# TYPE netrun_iperf3_throughput_bytes_per_second gauge\n"
        'netrun_iperf3_throughput_bytes_per_second{scenario="nightly",test="t"} 1e8\n'
    )
    xml.write_text('<testsuites tests="1" failures="0"><testsuite name="nightly"/></testsuites>')
    (tmp_path / "inv.yaml").write_text("all:\n  hosts:\n    a: {ansible_host: 127.0.0.1}\n")
    (tmp_path / "night.yaml").write_text("tests: [not a mapping\n")
    argv = [str(tmp_path / "night.yaml"), "-i", str(tmp_path / "inv.yaml"), "-q",
            "--prometheus", str(prom), "--junit", str(xml), "--no-history"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.splitlines()
    assert err and all(STAMP.search(line) for line in err), err
    families = {f.name: f for f in text_string_to_metric_families(prom.read_text())}
    assert set(families) == {"netrun_run_exit_code", "netrun_run_timestamp_seconds",
                             "netrun_last_success_timestamp_seconds"}  # fmt: skip
    (code,) = families["netrun_run_exit_code"].samples
    assert code.labels == {"scenario": "nightly"} and code.value == 2  # last night's label
    (kept,) = families["netrun_last_success_timestamp_seconds"].samples
    assert kept.value == 1700000000
    suite = ET.parse(xml).getroot().find("testsuite")
    assert suite is not None and suite.get("errors") == "1"
