"""netperf's argv and the several-processes script."""

from __future__ import annotations

import subprocess

from netrun.tools.netperf.command import client_command, data_ports, instances_script
from netrun.tools.netperf.parse import FIELDS, split


def test_rr_argv() -> None:
    argv = client_command("10.0.0.2", port=12865, test="TCP_RR", duration=5,
                          request_size=64, response_size=1024)  # fmt: skip
    assert argv == [
        "netperf", "-H", "10.0.0.2", "-p", "12865", "-t", "TCP_RR", "-l", "5", "-P", "1",
        "-v", "2", "--", "-r", "64,1024", "-o", ",".join(FIELDS),
    ]  # fmt: skip


def test_sizes_default_to_netperfs_and_stream_uses_m() -> None:
    assert "-r" not in client_command("h", port=1, test="UDP_RR", duration=1)
    argv = client_command("h", port=1, test="TCP_STREAM", duration=1, request_size=16384)
    assert argv[argv.index("--") + 1 :][:2] == ["-m", "16384"]


def test_instances_script_runs_each_and_reports_each(tmp_path: object) -> None:
    script = instances_script(["sh", "-c", 'echo "out $$"; exit 3'], 3, 10, f"{tmp_path}/np")
    res = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=30)
    parts = split(res.stdout)
    assert [rc for rc, _ in parts] == [3, 3, 3]
    assert all(text.startswith("out ") for _, text in parts)
    assert len({text for _, text in parts}) == 3  # three processes


def test_every_token_is_quoted() -> None:
    script = instances_script(["netperf", "-H", "a b;rm -rf /"], 1, 5, "/tmp/x y/np")
    assert "'a b;rm -rf /'" in script and "'/tmp/x y/np'" in script


def test_data_ports_sit_beside_the_control_port() -> None:
    assert data_ports(12865, 3) == [12866, 12867, 12868]
    assert data_ports(65534, 2) == [65532, 65533]  # no room above: below it


def test_each_process_names_its_own_data_port() -> None:
    script = instances_script(["netperf", "-H", "h", "--", "-o", "X"], 2, 5, "/tmp/np",
                              ports=[12866, 12867])  # fmt: skip
    lines = [line for line in script.splitlines() if "netperf -H" in line]
    assert "-o X -P ,12866 " in lines[0] and "-o X -P ,12867 " in lines[1]
    assert "-P" not in instances_script(["netperf"], 1, 5, "/tmp/np")
