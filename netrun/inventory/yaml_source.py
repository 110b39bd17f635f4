"""Ansible's YAML inventory format: groups with hosts, children and vars."""

from __future__ import annotations

from typing import Any

from netrun.errors import did_you_mean
from netrun.inventory.builder import Builder

SECTIONS = ("hosts", "children", "vars")


def read(builder: Builder, where: str, data: dict[Any, Any]) -> None:
    """Add every top-level group of a parsed YAML inventory, as the yaml plugin does."""
    builder.where = where
    for name, group_data in data.items():
        _group(builder, name, group_data)


def _group(builder: Builder, name: Any, data: Any) -> str | None:
    if not isinstance(name, str) or not name:
        builder.problem(f"group name {name!r} must be a non-empty string; quote it")
        return None
    if data is not None and not isinstance(data, dict):
        kind = type(data).__name__
        builder.problem(f"group '{name}' must be a mapping of hosts/children/vars, got a {kind}")
        return None
    builder.add_group(name)
    for key, value in (data or {}).items():
        if key not in SECTIONS:
            hint = did_you_mean(str(key), SECTIONS) or "; use hosts, children or vars"
            builder.problem(f"group '{name}': unexpected key '{key}'{hint}")
            continue
        if isinstance(value, str):  # Ansible reads "hosts: web1" as {web1: null}
            value = {value: None}
        if value is None:
            continue
        if not isinstance(value, dict):
            kind = type(value).__name__
            builder.problem(
                f"group '{name}': '{key}' must be a mapping, got a {kind}; "
                f"write one entry per line as 'name:' (a list with '-' is not accepted)"
            )
        elif key == "vars":
            builder.group_vars(name, value)
        elif key == "children":
            for child, child_data in value.items():
                child_name = _group(builder, child, child_data)
                if child_name is not None:
                    builder.add_child(name, child_name)
        else:
            for pattern, values in value.items():
                builder.hosts(name, pattern, values)
    return name
