"""Ansible inventories in every form Ansible reads them, resolved into Hosts.

YAML, INI, `ansible-inventory --list` JSON, executable inventory scripts and directories of
them, merged in Ansible's order with Ansible's variable precedence (see loader). Every
problem is reported at once, one line each, naming the file (and line), host or group, key.
"""

from __future__ import annotations

from collections.abc import Collection

from netrun.inventory import values
from netrun.inventory.builder import MAX_HOSTS, Group, VarSource, expand_hosts
from netrun.inventory.loader import MAX_BYTES, load_inventory, read_yaml
from netrun.inventory.model import Inventory, resolve_role
from netrun.inventory.values import CORE_VARS, SECRET_KEYS, masked

__all__ = [
    "CORE_VARS",
    "MAX_BYTES",
    "MAX_HOSTS",
    "SECRET_KEYS",
    "Group",
    "Inventory",
    "VarSource",
    "check_netrun_vars",
    "expand_hosts",
    "load_inventory",
    "masked",
    "read_yaml",
    "resolve_role",
]


def check_netrun_vars(inv: Inventory, extra: Collection[str] = ()) -> list[str]:
    """Problems for netrun_* keys that neither netrun nor the scenario's modes know."""
    return values.check_netrun_vars(inv.sources, extra)
