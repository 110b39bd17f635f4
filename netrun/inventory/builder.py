"""The groups and hosts every inventory source adds to, with Ansible's rules for combining them.

Each source (YAML, INI, JSON, script) only parses; this builder applies what they have in
common: host ranges and ports, children loops, group priority, "ungrouped" and group depth.
Several sources add to one builder in order, as Ansible's InventoryData does.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from typing import Any

from netrun.inventory.values import split_port

MAX_HOSTS = 100_000  # hosts one range may expand to


@dataclass
class Group:
    """One inventory group: direct hosts and children, its inline vars, and its parents."""

    name: str
    hosts: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)
    vars: dict[str, Any] = field(default_factory=dict)
    parents: list[str] = field(default_factory=list)
    priority: int = 100
    depth: int = 0


@dataclass(frozen=True)
class VarSource:
    """Variables as written in one place, kept so problems can name where they came from."""

    where: str  # e.g. "lab.yaml: host 'web1'" or "group_vars/web.yml"
    values: dict[str, Any]


def expand_hosts(pattern: str) -> list[str]:
    """Expand Ansible host ranges: node[01:04], [a:c], steps [1:10:2], several per name."""
    if "[" not in pattern:
        return [pattern]
    head, _, rest = pattern.partition("[")
    body, closed, tail = rest.partition("]")
    bounds = body.split(":")
    if not closed or len(bounds) not in (2, 3):
        raise ValueError("a range must be [begin:end] or [begin:end:step]")
    beg, end = bounds[0] or "0", bounds[1]
    step = bounds[2] if len(bounds) == 3 else "1"
    if not end or not step.isdigit() or int(step) < 1:
        raise ValueError("a range needs an end and a step of 1 or more")
    width = len(beg) if beg.startswith("0") and len(beg) > 1 else 0
    if width and len(end) != width:
        raise ValueError("zero-padded range bounds must have the same length")
    letters = string.ascii_letters
    seq: list[str]
    if len(beg) == 1 and len(end) == 1 and beg in letters and end in letters:
        if letters.index(beg) > letters.index(end):
            raise ValueError("range begin must not be after its end")
        seq = list(letters[letters.index(beg) : letters.index(end) + 1 : int(step)])
    elif beg.isdigit() and end.isdigit():
        numbers = range(int(beg), int(end) + 1, int(step))
        if len(numbers) > MAX_HOSTS:
            raise ValueError(f"range expands to more than {MAX_HOSTS} hosts")
        seq = [str(n).zfill(width) for n in numbers]
    else:
        raise ValueError("range bounds must be numbers or single letters")
    tails = expand_hosts(tail)
    if len(seq) * len(tails) > MAX_HOSTS:
        raise ValueError(f"ranges expand to more than {MAX_HOSTS} hosts")
    return [head + item + end_part for item in seq for end_part in tails]


class Builder:
    """Groups, inline host vars and where each was written; problems are collected, not raised."""

    def __init__(self) -> None:
        self.where = ""  # the file (and line) being read, for messages
        self.groups: dict[str, Group] = {"all": Group("all"), "ungrouped": Group("ungrouped")}
        self.host_vars: dict[str, dict[str, Any]] = {}
        self.direct: dict[str, list[str]] = {}  # host -> groups that list it, in file order
        self.sources: list[VarSource] = []
        self.problems: list[str] = []
        self.add_child("all", "ungrouped")

    def problem(self, text: str) -> None:
        self.problems.append(f"{self.where}: {text}")

    def add_group(self, name: str) -> Group:
        return self.groups.setdefault(name, Group(name))

    def add_child(self, parent: str, child: str) -> None:
        if child == parent or parent in self.descendants(child):
            self.problem(f"group '{child}' under '{parent}' makes a loop of children; remove one")
            return
        if child not in self.groups[parent].children:
            self.groups[parent].children.append(child)
        if parent not in self.groups[child].parents:
            self.groups[child].parents.append(parent)

    def descendants(self, name: str) -> set[str]:
        found, todo = set(), [name]
        while todo:
            for child in self.groups[todo.pop()].children:
                if child not in found:
                    found.add(child)
                    todo.append(child)
        return found

    def group_vars(self, name: str, values: dict[Any, Any]) -> None:
        group = self.add_group(name)
        self.sources.append(VarSource(f"{self.where}: group '{name}'", values))
        for key, value in values.items():
            if key != "ansible_group_priority":
                group.vars[key] = value
            elif isinstance(value, int | str) and str(value).lstrip("-").isdigit():
                group.priority = int(value)
            else:
                self.problem(f"group '{name}': ansible_group_priority must be an integer")

    def add_host(self, group: str, name: str) -> None:
        """Put one host, named exactly (no range or port), in a group."""
        self.add_group(group)
        self.host_vars.setdefault(name, {})
        if group not in self.direct.setdefault(name, []):
            self.direct[name].append(group)
            self.groups[group].hosts.append(name)

    def add_var_source(self, where: str, values: dict[str, Any]) -> None:
        self.sources.append(VarSource(where, values))

    def hosts(self, group: str, pattern: Any, values: Any) -> None:
        """Add a host entry (a name, a range, name:port) to a group, with its inline vars."""
        self.add_group(group)
        if not isinstance(pattern, str) or not pattern:
            self.problem(f"group '{group}': host name {pattern!r} must be a string; quote it")
            return
        if values is not None and not isinstance(values, dict):
            kind = type(values).__name__
            self.problem(f"host '{pattern}' must have a mapping of vars or nothing, got a {kind}")
            return
        base, port = split_port(pattern)
        try:
            names = expand_hosts(base)
        except ValueError as exc:
            self.problem(f"group '{group}': host range '{pattern}': {exc}")
            return
        for name in names:
            if name not in self.host_vars:
                self.host_vars[name] = {} if port is None else {"ansible_port": port}
            if group not in self.direct.setdefault(name, []):
                self.direct[name].append(group)
                self.groups[group].hosts.append(name)
            self.host_vars[name].update(values or {})
        written = ({} if port is None else {"ansible_port": port}) | (values or {})
        self.sources.append(VarSource(f"{self.where}: host '{pattern}'", written))

    def reconcile(self) -> None:
        """Ansible's rules after parsing: everything under all, ungrouped, group depths."""
        for name, group in list(self.groups.items()):
            if name != "all" and not group.parents:
                self.add_child("all", name)
        ungrouped = self.groups["ungrouped"].hosts
        for host, direct in self.direct.items():
            if set(direct) - {"all", "ungrouped"}:
                if "ungrouped" in direct:
                    ungrouped.remove(host)
                    direct.remove("ungrouped")
            elif "ungrouped" not in direct:
                ungrouped.append(host)
                direct.append("ungrouped")
        depths: dict[str, int] = {}

        def depth(name: str) -> int:
            if name not in depths:
                parents = self.groups[name].parents
                depths[name] = max((depth(p) + 1 for p in parents), default=0)
            return depths[name]

        for group in self.groups.values():
            group.depth = depth(group.name)

    def ancestors(self, host: str) -> list[Group]:
        found, todo = set(), list(self.direct[host])
        while todo:
            name = todo.pop()
            if name not in found:
                found.add(name)
                todo.extend(self.groups[name].parents)
        return [self.groups[name] for name in found]
