"""The lab's runc wrapper: every call reaches runc with its arguments, and only a spec that
grants CAP_SYS_RESOURCE (a privileged container's, an exec's in one) is rewritten."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from netrun.lab import runtime

CAPS = ["CAP_NET_ADMIN", "CAP_SYS_RESOURCE", "CAP_SYS_ADMIN"]


def wrapper(tmp_path: Path) -> tuple[Path, Path]:
    """The installed wrapper, its runc a stub that records its arguments."""
    path = runtime.install(tmp_path)
    seen = tmp_path / "seen"
    stub = tmp_path / "runc"
    stub.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {seen}\n')
    stub.chmod(0o755)
    path.write_text(path.read_text().replace("runc=/usr/sbin/runc", f"runc={stub}"))
    return path, seen


def bundle(tmp_path: Path, caps: list[str]) -> Path:
    spec = {"process": {"capabilities": {k: list(caps) for k in ("bounding", "effective")}}}
    folder = tmp_path / "bundle"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(spec))
    return folder


def test_install_puts_both_files_executable(tmp_path: Path) -> None:
    path = runtime.install(tmp_path)
    assert path == tmp_path / runtime.WRAPPER_NAME
    for name in (runtime.WRAPPER_NAME, runtime.CAPS_NAME):
        assert os.access(tmp_path / name, os.X_OK)
    assert runtime.install(tmp_path) == path  # again: replaced whole, no leftovers
    assert sorted(p.name for p in tmp_path.iterdir()) == [runtime.WRAPPER_NAME, runtime.CAPS_NAME]


def test_a_plain_container_is_handed_over_untouched(tmp_path: Path) -> None:
    path, seen = wrapper(tmp_path)
    folder = bundle(tmp_path, ["CAP_NET_RAW"])
    before = (folder / "config.json").read_text()
    argv = ["--root", "/r", "create", "--bundle", str(folder), "id1"]
    subprocess.run([str(path), *argv], check=True)
    assert seen.read_text().splitlines() == argv
    assert (folder / "config.json").read_text() == before


def test_a_privileged_container_loses_only_cap_sys_resource(tmp_path: Path) -> None:
    path, seen = wrapper(tmp_path)
    folder = bundle(tmp_path, CAPS)
    subprocess.run([str(path), "create", f"--bundle={folder}", "id2"], check=True)
    caps = json.loads((folder / "config.json").read_text())["process"]["capabilities"]
    assert caps["bounding"] == caps["effective"] == ["CAP_NET_ADMIN", "CAP_SYS_ADMIN"]
    assert seen.read_text().splitlines()[-1] == "id2"


def test_an_exec_process_spec_is_rewritten_too(tmp_path: Path) -> None:
    path, _ = wrapper(tmp_path)
    process = tmp_path / "process.json"
    process.write_text(json.dumps({"capabilities": {"bounding": CAPS}}))
    subprocess.run([str(path), "exec", "--process", str(process), "id3"], check=True)
    assert "CAP_SYS_RESOURCE" not in process.read_text()
