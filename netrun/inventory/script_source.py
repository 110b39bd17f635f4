"""`ansible-inventory --list` JSON, from a file or from an executable inventory script.

This is the bridge from every dynamic source: a script (NetBox, a CMDB) prints this JSON
when run with --list, and `ansible-inventory -i netbox.yml --list > lab.json` turns any
Ansible inventory plugin into a file netrun reads. Groups are read as Ansible's script
plugin reads them; without _meta.hostvars each host is asked for with --host NAME.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from netrun.errors import InventoryError
from netrun.inventory.builder import Builder

TIMEOUT = 30.0  # seconds a script may take for --list (or for each --host)
PLUGIN_TIMEOUT = 120.0  # seconds ansible-inventory may take (plugins query APIs)
MAX_OUTPUT = 64 * 1024 * 1024  # bytes of JSON a script may print


def run(path: Path, *args: str) -> Any:
    """Run an inventory script (--list unless told) with a timeout; its parsed JSON."""
    argv = [str(path.absolute()), *(args or ("--list",))]
    return run_command(argv, f"{path} {' '.join(args or ('--list',))}", TIMEOUT)


def run_plugin(path: Path) -> Any:
    """An inventory plugin config (netbox, aws_ec2, constructed...) read by Ansible itself.

    ansible-inventory runs as a command, not imported: exact Ansible semantics, no import
    cost or GPL code in netrun's process, and none of ansible-core's internal API to track.
    """
    command = ansible_inventory()
    if command is None:
        raise InventoryError(
            f"{path}: is an inventory plugin config; reading it needs Ansible:"
            " pip install 'netrun[ansible]' (or ansible-inventory -i FILE --list > lab.json)"
        )
    argv = [command, "-i", str(path), "--list"]
    # Without these Ansible prints a warning and an empty inventory for a plugin it cannot load.
    env = dict(os.environ, ANSIBLE_INVENTORY_UNPARSED_FAILED="1", ANSIBLE_NOCOLOR="1")
    env["ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED"] = "1"
    shown = f"ansible-inventory -i {path} --list"
    return run_command(argv, shown, PLUGIN_TIMEOUT, env=env, reason="'auto' plugin: ")


def ansible_inventory() -> str | None:
    """The ansible-inventory of netrun's own environment (the ansible extra), else PATH's."""
    beside = Path(sys.executable).parent / "ansible-inventory"
    return str(beside) if os.access(beside, os.X_OK) else shutil.which("ansible-inventory")


def run_command(
    argv: list[str],
    shown: str,
    timeout: float,
    env: dict[str, str] | None = None,
    reason: str = "",
) -> Any:
    """Run a command that prints --list JSON; a timeout kills it and all it started.

    On failure the message is the first stderr line holding ``reason`` (else the last line).
    """
    try:
        proc = subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # a timeout ends the script and anything it started
        )
    except OSError as exc:
        raise InventoryError(f"{shown}: cannot run: {exc.strerror or exc}") from None
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise InventoryError(
            f"{shown}: no answer within {timeout:.0f} s; run it by hand to see why"
        ) from None
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    if proc.returncode != 0:
        lines = err.decode("utf-8", "replace").strip().splitlines() or ["no message"]
        why = next((line for line in lines if reason and reason in line), lines[-1])
        why = (why.partition(reason)[2] if reason else "") or why
        raise InventoryError(f"{shown}: exited with status {proc.returncode}: {why[:200]}")
    if len(out) > MAX_OUTPUT:
        raise InventoryError(f"{shown}: printed more than {MAX_OUTPUT} bytes")
    text = out.decode("utf-8", "replace")
    if argv[-2:-1] == ["--host"] and not text.strip():
        return {}  # Ansible reads nothing from --host as no variables
    return parse(Path(shown), text)


def parse(where: Path, text: str) -> Any:
    """JSON text as a dict; anything else is one line naming the source and the line."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        first = text.strip().splitlines()[:1] or ["(nothing)"]
        raise InventoryError(
            f"{where}:{exc.lineno}: not JSON ({exc.msg}); it starts {first[0][:60]!r}"
        ) from None
    if not isinstance(data, dict):
        raise InventoryError(f"{where}: must be a JSON object of groups (ansible-inventory --list)")
    return data


def read(builder: Builder, path: Path, data: dict[str, Any]) -> None:
    """Add the groups, hosts and host vars of `--list` JSON, as Ansible's script plugin does."""
    builder.where = str(path)
    meta = data.get("_meta")
    hostvars = meta.get("hostvars") if isinstance(meta, dict) else None
    if meta is not None and not isinstance(hostvars, dict | None):
        builder.problem("_meta.hostvars must be an object of host: {vars}")
        return
    hosts: dict[str, None] = {}
    for name, group in data.items():
        if name != "_meta":
            _group(builder, name, group, hosts)
    for host in hosts:
        values = hostvars.get(host, {}) if hostvars is not None else run(path, "--host", host)
        if not isinstance(values, dict):
            builder.problem(f"host '{host}': vars must be an object, got {type(values).__name__}")
            continue
        builder.host_vars[host].update(values)
        builder.add_var_source(f"{path}: host '{host}'", values)


def _group(builder: Builder, name: str, data: Any, hosts: dict[str, None]) -> None:
    if not name:
        builder.problem("a group name must not be empty")
        return
    builder.add_group(name)
    if not isinstance(data, dict):
        data = {"hosts": data}
    elif not any(k in data for k in ("hosts", "vars", "children")):
        data = {"hosts": [name], "vars": data}  # the old "host with vars" shorthand
    names, values, children = data.get("hosts", []), data.get("vars", {}), data.get("children")
    if not isinstance(names, list) or not all(isinstance(h, str) and h for h in names):
        builder.problem(f"group '{name}': hosts must be a list of host names")
        return
    for host in names:
        hosts[host] = None
        builder.add_host(name, host)
    if not isinstance(values, dict):
        builder.problem(f"group '{name}': vars must be an object")
    elif values:
        builder.group_vars(name, values)
    if children is not None and not isinstance(children, list):
        builder.problem(f"group '{name}': children must be a list of group names")
    for child in children or []:
        if isinstance(child, str) and child:
            builder.add_group(child)
            builder.add_child(name, child)
