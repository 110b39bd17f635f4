"""Load Ansible's YAML inventory format into Hosts with the variables Ansible would give them.

The merge order is Ansible's (VariableManager with default settings): inline vars of "all",
inline vars of the host's other groups (sorted by depth, ansible_group_priority, name),
group_vars/all, group_vars/<group> in the same order, inline host vars, host_vars/<host>.
Dicts are replaced, never deep-merged (hash_behaviour=replace). Every problem found is
reported at once, one line each, naming the file, the host or group and the key.
"""

from __future__ import annotations

import errno
import fnmatch
import ipaddress
import os
import re
import string
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netrun import yamlfile
from netrun.errors import InventoryError, UnknownHostError, closest, did_you_mean
from netrun.host import Host

MAX_BYTES = yamlfile.MAX_BYTES  # refuse larger inventory or vars files
MAX_HOSTS = 100_000  # hosts one range may expand to
VAR_EXTENSIONS = (".yml", ".yaml", ".json")
SECTIONS = ("hosts", "children", "vars")

#: netrun's own inventory variables and their defaults (None: no default).
CORE_VARS: dict[str, Any] = {
    "netrun_data_ip": None,  # data-plane address; defaults to the management address
    "netrun_iface": None,  # data-plane interface name
    "netrun_link_speed_mbps": None,  # nominal link speed, for efficiency figures
    "netrun_known_hosts": None,  # known_hosts file for this host's SSH key
    "netrun_iperf3": "iperf3",  # iperf3 binary name or path on the host
    "netrun_remote_tmp": "/tmp",  # scratch directory on the host
}

_PORT_KEYS = ("ansible_port", "ansible_ssh_port")
_ADDRESS_KEYS = ("ansible_host", "ansible_ssh_host", "netrun_data_ip")
_STRING_KEYS = (
    "ansible_user ansible_ssh_user ansible_ssh_private_key_file ansible_private_key_file "
    "ansible_password ansible_ssh_pass ansible_ssh_password ansible_become_method "
    "ansible_become_user ansible_become_password ansible_become_pass netrun_known_hosts"
).split()
_BOOLISH = {"yes", "no", "true", "false", "on", "off", "1", "0"}  # what Host.become reads
_IFACE = re.compile(r"^[A-Za-z0-9_.:@-]{1,15}$")
_LABEL = r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
_HOSTNAME = re.compile(rf"^(?=.{{1,253}}$){_LABEL}(?:\.{_LABEL})*\.?$")
_COMMAND = re.compile(r"^[A-Za-z0-9_./+][A-Za-z0-9_./+-]*$")  # no leading "-"
_USER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}$")
_ABS_PATH = re.compile(r"^/[A-Za-z0-9_./+-]*$")
_HOSTPORT = re.compile(r"^((?:[^:\[\]]|\[[^\]]*\])+):([0-9]+)$")
_BRACKETED_PORT = re.compile(r"^\[([0-9A-Fa-f:.]+)\]:([0-9]+)$")
_SUBSCRIPT = re.compile(r"^(.+)\[(?:(-?[0-9]+)|([0-9]+)[:-]([0-9]+)?)\]$")
_PATTERN_PART = re.compile(r"(?:[^\s:\[\]]|\[[^\]]*\])+")


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


def read_yaml(path: Path) -> Any:
    """safe_load a file with a size limit and a bound on alias expansion; errors are one line."""
    return yamlfile.load(path, InventoryError, max_bytes=MAX_BYTES)  # yamlfile's node limit


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


def _split_port(pattern: str) -> tuple[str, int | None]:
    """Separate a trailing :port from a host name, as Ansible does ([v6]:port for IPv6)."""
    for regex in (_BRACKETED_PORT, _HOSTPORT):
        match = regex.match(pattern)
        if match and (regex is _HOSTPORT or _is_ip(match.group(1))):
            return match.group(1), int(match.group(2))
    return pattern, None


def _is_ip(value: str) -> bool:
    """An IP address; an IPv6 zone (fe80::1%eth0) must be an interface name or number."""
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    _, _, zone = value.partition("%")
    return not zone or bool(_IFACE.fullmatch(zone))


def _is_address(value: Any) -> bool:
    return isinstance(value, str) and (_is_ip(value) or bool(_HOSTNAME.fullmatch(value)))


#: Variables whose values are passwords: never printed, logged or saved.
SECRET_KEYS = frozenset(
    {
        "ansible_password",
        "ansible_ssh_pass",
        "ansible_ssh_password",
        "ansible_become_password",
        "ansible_become_pass",
    }
)


def masked(values: dict[str, Any]) -> dict[str, Any]:
    """A copy of host variables with every password replaced by ****."""
    return {k: ("****" if k in SECRET_KEYS and v is not None else v) for k, v in values.items()}


def _show(value: Any, width: int = 60) -> str:
    """A value for a one-line message: repr, shortened (a hostile value can be megabytes)."""
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def _check_value(key: str, value: Any) -> str | None:
    """The problem with one variable's value and how to fix it, or None when it is fine."""
    if value is None:
        return None
    got = _show(value)
    if key in _PORT_KEYS:  # Ansible also takes the port as a string of digits
        number = value if isinstance(value, int) else str(value).strip()
        if not isinstance(number, int):  # ASCII digits only: int("²") raises
            number = int(number) if number.isascii() and number.isdigit() and len(number) < 9 else 0
        ok = not isinstance(value, bool) and 1 <= number <= 65535
        return None if ok else f"{key} must be a port number 1-65535, got {got}; e.g. {key}: 22"
    if key in _ADDRESS_KEYS:
        if _is_address(value):
            return None
        return f"{key} must be an IP address or host name, got {got}; e.g. {key}: 10.0.0.5"
    if key in _STRING_KEYS and not isinstance(value, str):
        if key in SECRET_KEYS:  # never echo a password, even a mistyped one
            return f"{key} must be a string; put the value in quotes"
        return f'{key} must be a string, got {got}; quote it: {key}: "{_show(value, 40)}"'
    if key == "ansible_become":
        ok = isinstance(value, bool) or value in (0, 1) or str(value).lower() in _BOOLISH
        return None if ok else f"ansible_become must be true or false, got {got}"
    if key == "netrun_link_speed_mbps":
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        ok = ok and 0 < value <= 10_000_000  # also refuses nan, inf and 400-digit integers
        return None if ok else f"{key} must be a number > 0 and <= 10000000, got {got}; e.g. 1000"
    if key == "netrun_iface":
        if isinstance(value, str) and _IFACE.fullmatch(value):
            return None
        return f"{key} must be an interface name (1-15 of A-Z a-z 0-9 _ . : @ -), got {got}"
    if key == "netrun_iperf3" and not (isinstance(value, str) and _COMMAND.fullmatch(value)):
        return (
            f"{key} must be a command name or path (A-Z a-z 0-9 _ . / + -, not starting with -),"
            f" got {got}"
        )
    if key == "ansible_become_user" and not _USER.fullmatch(value):
        return f"{key} must be a user name (A-Z a-z 0-9 _ . -), got {got}; e.g. {key}: root"
    if key == "netrun_remote_tmp" and not (isinstance(value, str) and _ABS_PATH.fullmatch(value)):
        return f"{key} must be an absolute path (A-Z a-z 0-9 _ . / + -), got {got}"
    return None


class _Parser:
    """Builds groups and inline vars exactly as Ansible's yaml inventory plugin does."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.groups: dict[str, Group] = {"all": Group("all"), "ungrouped": Group("ungrouped")}
        self.host_vars: dict[str, dict[str, Any]] = {}
        self.direct: dict[str, list[str]] = {}  # host -> groups that list it, in file order
        self.sources: list[VarSource] = []
        self.problems: list[str] = []
        self.add_child("all", "ungrouped")

    def problem(self, text: str) -> None:
        self.problems.append(f"{self.path}: {text}")

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

    def group(self, name: Any, data: Any) -> str | None:
        if not isinstance(name, str) or not name:
            self.problem(f"group name {name!r} must be a non-empty string; quote it")
            return None
        if data is not None and not isinstance(data, dict):
            kind = type(data).__name__
            self.problem(f"group '{name}' must be a mapping of hosts/children/vars, got a {kind}")
            return None
        self.groups.setdefault(name, Group(name))
        for key, value in (data or {}).items():
            if key not in SECTIONS:
                hint = did_you_mean(str(key), SECTIONS) or "; use hosts, children or vars"
                self.problem(f"group '{name}': unexpected key '{key}'{hint}")
                continue
            if isinstance(value, str):  # Ansible reads "hosts: web1" as {web1: null}
                value = {value: None}
            if value is None:
                continue
            if not isinstance(value, dict):
                kind = type(value).__name__
                self.problem(
                    f"group '{name}': '{key}' must be a mapping, got a {kind}; "
                    f"write one entry per line as 'name:' (a list with '-' is not accepted)"
                )
            elif key == "vars":
                self.group_vars(name, value)
            elif key == "children":
                for child, child_data in value.items():
                    child_name = self.group(child, child_data)
                    if child_name is not None:
                        self.add_child(name, child_name)
            else:
                for pattern, values in value.items():
                    self.hosts(name, pattern, values)
        return name

    def group_vars(self, name: str, values: dict[Any, Any]) -> None:
        group = self.groups[name]
        self.sources.append(VarSource(f"{self.path}: group '{name}'", values))
        for key, value in values.items():
            if key != "ansible_group_priority":
                group.vars[key] = value
            elif isinstance(value, int | str) and str(value).lstrip("-").isdigit():
                group.priority = int(value)
            else:
                self.problem(f"group '{name}': ansible_group_priority must be an integer")

    def hosts(self, group: str, pattern: Any, values: Any) -> None:
        if not isinstance(pattern, str) or not pattern:
            self.problem(f"group '{group}': host name {pattern!r} must be a string; quote it")
            return
        if values is not None and not isinstance(values, dict):
            kind = type(values).__name__
            self.problem(f"host '{pattern}' must have a mapping of vars or nothing, got a {kind}")
            return
        base, port = _split_port(pattern)
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
        self.sources.append(VarSource(f"{self.path}: host '{pattern}'", written))

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


def _vars_files(base: Path, name: str) -> list[Path]:
    """group_vars/<name>: a file with no extension, .yml, .yaml or .json, or a directory."""
    if os.sep in name or name in (".", "..") or "\0" in name:
        return []
    for ext in ("", *VAR_EXTENSIONS):
        path = base / (name + ext)
        try:
            if path.is_dir():
                return _dir_files(path)
            if path.exists():
                return [path]
        except OSError as exc:
            if exc.errno == errno.ENAMETOOLONG:  # a group name no file can have
                return []
            raise InventoryError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return []


def _dir_files(directory: Path) -> list[Path]:
    found: list[Path] = []
    for entry in sorted(os.listdir(directory)):
        path, ext = directory / entry, os.path.splitext(entry)[1]
        if entry.startswith(".") or entry.endswith("~"):
            continue
        if path.is_dir() and not ext:
            found.extend(_dir_files(path))
        elif path.is_file() and (not ext or ext in VAR_EXTENSIONS):
            found.append(path)
    return found


def _load_vars(base: Path, name: str, parser: _Parser) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for path in _vars_files(base, name):
        data = read_yaml(path)
        if not data:
            continue
        if not isinstance(data, dict):
            kind = type(data).__name__
            parser.problems.append(f"{path}: must be a mapping of variable names, got a {kind}")
            continue
        parser.sources.append(VarSource(str(path), data))
        merged |= data
    return merged


class Inventory:
    """Hosts with merged vars, groups, and Ansible host patterns over them."""

    def __init__(self, path: Path, hosts: dict[str, Host], groups: dict[str, Group]) -> None:
        self.path = path
        self.hosts = hosts
        self.groups = groups
        self.sources: list[VarSource] = []

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
    return [pattern] if _is_ip(pattern.strip()) else _PATTERN_PART.findall(pattern)


def load_inventory(path: str | Path) -> Inventory:
    """Read a YAML inventory plus the group_vars/ and host_vars/ beside it."""
    path = Path(path)
    if path.is_dir():
        raise InventoryError(f"{path}: is a directory; pass the inventory file inside it")
    if not path.exists():
        raise InventoryError(f"{path}: inventory file not found")
    data = read_yaml(path)
    if not data:
        raise InventoryError(f"{path}: inventory is empty; list groups and hosts under 'all:'")
    if not isinstance(data, dict):
        raise InventoryError(
            f"{path}: must be a YAML mapping of groups (INI inventories are not read; convert "
            "with: ansible-inventory -i FILE -y --list --export > inventory.yml)"
        )
    if data.get("plugin"):
        raise InventoryError(f"{path}: is an inventory plugin config, not a YAML inventory")
    parser = _Parser(path)
    for name, group_data in data.items():
        parser.group(name, group_data)
    if parser.problems:
        raise InventoryError(parser.problems)
    parser.reconcile()
    base = Path(os.path.realpath(path.absolute().parent))
    files = {g: _load_vars(base / "group_vars", g, parser) for g in parser.groups}
    hosts: dict[str, Host] = {}
    for name, inline in parser.host_vars.items():
        groups = sorted(
            (g for g in parser.ancestors(name) if g.name != "all"),
            key=lambda g: (g.depth, g.priority, g.name),
        )
        merged = dict(parser.groups["all"].vars)
        for group in groups:
            merged |= group.vars
        merged |= files["all"]
        for group in groups:
            merged |= files[group.name]
        merged |= inline
        merged |= _load_vars(base / "host_vars", name, parser)
        hosts[name] = Host(name, merged, tuple(sorted(g.name for g in groups)))
    for source in parser.sources:
        for key, value in source.values.items():
            problem = _check_value(str(key), value)
            if problem:
                parser.problems.append(f"{source.where}: {problem}")
    if parser.problems:
        raise InventoryError(parser.problems)
    inventory = Inventory(path, hosts, parser.groups)
    inventory.sources = parser.sources
    return inventory


def check_netrun_vars(inv: Inventory, extra: Collection[str] = ()) -> list[str]:
    """Problems for netrun_* keys that neither netrun nor the scenario's modes know."""
    known = set(CORE_VARS) | {e if e.startswith("netrun_") else f"netrun_{e}" for e in extra}
    problems = []
    for source in inv.sources:
        for key in source.values:
            if isinstance(key, str) and key.startswith("netrun_") and key not in known:
                close = closest(key[7:], [k[7:] for k in known])  # compare past "netrun_"
                hint = f"; did you mean 'netrun_{close}'?" if close else ""
                hint = hint or f"; known: {', '.join(sorted(known))}"
                problems.append(f"{source.where}: unknown variable '{key}'{hint}")
    return problems
