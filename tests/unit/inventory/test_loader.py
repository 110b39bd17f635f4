"""Inventory loading checked against the real `ansible-inventory --list` output in fixtures."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from netrun.errors import InventoryError, UnknownHostError
from netrun.inventory import loader as inventory_loader
from netrun.inventory.builder import expand_hosts
from netrun.inventory.loader import load_inventory
from netrun.inventory.model import Inventory, check_netrun_vars
from netrun.inventory.values import CORE_VARS
from tests.conftest import INVENTORY_FIXTURES

CASES = {
    "basic": INVENTORY_FIXTURES / "basic.yml",
    "layered": INVENTORY_FIXTURES / "layered" / "inventory.yml",
    "toplevel": INVENTORY_FIXTURES / "toplevel.yml",
    "single-host-string": INVENTORY_FIXTURES / "single-host-string.yml",
    "reopen": INVENTORY_FIXTURES / "reopen" / "inventory.yml",
}


def ansible_list(name: str) -> dict:
    return json.loads((INVENTORY_FIXTURES / f"{name}.ansible-list.json").read_text())


def write(tmp_path: Path, text: str, name: str = "inv.yml") -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def problems(path: Path) -> list[str]:
    with pytest.raises(InventoryError) as info:
        load_inventory(path)
    return info.value.problems


# -- compatibility with Ansible ----------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(CASES))
def test_hostvars_equal_ansible(name: str) -> None:
    got = load_inventory(CASES[name]).to_ansible_list()
    assert got["_meta"]["hostvars"] == ansible_list(name)["_meta"]["hostvars"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_groups_equal_ansible(name: str) -> None:
    expected = {k: v for k, v in ansible_list(name).items() if k != "_meta"}
    got = {k: v for k, v in load_inventory(CASES[name]).to_ansible_list().items() if k != "_meta"}
    assert got == expected


def pattern_cases() -> list[tuple[str, str, list[str]]]:
    lines = (INVENTORY_FIXTURES / "patterns.ansible-hosts.txt").read_text().splitlines()
    cases = []
    for line in lines:
        if line and not line.startswith("#"):
            inv, rest = line.split("|", 1)
            pattern, hosts = rest.rsplit("|", 1)
            cases.append((inv, pattern, hosts.split(",") if hosts else []))
    return cases


# Ansible ignores a part that names nothing (with a warning); netrun refuses it, because a
# typo in "web:!dbb" would otherwise run on hosts the user meant to exclude.
STRICTER = {("basic.yml", "all:!zeta"), ("layered/inventory.yml", "!web")} | {
    ("toplevel.yml", p) for p in ("web:db", "web,db", "web:!db", "web1:loner", "all:!zeta")
}


@pytest.mark.parametrize(("inv", "pattern", "expected"), pattern_cases())
def test_select_matches_ansible(inv: str, pattern: str, expected: list[str]) -> None:
    inventory = load_inventory(INVENTORY_FIXTURES / inv)
    if not expected or (inv, pattern) in STRICTER:
        with pytest.raises(InventoryError, match=r"matches nothing|selects no hosts"):
            inventory.select(pattern)
        return
    got = [h.name for h in inventory.select(pattern)]
    if "[" in pattern and not pattern.startswith("~"):
        assert got == expected  # subscripts depend on order
    else:
        assert sorted(got) == sorted(expected)


# -- hosts -------------------------------------------------------------------------------------
def test_host_properties_read_ansible_keys_and_old_aliases() -> None:
    inv = load_inventory(CASES["basic"])
    web1, db1 = inv.get("web1"), inv["db1"]
    # web1 has ansible_user from "all" and its own ansible_ssh_user: Ansible's ssh connection
    # takes the last name in its list (ansible_user, ansible_ssh_user), so "old" wins.
    assert (web1.address, web1.port, web1.user, web1.key_file) == (
        "192.0.2.21",
        2222,
        "old",
        "~/.ssh/lab",
    )
    assert db1.become and db1.become_password == "secret" and db1.key_file == "/keys/db"
    assert inv["controller"].port == 2200 and inv["controller"].address == "controller"
    assert inv["shared"].data_ip == "10.202.0.5" and inv["web2"].iface == "eth1"
    assert inv["loner"].link_speed_mbps == 1000.0


def test_host_groups_include_ancestors_and_file_order() -> None:
    inv = load_inventory(CASES["layered"])
    assert list(inv.hosts) == ["node01", "node02", "node03", "node04", "spine-a", "spine-b"]
    assert inv["node01"].groups == ("alpha", "dc", "leaf", "rack", "zeta")
    assert inv.groups["leaf"].parents == ["rack"] and inv.groups["leaf"].depth == 3
    assert inv.groups["alpha"].priority == 200
    assert "ansible_group_priority" not in inv.groups["alpha"].vars


def test_container_protocol() -> None:
    inv = load_inventory(CASES["basic"])
    assert isinstance(inv, Inventory) and len(inv) == 6
    assert "web1" in inv and "nope" not in inv
    assert [h.name for h in inv] == list(inv.hosts)


def test_unknown_host_is_key_error_with_hint() -> None:
    inv = load_inventory(CASES["basic"])
    with pytest.raises(KeyError) as info:
        inv.get("shraed")
    assert isinstance(info.value, UnknownHostError)
    assert str(info.value) == f"{CASES['basic']}: unknown host 'shraed'; did you mean 'shared'?"


# -- ranges ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("node[01:04]", ["node01", "node02", "node03", "node04"]),
        ("[a:c].lab", ["a.lab", "b.lab", "c.lab"]),
        ("h[1:10:4]", ["h1", "h5", "h9"]),
        ("r[1:2]-[a:b]", ["r1-a", "r1-b", "r2-a", "r2-b"]),
        ("x[:2]", ["x0", "x1", "x2"]),
        ("plain", ["plain"]),
    ],
)
def test_expand_hosts(pattern: str, expected: list[str]) -> None:
    assert expand_hosts(pattern) == expected


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("n[1]", "must be [begin:end]"),
        ("n[1:]", "needs an end"),
        ("n[1:4:0]", "step of 1 or more"),
        ("n[01:100]", "same length"),
        ("n[c:a]", "must not be after its end"),
        ("n[1:c]", "numbers or single letters"),
        ("n[1:999999999]", "more than"),
    ],
)
def test_expand_hosts_errors(pattern: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        expand_hosts(pattern)


# -- errors ------------------------------------------------------------------------------------
def test_missing_file_and_directory(tmp_path: Path) -> None:
    assert problems(tmp_path / "nope.yml") == [f"{tmp_path / 'nope.yml'}: inventory file not found"]
    assert problems(tmp_path) == [f"{tmp_path}: directory holds no inventory file"]


def test_malformed_yaml_names_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, "all:\n  hosts:\n    a: [1, 2\n")
    [line] = problems(path)
    assert line.startswith(f"{path}:4:1: YAML syntax error: ")
    assert "a '[' list is not closed" in line


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "inventory is empty; list groups and hosts under 'all:'"),
        ("- a\n- b\n", "must be a YAML mapping of groups"),
        ("web:\n  - a\n", "group 'web' must be a mapping of hosts/children/vars, got a list"),
        ("web:\n  hosts: [a, b]\n", "group 'web': 'hosts' must be a mapping, got a list;"),
        ("web:\n  host: {a: }\n", "group 'web': unexpected key 'host'; did you mean 'hosts'?"),
        ("web:\n  hosts:\n    a: [1]\n", "host 'a' must have a mapping of vars or nothing, got a"),
        ("web:\n  hosts:\n    10: \n", "group 'web': host name 10 must be a string; quote it"),
        ("web:\n  hosts:\n    n[1:]: \n", "group 'web': host range 'n[1:]': a range needs"),
        (
            "a:\n  children:\n    b:\n      children: {a: }\n",
            "group 'b' under 'a' makes a loop of children; remove one",
        ),
        (
            "web:\n  vars: {ansible_group_priority: high}\n",
            "group 'web': ansible_group_priority must be an integer",
        ),
    ],
)
def test_shape_errors(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path, text)
    [line] = problems(path)
    assert line.startswith(f"{path}: {expected}")


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("ansible_port", "abc", "ansible_port must be a port number 1-65535, got 'abc'"),
        ("ansible_ssh_port", 70000, "ansible_ssh_port must be a port number 1-65535, got 70000"),
        ("ansible_port", True, "ansible_port must be a port number 1-65535, got True"),
        ("ansible_become", "y", "ansible_become must be true or false, got 'y'"),
        ("ansible_become", "maybe", "ansible_become must be true or false, got 'maybe'"),
        ("netrun_link_speed_mbps", -5, "netrun_link_speed_mbps must be a number > 0"),
        ("netrun_link_speed_mbps", "fast", "netrun_link_speed_mbps must be a number > 0"),
        ("netrun_iface", "eth0;touch /tmp/pwned", "netrun_iface must be an interface name"),
        ("netrun_iface", "averyveryverylongname", "netrun_iface must be an interface name"),
        ("netrun_data_ip", "10.0.0.1;reboot", "netrun_data_ip must be an IP address or host name"),
        ("ansible_host", "$(id)", "ansible_host must be an IP address or host name"),
        ("ansible_user", 1000, "ansible_user must be a string, got 1000; quote it"),
        ("netrun_iperf3", "iperf3 && rm -rf /", "netrun_iperf3 must be a command name or path"),
        ("netrun_remote_tmp", "tmp", "netrun_remote_tmp must be an absolute path"),
    ],
)
def test_value_errors_name_file_host_and_key(
    tmp_path: Path, key: str, value: object, expected: str
) -> None:
    path = write(tmp_path, "all:\n  hosts:\n    h1: " + json.dumps({key: value}) + "\n")
    [line] = problems(path)
    assert line.startswith(f"{path}: host 'h1': {expected}")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("ansible_port", 22),
        ("ansible_port", "2222"),
        ("ansible_become", "yes"),
        ("ansible_become", 1),
        ("netrun_iface", "enp3s0f1.100"),
        ("netrun_data_ip", "fe80::1"),
        ("netrun_data_ip", "node-1.lab.example.com"),
        ("netrun_link_speed_mbps", 2.5),
        ("netrun_iperf3", "/opt/iperf/bin/iperf3"),
        ("ansible_password", None),
    ],
)
def test_good_values_pass(tmp_path: Path, key: str, value: object) -> None:
    path = write(tmp_path, "all:\n  hosts:\n    h1: " + json.dumps({key: value}) + "\n")
    assert load_inventory(path)["h1"].vars[key] == value


def test_every_problem_reported_at_once_with_origin(tmp_path: Path) -> None:
    path = write(
        tmp_path, "lab:\n  vars: {ansible_port: 0}\n  hosts:\n    h1: {netrun_iface: 'a b'}\n"
    )
    write(tmp_path, "ansible_become: perhaps\n", "group_vars/lab.yml")
    write(tmp_path, "- not\n- a mapping\n", "host_vars/h1.yml")
    assert problems(path) == [
        f"{tmp_path}/host_vars/h1.yml: must be a mapping of variable names, got a list",
        f"{path}: group 'lab': ansible_port must be a port number 1-65535, got 0; "
        "e.g. ansible_port: 22",
        f"{path}: host 'h1': netrun_iface must be an interface name "
        "(1-15 of A-Z a-z 0-9 _ . : @ -), got 'a b'",
        f"{tmp_path}/group_vars/lab.yml: ansible_become must be true or false, got 'perhaps'",
    ]


def test_vars_file_yaml_error(tmp_path: Path) -> None:
    path = write(tmp_path, "all:\n  hosts: {h1: }\n")
    write(tmp_path, "a: b: c\n", "group_vars/all.yml")
    [line] = problems(path)
    assert line.startswith(f"{tmp_path}/group_vars/all.yml:1:5: YAML syntax error: ")


def test_refuses_big_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inventory_loader, "MAX_BYTES", 10)
    path = write(tmp_path, "all:\n  hosts: {h1: }\n")
    assert problems(path) == [
        f"{path}: is larger than 10 bytes; refusing to load it (is it the right file?)"
    ]


def test_refuses_alias_bombs(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    path = write(tmp_path, "\n".join(lines) + "\nall:\n  vars: {bomb: *a8}\n")
    [line] = problems(path)
    assert line.startswith(f"{path}: more than 1000000 YAML nodes once aliases (*name) are")


def test_hosts_as_string_is_one_host_like_ansible(tmp_path: Path) -> None:
    inv = load_inventory(CASES["single-host-string"])
    assert list(inv.hosts) == ["box1"] and inv["box1"].groups == ("lab",)


# -- patterns ----------------------------------------------------------------------------------
def test_select_errors_name_pattern_and_close_names() -> None:
    inv = load_inventory(CASES["basic"])
    with pytest.raises(InventoryError) as info:
        inv.select("web:!dbb")
    assert (
        str(info.value)
        == f"{CASES['basic']}: host pattern 'dbb' matches nothing; did you mean 'db'?"
    )
    with pytest.raises(InventoryError, match="host pattern 'loner:&db' selects no hosts"):
        inv.select("loner:&db")
    with pytest.raises(InventoryError, match=r"bad host pattern '~\(web': "):
        inv.select("~(web")
    with pytest.raises(InventoryError, match="empty host pattern"):
        inv.select(" , ")
    with pytest.raises(InventoryError, match=r"'web\[7\]' is out of range"):
        inv.select("web[7]")
    for bare in ("&", "!", "~", "web:&", "web:!"):  # found by the inventory fuzzer
        with pytest.raises(InventoryError, match="need a name after"):
            inv.select(bare)


def test_select_order_and_ip_names(tmp_path: Path) -> None:
    path = write(tmp_path, "all:\n  hosts:\n    '10.0.0.2':\n    '::1':\n    b:\n")
    inv = load_inventory(path)
    assert [h.name for h in inv.select("b,10.0.0.2")] == ["b", "10.0.0.2"]
    assert [h.name for h in inv.select("::1")] == ["::1"]
    assert [h.name for h in inv.select("!b")] == ["10.0.0.2", "::1"]


# -- netrun variables --------------------------------------------------------------------------
def test_core_vars_defaults() -> None:
    assert CORE_VARS["netrun_iperf3"] == "iperf3" and CORE_VARS["netrun_remote_tmp"] == "/tmp"
    assert {"netrun_data_ip", "netrun_iface", "netrun_link_speed_mbps"} <= set(CORE_VARS)


def test_check_netrun_vars(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "all:\n  vars: {netrun_ifce: eth1}\n"
        "  hosts:\n    h1: {netrun_parallel: 4, netrun_colour: 1}\n",
    )
    inv = load_inventory(path)
    assert check_netrun_vars(inv, ["netrun_parallel"]) == [
        f"{path}: group 'all': unknown variable 'netrun_ifce'; did you mean 'netrun_iface'?",
        f"{path}: host 'h1': unknown variable 'netrun_colour'; known: "
        + ", ".join(sorted([*CORE_VARS, "netrun_parallel"])),
    ]
    assert check_netrun_vars(inv, ["parallel", "colour", "ifce"]) == []
    assert check_netrun_vars(load_inventory(CASES["layered"]), []) == []


def test_group_name_too_long_for_a_file_has_no_group_vars(tmp_path: Path) -> None:
    """Found by the inventory fuzzer: looking up group_vars/<400 chars> raised ENAMETOOLONG."""
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "group_vars" / "all.yml").write_text("x: 1\n")
    long = "g" * 400
    text = f"all:\n  children:\n    {long}:\n      hosts: {{h1: null}}\n"
    (tmp_path / "inv.yaml").write_text(text)
    inv = load_inventory(tmp_path / "inv.yaml")
    assert inv["h1"].vars["x"] == 1
