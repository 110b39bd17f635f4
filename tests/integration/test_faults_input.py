"""Fault suite, hostile input: values built to inject shell commands, and hostile files.

Every value that reaches a remote shell is either refused by validation (exit 2, one line
naming the file, the host or test, and the key) or quoted so that it stays a string. The
lab's hosts share this machine's filesystem, so a command that ran on any of them would
leave the marker file under tmp_path: it must never appear. The values go into a copy of
the lab's own inventory, so that if validation let one through it would really reach the
hosts' shells.

Hostile files (a billion-laughs YAML, 50 MB, binary garbage, invalid UTF-8, deep nesting,
a list or a scalar instead of a mapping) as the scenario or the inventory: exit 2 within
seconds, one line naming the file, no traceback, and netrun run under an address-space
limit (prlimit), so a loader that expanded the document would die instead of passing.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.conftest import LabHandle
from tests.integration.helpers import (
    check_fault,
    entry,
    error_lines,
    lab_inventory_data,
    lab_settings,
    run_under_fault,
    write_inventory,
    write_scenario,
    write_yaml,
)

pytestmark = [pytest.mark.integration, pytest.mark.faults]

EXIT_INPUT = 2
#: Address space for one netrun process: bad-input runs need ~200 MB (Python, yaml, the
#: modes); expanding a billion-laughs document or reading 50 MB of YAML needs far more.
ADDRESS_SPACE = 400 * 1024 * 1024
MAX_SECONDS = 10


@pytest.fixture(autouse=True)
def own_history(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    yield


def run_limited(args: list[Any], cwd: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    """The CLI under an address-space limit; (process, seconds)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.pop("PYTHONWARNINGS", None)
    started = time.monotonic()
    proc = subprocess.run(
        ["prlimit", f"--as={ADDRESS_SPACE}", "--", sys.executable, "-m", "netrun", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    return proc, time.monotonic() - started


def refused(args: list[Any], cwd: Path) -> str:
    """Run netrun expecting bad input; its one error line."""
    proc, seconds = run_limited([*args, "-o", "out", "-q"], cwd)
    where = f"\nstdout: {proc.stdout[-2000:]}\nstderr: {proc.stderr[-2000:]}"
    assert proc.returncode == EXIT_INPUT, f"exit {proc.returncode}{where}"
    assert seconds < MAX_SECONDS, f"took {seconds:.1f}s{where}"
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, where
    assert not (cwd / "out").exists(), "bad input must be refused before a results folder"
    lines = error_lines(proc.stderr)
    assert len(lines) == 1, f"expected one error line{where}"
    assert len(lines[0]) < 400, lines[0]
    return lines[0]


# -- values that would reach a remote shell -------------------------------------------------
def inject(marker: Path) -> str:
    return f"x;touch {marker}"


#: (inventory variable on alpha, its hostile value given the marker path)
INVENTORY_VALUES: list[tuple[str, Callable[[Path], str]]] = [
    ("netrun_iface", lambda m: f"eth0;touch {m}"),
    ("netrun_iface", lambda m: "eth0\n"),
    ("netrun_iperf3", lambda m: f"iperf3;touch {m}"),
    ("netrun_iperf3", lambda m: f"$(touch {m})"),
    ("netrun_remote_tmp", lambda m: f"/tmp/$(touch {m})"),
    ("netrun_data_ip", lambda m: f"10.0.0.1;touch {m}"),
    ("netrun_data_ip", lambda m: f"fe80::1%$(touch {m})"),
    ("ansible_become_user", lambda m: f"root;touch {m}"),
    ("netrun_port", lambda m: f"5201;touch {m}"),
    ("netrun_image", inject),
    ("netrun_network", inject),
    ("netrun_docker", lambda m: f"docker;touch {m}"),
    ("netrun_router_image", inject),
    ("netrun_router_name", inject),
    ("netrun_freeflow_dir", lambda m: f"/freeflow;touch {m}"),
    ("netrun_flannel_iface", inject),
    ("netrun_flannel_subnet_env", lambda m: f"/run/x;touch {m}"),
    ("netrun_vnet_prefix", lambda m: f"10.0.0.0/8;touch {m}"),
]


@pytest.mark.parametrize(
    ("key", "value"),
    INVENTORY_VALUES,
    ids=[f"{k}-{i}" for i, (k, _) in enumerate(INVENTORY_VALUES)],
)
def test_inventory_injection_refused(
    lab: LabHandle, tmp_path: Path, key: str, value: Callable[[Path], str]
) -> None:
    marker = tmp_path / "pwned"
    inv = write_inventory(tmp_path, lab, host_vars={"alpha": {key: value(marker)}})
    scen = write_scenario(tmp_path, [entry("ab")])
    line = refused([scen, "-i", inv], tmp_path)
    assert f"{inv}: host 'alpha': {key} must be" in line, line
    assert not marker.exists(), "an injected command ran"


#: (mode, scenario key, hostile value given the marker path)
SCENARIO_VALUES: list[tuple[str, str, Callable[[Path], str]]] = [
    ("docker", "image", inject),
    ("docker", "image", lambda m: f"alpine:$(touch {m})"),
    ("docker", "network", inject),
    ("docker", "docker", lambda m: f"docker;touch {m}"),
    ("flannel", "flannel_iface", inject),
    ("flannel", "flannel_subnet_env", lambda m: f"/run/x;touch {m}"),
    ("freeflow", "router_image", inject),
    ("freeflow", "router_name", inject),
    ("freeflow", "freeflow_dir", lambda m: f"/freeflow;touch {m}"),
    ("freeflow", "host_ip_prefix", lambda m: f"10.0.0.0/8;touch {m}"),
    ("baremetal", "bitrate", lambda m: f"1G;touch {m}"),
    ("baremetal", "length", lambda m: f"$(touch {m})"),
    ("baremetal", "window", lambda m: f"`touch {m}`"),
    ("baremetal", "port", lambda m: f"5201;touch {m}"),
    ("baremetal", "tolerance", lambda m: f"5%;touch {m}"),
]


@pytest.mark.parametrize(
    ("mode", "key", "value"),
    SCENARIO_VALUES,
    ids=[f"{k}-{i}" for i, (_, k, _) in enumerate(SCENARIO_VALUES)],
)
def test_scenario_injection_refused(
    lab: LabHandle, tmp_path: Path, mode: str, key: str, value: Callable[[Path], str]
) -> None:
    marker = tmp_path / "pwned"
    inv = write_inventory(tmp_path, lab)
    scen = write_scenario(tmp_path, [entry("t", mode=mode, **{key: value(marker)})])
    line = refused([scen, "-i", inv], tmp_path)
    assert f"{scen}: tests[0] 't': {key} must" in line, line
    assert not marker.exists(), "an injected command ran"


def test_override_and_test_name_injection_refused(lab: LabHandle, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    inv = write_inventory(tmp_path, lab)
    scen = write_scenario(tmp_path, [entry("ab")])
    line = refused([scen, "-i", inv, "-e", f"bitrate=1G;touch {marker}"], tmp_path)
    assert line.startswith("netrun: error: -e bitrate=1G;touch /") and "bitrate must" in line
    scen = write_scenario(tmp_path, [entry(f"t;touch {marker}")])
    line = refused([scen, "-i", inv], tmp_path)
    assert f"{scen}: tests[0]" in line and "is not safe for file names" in line, line
    assert not marker.exists(), "an injected command ran"


def test_hostile_host_name_is_quoted_harmlessly(lab: LabHandle, tmp_path: Path) -> None:
    """A host name is free text in Ansible; here it reaches remote paths and scripts as a
    quoted string: the run passes, and nothing runs."""
    marker = tmp_path / "pwned"
    evil = f"alpha;touch {marker};$(touch {marker})"
    data = lab_inventory_data(lab)
    hosts = data["all"]["hosts"]
    hosts[evil] = hosts.pop("alpha")
    inv = write_yaml(tmp_path / "inventory.yaml", data)
    scen = write_scenario(
        tmp_path, [entry("ab", server=evil), entry("ba", server="bravo", client=evil)]
    )
    before = lab_settings(lab)
    run = run_under_fault([scen, "-i", inv, "-o", "out"], cwd=tmp_path, outdir=tmp_path / "out")
    check_fault(
        lab,
        run,
        fault="input: shell metacharacters in a host name",
        before=before,
        max_seconds=60,
        statuses={"ab": "ok", "ba": "ok"},
        host=None,
        exit_code=0,
    )
    assert not marker.exists(), "an injected command ran"


# -- hostile files -----------------------------------------------------------------------------
def billion_laughs() -> bytes:
    lines = ['lol0: &lol0 "lol"']
    lines += [f"lol{i}: &lol{i} [{', '.join([f'*lol{i - 1}'] * 10)}]" for i in range(1, 10)]
    return ("\n".join(lines) + "\nall:\n  vars: {bomb: *lol9}\ntests: *lol9\n").encode()


def fifty_megabytes() -> bytes:
    row = b"  - {name: t, mode: baremetal, server: alpha, client: bravo}\n"
    return b"tests:\n" + row * (50 * 2**20 // len(row) + 1)


FILES: dict[str, tuple[Callable[[], bytes], str]] = {
    "billion-laughs": (billion_laughs, "YAML nodes once aliases (*name) are expanded"),
    "50MB": (fifty_megabytes, "is larger than 1 MB; refusing to load it"),
    "random-bytes": (lambda: random.Random(5).randbytes(4096), "binary data: a NUL byte"),
    "elf-header": (lambda: b"\x7fELF\x02\x01\x01\x00" + bytes(200), "binary data: a NUL byte"),
    "invalid-utf8": (lambda: "tests: café\n".encode("latin-1"), "is not UTF-8 text"),
    "deep-nesting": (lambda: b"tests: " + b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    "self-alias": (lambda: b"all: &a {hosts: *a}\ntests: &b [*b]\n", "alias contains itself"),
    "control-char": (lambda: b"tests: \x1b[31m\n", "unacceptable character #x001b"),
    "a-list": (lambda: b"- alpha\n- bravo\n", "must be a"),
    "a-scalar": (lambda: b"just a string\n", "must be a"),
}


@pytest.mark.parametrize("role", ["scenario", "inventory"])
@pytest.mark.parametrize("kind", sorted(FILES))
def test_hostile_file_is_one_line(lab: LabHandle, tmp_path: Path, kind: str, role: str) -> None:
    make, says = FILES[kind]
    bad = tmp_path / f"{kind}.yaml"
    bad.write_bytes(make())
    scen = write_scenario(tmp_path, [entry("ab")]) if role == "inventory" else bad
    inv = write_inventory(tmp_path, lab) if role == "scenario" else bad
    line = refused([scen, "-i", inv], tmp_path)
    assert f"{bad}" in line and says in line, line


def test_scenario_just_under_the_size_cap_loads_in_bounded_time(tmp_path: Path) -> None:
    """The cap is what bounds time and memory for valid-looking YAML: 1 MB of tests (with
    an unknown host, so nothing runs) is read and refused within the same bounds."""
    row = "  - {name: t%d, mode: baremetal, server: nohost, client: bravo}\n"
    rows, size = ["tests:\n"], 7
    while size < 2**20 - 200:
        rows.append(row % len(rows))
        size += len(rows[-1])
    (tmp_path / "big.yaml").write_text("".join(rows))
    assert 2**20 - 1000 < (tmp_path / "big.yaml").stat().st_size <= 2**20
    inv = write_yaml(tmp_path / "inv.yaml", {"all": {"hosts": {"bravo": {}}}})
    proc, seconds = run_limited(["big.yaml", "-i", inv, "-o", "out", "-q"], tmp_path)
    assert proc.returncode == EXIT_INPUT, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    assert seconds < 30, f"took {seconds:.1f}s"


def test_yaml_written_by_an_attacker_builds_no_objects(lab: LabHandle, tmp_path: Path) -> None:
    """yaml.safe_load semantics: a python/object tag is a plain one-line error."""
    marker = tmp_path / "pwned"
    scen = tmp_path / "s.yaml"
    scen.write_text(
        yaml.safe_dump({"tests": [entry("ab")]})
        + f'description: !!python/object/apply:os.system ["touch {marker}"]\n'
    )
    line = refused([scen, "-i", write_inventory(tmp_path, lab)], tmp_path)
    assert f"{scen}:" in line and "YAML syntax error" in line, line
    assert not marker.exists()
