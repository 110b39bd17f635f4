"""The resolved inventory: hosts with merged vars, groups, and Ansible host patterns over them."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

from netrun.errors import InventoryError, UnknownHostError, did_you_mean
from netrun.hosts.host import Host
from netrun.inventory import values
from netrun.inventory.builder import Group, VarSource
from netrun.inventory.values import is_ip

_SUBSCRIPT = re.compile(r"^(.+)\[(?:(-?[0-9]+)|([0-9]+)[:-]([0-9]+)?)\]$")
_PATTERN_PART = re.compile(r"(?:[^\s:\[\]]|\[[^\]]*\])+")
MAX_LISTED = 5  # host names a "resolves to several hosts" message shows


class Inventory:
    """Hosts with merged vars, groups, and Ansible host patterns over them."""

    def __init__(self, path: Path, hosts: dict[str, Host], groups: dict[str, Group]) -> None:
        self.path = path
        self.hosts = hosts
        self.groups = groups
        self.sources: list[VarSource] = []
        self.paths: tuple[Path, ...] = (path,)  # every -i source, in merge order

    def get(self, name: str) -> Host:
        if name not in self.hosts:
            hint = did_you_mean(name, self.hosts)
            raise UnknownHostError(f"{self.path}: unknown host '{name}'{hint}")
        return self.hosts[name]

    def __getitem__(self, name: str) -> Host:
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self.hosts

    def __iter__(self) -> Iterator[Host]:
        return iter(self.hosts.values())

    def __len__(self) -> int:
        return len(self.hosts)

    def members(self, group: str) -> list[str]:
        """Hosts of a group and of its descendants, in inventory order."""
        if group == "all":
            return list(self.hosts)
        names, todo, seen = set(), [group], set()
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                names.update(self.groups[name].hosts)
                todo.extend(self.groups[name].children)
        return [h for h in self.hosts if h in names]

    def select(self, pattern: str) -> list[Host]:
        """Hosts matching an Ansible pattern: names, globs, ~regex, a:b, a,b, a:&b, a:!b."""
        parts = [p.strip() for chunk in pattern.split(",") for p in _split_pattern(chunk)]
        parts = [p for p in parts if p]
        if not parts:
            raise InventoryError(f"{self.path}: empty host pattern; use 'all' or a group name")
        plain = [p for p in parts if p[0] not in "!&"] or ["all"]
        chosen = {name: None for p in plain for name in self._match(p)}
        for part in (p for p in parts if p[0] == "&"):
            keep = set(self._match(part[1:]))
            chosen = {name: None for name in chosen if name in keep}
        for part in (p for p in parts if p[0] == "!"):
            drop = set(self._match(part[1:]))
            chosen = {name: None for name in chosen if name not in drop}
        if not chosen:
            raise InventoryError(f"{self.path}: host pattern '{pattern}' selects no hosts")
        return [self.hosts[name] for name in chosen]

    def _match(self, pattern: str) -> list[str]:
        """Host names for one pattern part; a part matching nothing is an error (typo guard)."""
        if pattern in ("", "~"):  # '&', '!' or '~' alone
            raise InventoryError(
                f"{self.path}: incomplete host pattern part; '&', '!' and '~' need a name after"
            )
        subscript = None
        match = None if pattern.startswith("~") else _SUBSCRIPT.match(pattern)
        if match:
            pattern, index, start, end = match.groups()
            subscript = (int(index), None) if index else (int(start), int(end or -1))
        if pattern in self.hosts:
            found = [pattern]
        else:
            try:
                regex = re.compile(pattern[1:] if pattern[0] == "~" else fnmatch.translate(pattern))
            except re.error as exc:
                raise InventoryError(f"{self.path}: bad host pattern '{pattern}': {exc}") from None
            groups = [g for g in self.groups if regex.match(g)]
            names = {h for g in groups for h in self.members(g)}
            if not groups or pattern[0] == "~" or any(c in pattern for c in ".?*["):
                names.update(h for h in self.hosts if regex.match(h))
            found = [h for h in self.hosts if h in names]
        if not found:
            hint = did_you_mean(pattern, [*self.groups, *self.hosts])
            raise InventoryError(f"{self.path}: host pattern '{pattern}' matches nothing{hint}")
        if subscript is None:
            return found
        start, end = subscript
        if end is None:
            if not -len(found) <= start < len(found):
                raise InventoryError(f"{self.path}: '{pattern}[{start}]' is out of range")
            return [found[start]]
        return found[start : len(found) if end == -1 else end + 1]

    def to_ansible_list(self) -> dict[str, Any]:
        """The same shape as `ansible-inventory --list` (without its _meta.profile)."""
        out: dict[str, Any] = {"_meta": {"hostvars": {}}}
        out["_meta"]["hostvars"] = {n: dict(h.vars) for n, h in self.hosts.items() if h.vars}
        seen: set[str] = set()

        def add(name: str) -> None:
            group, entry = self.groups[name], {}
            if name != "all" and group.hosts:
                entry["hosts"] = list(group.hosts)
            if group.children:
                entry["children"] = list(group.children)
            if entry:
                out[name] = entry
            for child in group.children:
                if child not in seen:
                    seen.add(child)
                    add(child)

        add("all")
        return out


def _split_pattern(pattern: str) -> list[str]:
    """Split a:b:!c on colons, but keep an IPv6 address and [x:y] subscripts whole."""
    return [pattern] if is_ip(pattern.strip()) else _PATTERN_PART.findall(pattern)


def resolve_role(inventory: Inventory, value: str, limit: str | None = None) -> Host:
    """The one host a scenario role (server: servers) names: a host, a group or a pattern.

    -l applies first, so `-l rack2` picks rack2's member of a group (a group with no member
    within -l resolves as without it, and its test is skipped like one naming a host outside
    -l). Several hosts or none is an InventoryError saying what the pattern resolved to
    (several hosts are for the generated pairs of a mesh, not for one role).
    """
    if value in inventory.hosts:
        return inventory.hosts[value]  # a named host: -l decides later whether its test runs
    try:
        found = inventory.select(value)
    except InventoryError as exc:  # its text names the inventory file: say it about the role
        if not any(c in value for c in ":,&!~*?[") and value not in inventory.groups:
            hint = did_you_mean(value, [*inventory.groups, *inventory.hosts])
            raise InventoryError(f"{value!r} is not in the inventory{hint}") from None
        reason = str(exc).partition(": ")[2] or str(exc)
        raise InventoryError(f"{value!r} resolves to no host: {reason}") from None
    if limit:
        allowed = {h.name for h in inventory.select(limit)}
        # None within -l: resolve as without it; like a named host, the test is then skipped.
        found = [h for h in found if h.name in allowed] or found
    if len(found) > 1:
        raise InventoryError(
            f"'{value}' resolves to {len(found)} hosts ({_names(found)}); a role needs exactly"
            f" one: name a host, a one-host group, or a pattern such as {value}[0]"
        )
    return found[0]


def _names(hosts: list[Host]) -> str:
    shown = ", ".join(h.name for h in hosts[:MAX_LISTED])
    return shown + (f", ... ({len(hosts)} in all)" if len(hosts) > MAX_LISTED else "")


def check_netrun_vars(inv: Inventory, extra: Collection[str] = ()) -> list[str]:
    """Problems for netrun_* keys that neither netrun nor the scenario's modes know."""
    return values.check_netrun_vars(inv.sources, extra)
