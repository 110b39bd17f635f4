"""INI, JSON, script and directory inventories, and several -i, resolved as Ansible does.

The reference is ansible-core itself: each corpus is resolved by `ansible-inventory --list`
(run for real; ansible-core is in the test extra) and by `netrun inventory --list`, and the
two must be equal: groups, their hosts and children, and every host's variables.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netrun.errors import InventoryError
from netrun.inventory import script_source
from netrun.inventory.ini_source import parse_value
from netrun.inventory.loader import load_inventory
from tests.conftest import INVENTORY_FIXTURES, ROOT

CORPUS = INVENTORY_FIXTURES / "formats"
ANSIBLE_INVENTORY = script_source.ansible_inventory()
needs_ansible = pytest.mark.skipif(
    ANSIBLE_INVENTORY is None, reason="ansible-core missing: pip install -e '.[test]'"
)


def _plain(value: Any) -> Any:
    """ansible-inventory's JSON with its provenance wrappers removed."""
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return _plain(value["__ansible_unsafe"])
        return {k: _plain(v) for k, v in value.items() if k != "profile"}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def ansible_list(*sources: Path) -> dict[str, Any]:
    argv = [str(ANSIBLE_INVENTORY), *(a for s in sources for a in ("-i", str(s))), "--list"]
    env = dict(os.environ, ANSIBLE_INVENTORY_UNPARSED_FAILED="1", ANSIBLE_NOCOLOR="1")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env, check=True)
    return _plain(json.loads(done.stdout))


def netrun_list(*sources: Path) -> dict[str, Any]:
    argv = [sys.executable, "-m", "netrun", "inventory", "--list"]
    argv += [a for s in sources for a in ("-i", str(s))]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


CASES = {
    "ini": ["ini/hosts.ini"],  # children declared later, ranges, :vars typing, group_vars dirs
    "script": ["script/inventory.py"],  # executable: run with --list; group_vars beside it
    "ini+yaml": ["ini/hosts.ini", "yaml/inventory.yml"],  # two sources, alpha in two groups
    "script+ini": ["script/inventory.py", "ini/hosts.ini"],
    "directory": ["dir"],  # its files in order; .retry skipped; group_vars of the directory
}


@needs_ansible
@pytest.mark.parametrize("sources", CASES.values(), ids=list(CASES))
def test_equals_ansible_inventory(sources: list[str]) -> None:
    paths = [CORPUS / s for s in sources]
    assert netrun_list(*paths) == ansible_list(*paths)


@needs_ansible
def test_the_example_inventory_equals_ansible_inventory() -> None:
    """inventories/lab.yaml, with its servers/clients role groups (read only, never run)."""
    example = ROOT / "inventories" / "lab.yaml"
    assert netrun_list(example) == ansible_list(example)


@needs_ansible
def test_json_from_ansible_inventory_is_the_same_inventory(tmp_path: Path) -> None:
    """The bridge from any plugin: ansible-inventory --list > lab.json, then -i lab.json."""
    source = CORPUS / "ini" / "hosts.ini"
    listing = ansible_list(source)
    (tmp_path / "lab.json").write_text(json.dumps(listing))
    assert netrun_list(tmp_path / "lab.json") == listing


def test_ini_values_follow_ansibles_typing() -> None:
    inv = load_inventory(CORPUS / "ini" / "hosts.ini")
    alpha, node = inv["alpha"].vars, inv["node02"].vars
    assert (alpha["ansible_port"], alpha["flag"], alpha["s"], alpha["lst"]) == (
        2222,
        True,
        "two words",
        [1, 2],
    )
    assert alpha["netrun_data_ip"] == "10.1.0.1"  # host_vars/alpha.json
    # :vars values go through literal_eval too (ansible-core 2.19 does this, whatever the
    # docs say); what is not a literal stays the text, comment and all.
    assert (node["t"], node["nothing"], node["zero"], node["f"]) == (True, None, "010", 1.5)
    assert node["word"] == "hello world  # kept: :vars lines have no inline comments"
    assert inv["bravo"].port == 2200 and inv["bravo"].groups == ("clients", "lab", "servers")
    assert sorted(inv.members("servers"))[:3] == ["alpha", "bravo", "node01"]
    assert parse_value("(1, 2)") == [1, 2] and parse_value("1+2j") == "(1+2j)"


def test_limit_patterns_work_on_ini() -> None:
    inv = load_inventory(CORPUS / "ini" / "hosts.ini")
    assert [h.name for h in inv.select("lab:&clients:!charlie")] == ["bravo"]
    assert [h.name for h in inv.select("node0*")] == ["node01", "node02", "node03"]


@pytest.mark.parametrize(
    ("text", "line", "expected"),
    [
        ("[web]\nalpha\n[web:nope]\n", 3, "section [web:nope] has unknown type 'nope'"),
        ("[web]\nalpha\n[ bad ]\n", 3, "invalid section '[ bad ]'"),
        ("[web]\nalpha ansible_port\n", 2, "host 'alpha': expected key=value, got 'ansible_port'"),
        ("[web]\n---\n", 2, "invalid host '---' ('---' starts a YAML file: name it .yml)"),
        ("[web]\nalpha\n[web:vars]\nnovalue\n", 4, "expected key=value in [web:vars]"),
        ("[web:vars]\nx=1\n", 1, "section [web:vars] is for group 'web', which is not defined"),
        ("[a:children]\nb\n", 2, "section [a:children] names group 'b', which is not defined"),
        ("[web]\nnode[1:]\n", 2, "group 'web': host range 'node[1:]': a range needs an end"),
        ("[web]\nalpha ansible_port=0\n", 2, "host 'alpha': ansible_port must be a port number"),
        ("[web]\nalpha 'unclosed\n", 2, "cannot read host line"),
    ],
)
def test_ini_errors_name_file_and_line(tmp_path: Path, text: str, line: int, expected: str) -> None:
    path = tmp_path / "hosts.ini"
    path.write_text(text)
    with pytest.raises(InventoryError) as err:
        load_inventory(path)
    assert str(err.value).startswith(f"{path}:{line}: {expected}"), str(err.value)


def test_unknown_extension_reads_yaml_or_ini(tmp_path: Path) -> None:
    (tmp_path / "hosts").write_text("[web]\nalpha ansible_host=10.0.0.1\n")
    (tmp_path / "other").write_text("all:\n  hosts:\n    bravo:\n")
    assert list(load_inventory([tmp_path / "hosts", tmp_path / "other"]).hosts) == [
        "alpha",
        "bravo",
    ]


def _script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "inv.sh"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("echo 'Traceback: boom' >&2; exit 3\n", "exited with status 3: Traceback: boom"),
        ("echo 'not json'\n", ":1: not JSON (Expecting value); it starts 'not json'"),
        ("echo '[1, 2]'\n", "must be a JSON object of groups"),
        ('echo \'{"web": {"hosts": "alpha"}}\'\n', "group 'web': hosts must be a list"),
    ],
)
def test_script_errors_are_one_line(tmp_path: Path, body: str, expected: str) -> None:
    path = _script(tmp_path, body)
    with pytest.raises(InventoryError) as err:
        load_inventory(path)
    assert str(path) in str(err.value) and expected in str(err.value), str(err.value)
    assert "\n" not in str(err.value)


def test_script_timeout_ends_the_script_and_its_children(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(script_source, "TIMEOUT", 0.5)
    marker = tmp_path / "child.pid"
    path = _script(tmp_path, f"sleep 60 & echo $! > {marker}; wait\n")
    start = time.monotonic()
    with pytest.raises(InventoryError, match=r"inv\.sh --list: no answer within [01] s"):
        load_inventory(path)
    assert time.monotonic() - start < 10
    child = int(marker.read_text())
    for _ in range(50):  # the kill is sent; give the kernel a moment to reap
        if not Path(f"/proc/{child}").exists() or "Z" in _state(child):
            break
        time.sleep(0.05)
    assert not Path(f"/proc/{child}").exists() or "Z" in _state(child)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return "Z"


def test_script_without_meta_is_asked_per_host(tmp_path: Path) -> None:
    body = (
        'if [ "$1" = --list ]; then echo \'{"web": ["alpha"]}\';'
        ' elif [ "$2" = alpha ]; then echo \'{"ansible_host": "10.0.0.7"}\'; fi\n'
    )
    body = body.replace('["alpha"]', '["alpha", "bravo"]')  # bravo: --host prints nothing
    inv = load_inventory(_script(tmp_path, body))
    assert inv["alpha"].address == "10.0.0.7" and inv["bravo"].vars == {}


def test_an_executable_ini_file_is_still_ini(tmp_path: Path) -> None:
    path = tmp_path / "hosts"
    path.write_text("[web]\nalpha ansible_host=10.0.0.1\n")
    path.chmod(0o755)  # as on a vfat mount
    assert list(load_inventory(path).hosts) == ["alpha"]


@needs_ansible
def test_plugin_config_is_read_by_ansible_inventory(tmp_path: Path) -> None:
    """An inventory plugin config (ansible.builtin.generator) is resolved by Ansible."""
    plugin = tmp_path / "generator.yml"
    plugin.write_text(
        "plugin: ansible.builtin.generator\n"
        "hosts:\n  name: '{{ op }}-{{ env }}'\n  parents:\n    - name: '{{ env }}'\n"
        "layers:\n  op: [web, db]\n  env: [dev, prod]\n"
    )
    inv = load_inventory(plugin)
    assert [h.name for h in inv.select("dev")] == ["web-dev", "db-dev"]
    assert netrun_list(plugin) == ansible_list(plugin)


@needs_ansible
def test_plugin_ansible_cannot_load_is_an_error_not_an_empty_inventory(tmp_path: Path) -> None:
    path = tmp_path / "aws.yml"
    path.write_text("plugin: aws_ec2\n")  # amazon.aws is not installed here
    with pytest.raises(InventoryError) as err:
        load_inventory(path)
    assert str(err.value) == (
        f"ansible-inventory -i {path} --list: exited with status 1: inventory config"
        f" '{path}' specifies unknown plugin 'aws_ec2'"
    )


def test_plugin_config_without_ansible_says_how(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(script_source, "ansible_inventory", lambda: None)  # not installed
    path = tmp_path / "netbox.yml"
    path.write_text("plugin: netbox.netbox.nb_inventory\n")
    with pytest.raises(InventoryError, match=r"pip install 'netrun\[ansible\]'"):
        load_inventory(path)


INI_TEXT = (CORPUS / "ini" / "hosts.ini").read_text()


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    cut=st.integers(0, len(INI_TEXT)),
    junk=st.text(
        alphabet=st.sampled_from("[]:=#;'\"\\ \n\tab01-*,{}()") | st.characters(), max_size=40
    ),
    keep=st.integers(0, len(INI_TEXT)),
)
def test_mangled_ini_is_an_inventory_or_one_error_per_problem(
    tmp_path_factory: pytest.TempPathFactory, cut: int, junk: str, keep: int
) -> None:
    """Any text with an .ini name loads or raises InventoryError naming file:line, nothing else."""
    path = tmp_path_factory.mktemp("ini") / "hosts.ini"
    path.write_text(INI_TEXT[:cut] + junk + INI_TEXT[keep:], encoding="utf-8", errors="replace")
    try:
        inv = load_inventory(path)
    except InventoryError as exc:
        assert all(line.startswith(str(path)) for line in exc.problems), exc.problems
    else:
        inv.to_ansible_list()
        for host in inv:
            host.secrets()
