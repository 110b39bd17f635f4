"""Ansible's INI inventory format, parsed as ansible-core's ini plugin does.

[group] lists hosts (ranges, name:port, inline key=value), [group:vars] sets group vars and
[group:children] names subgroups, which may be declared further down. Every value goes
through ast.literal_eval as in Ansible (so 8080 is an int and "yes" a string); a tuple or set
becomes a list. Problems name the file and line.
"""

from __future__ import annotations

import ast
import re
import shlex
import warnings
from pathlib import Path
from typing import Any

from netrun.inventory.builder import Builder

COMMENT_MARKERS = "#;"
_SECTION = re.compile(r"^\[([^:\]\s]+)(?::(\w+))?\]\s*(?:#.*)?$")
_GROUP_NAME = re.compile(r"^([^:\]\s]+)\s*(?:#.*)?$")


def parse_value(text: str) -> Any:
    """A value as Ansible's ini plugin reads it: a Python literal if it is one, else the text."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text
    return _plain(value)


def _plain(value: Any) -> Any:
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if value is ...:
        return "..."
    if isinstance(value, complex):
        return str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return value


class _Pending:
    """A group named before it is declared: as a child (with its parents) or by :vars."""

    def __init__(self, line: int, state: str, parents: list[str]) -> None:
        self.line, self.state, self.parents = line, state, parents


def read(builder: Builder, path: Path, text: str) -> None:
    """Add the groups, hosts and vars of one INI inventory to the builder."""
    pending: dict[str, _Pending] = {}
    group, state = "ungrouped", "hosts"
    for number, raw in enumerate(text.splitlines(), start=1):
        builder.where = f"{path}:{number}"
        line = raw.strip()
        if not line or line[0] in COMMENT_MARKERS:
            continue
        section = _SECTION.match(line)
        if section:
            group, state = section.group(1), section.group(2) or "hosts"
            if state not in ("hosts", "children", "vars"):
                builder.problem(f"section [{group}:{state}] has unknown type {state!r}")
                state = "skip"
                continue
            if group not in builder.groups:
                if state == "vars" and group not in pending:
                    pending[group] = _Pending(number, state, [])
                builder.add_group(group)
            if group in pending and state != "vars":
                _declared(builder, group, pending)
            continue
        if line.startswith("[") and line.endswith("]"):
            builder.problem(
                f"invalid section {line!r}: no spaces or other characters in a section name"
            )
            state = "skip"
        elif state == "hosts":
            _host_line(builder, group, line)
        elif state == "vars":
            key, eq, value = line.partition("=")
            if not eq:
                builder.problem(f"expected key=value in [{group}:vars], got {line!r}")
            else:
                builder.group_vars(group, {key.strip(): parse_value(value.strip())})
        elif state == "children":
            match = _GROUP_NAME.match(line)
            if not match:
                builder.problem(f"expected a group name in [{group}:children], got {line!r}")
            elif match.group(1) in builder.groups:
                builder.add_child(group, match.group(1))
            else:
                entry = pending.setdefault(match.group(1), _Pending(number, "children", []))
                entry.parents.append(group)
    for name, entry in pending.items():
        builder.where = f"{path}:{entry.line}"
        if entry.state == "vars":
            builder.problem(f"section [{name}:vars] is for group '{name}', which is not defined")
        else:
            builder.problem(
                f"section [{entry.parents[-1]}:children] names group '{name}', which is not"
                f" defined; add a [{name}] section"
            )


def _declared(builder: Builder, group: str, pending: dict[str, _Pending]) -> None:
    """A pending group got its section: attach it to the parents that named it."""
    entry = pending.pop(group)
    if entry.state != "children":
        return
    for parent in entry.parents:
        builder.add_group(parent)
        builder.add_child(parent, group)
        if parent in pending and pending[parent].state == "children":
            _declared(builder, parent, pending)


def _host_line(builder: Builder, group: str, line: str) -> None:
    try:
        tokens = shlex.split(line, comments=True)
    except ValueError as exc:
        builder.problem(f"cannot read host line {line!r}: {exc}")
        return
    if not tokens:
        return
    pattern, values = tokens[0], {}
    if pattern.endswith(":") or pattern == "---":
        hint = " ('---' starts a YAML file: name it .yml)" if pattern == "---" else ""
        builder.problem(f"invalid host {pattern!r}{hint}")
        return
    for token in tokens[1:]:
        key, eq, value = token.partition("=")
        if not eq:
            builder.problem(f"host '{pattern}': expected key=value, got {token!r}")
            return
        values[key] = parse_value(value)
    builder.hosts(group, pattern, values)
