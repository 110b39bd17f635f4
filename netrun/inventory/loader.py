"""Load one or more inventory sources (files, scripts, directories) into one Inventory.

Formats are told apart as Ansible's plugin chain does: an executable file is a script run
with --list; .yml/.yaml is YAML; .json is `ansible-inventory --list` output; .ini is INI;
any other file is YAML when it reads as a YAML mapping, else INI. A directory is every file
in it (sorted, skipping what Ansible's INVENTORY_IGNORE_EXTS skips). Sources merge in order.
A YAML file with `plugin:` (netbox, aws_ec2, constructed...) is read by ansible-inventory.

The variable merge is Ansible's (VariableManager with default settings): inline vars of
"all", inline vars of the host's other groups (sorted by depth, ansible_group_priority,
name), group_vars/all, group_vars/<group> in the same order, inline host vars, and
host_vars/<host>; group_vars/ and host_vars/ are read beside each source, source by
source. Dicts are replaced, never deep-merged (hash_behaviour=replace).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from netrun.core import yamlfile
from netrun.errors import InventoryError
from netrun.hosts.host import Host
from netrun.inventory import ini_source, script_source, yaml_source
from netrun.inventory.builder import Builder, VarSource
from netrun.inventory.model import Inventory
from netrun.inventory.values import check_value

MAX_BYTES = yamlfile.MAX_BYTES  # refuse larger inventory or vars files
VAR_EXTENSIONS = (".yml", ".yaml", ".json")
YAML_EXTENSIONS = (".yml", ".yaml")
#: What Ansible skips in an inventory directory (INVENTORY_IGNORE_EXTS and _PATTERNS).
IGNORED_EXTENSIONS: tuple[str, ...] = (".pyc", ".pyo", ".swp", ".bak", "~", ".rpm", ".md")
IGNORED_EXTENSIONS += (".txt", ".rst", ".orig", ".cfg", ".retry")
IGNORED_DIRS = ("group_vars", "host_vars")


def read_yaml(path: Path) -> Any:
    """safe_load a file with a size limit and a bound on alias expansion; errors are one line."""
    return yamlfile.load(path, InventoryError, max_bytes=MAX_BYTES)  # yamlfile's node limit


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


def _load_vars(base: Path, name: str, builder: Builder) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for path in _vars_files(base, name):
        data = read_yaml(path)
        if not data:
            continue
        if not isinstance(data, dict):
            kind = type(data).__name__
            builder.problems.append(f"{path}: must be a mapping of variable names, got a {kind}")
            continue
        builder.sources.append(VarSource(str(path), data))
        merged |= data
    return merged


def _source_files(path: Path) -> list[Path]:
    """The inventory files one -i names: the file, or a directory's files in sorted order."""
    if not path.exists():
        raise InventoryError(f"{path}: inventory file not found")
    if not path.is_dir():
        return [path]
    found: list[Path] = []
    for entry in sorted(os.listdir(path)):
        child = path / entry
        if entry.startswith(".") or entry.endswith(IGNORED_EXTENSIONS):
            continue
        if child.is_dir():
            if entry not in IGNORED_DIRS:
                found.extend(_source_files(child))
        else:
            found.append(child)
    return found


def _read_source(builder: Builder, path: Path) -> None:
    """Parse one inventory file into the builder, choosing the format as Ansible would."""
    suffix = path.suffix.lower()
    if suffix not in YAML_EXTENSIONS and _is_program(path):
        script_source.read(builder, path, script_source.run(path))
    elif suffix == ".json":
        script_source.read(builder, path, script_source.parse(path, _read_text(path)))
    elif suffix == ".ini":
        ini_source.read(builder, path, _read_text(path))
    elif suffix in YAML_EXTENSIONS:
        _read_yaml_source(builder, path, read_yaml(path))
    else:
        text = _read_text(path)
        try:
            data = read_yaml(path)
        except InventoryError:
            data = None
        if isinstance(data, dict):
            _read_yaml_source(builder, path, data)
        else:
            ini_source.read(builder, path, text)


def _is_program(path: Path) -> bool:
    """Executable and a program (#! or ELF). An INI file on a filesystem that marks every
    file executable (vfat, some mounts) is still read as INI."""
    if not os.access(path, os.X_OK):
        return False
    try:
        with path.open("rb") as file:
            head = file.read(4)
    except OSError:
        return False
    return head.startswith(b"#!") or head == b"\x7fELF"


def _read_text(path: Path) -> str:
    try:
        if path.stat().st_size > MAX_BYTES:
            raise InventoryError(f"{path}: larger than {MAX_BYTES} bytes; is it an inventory?")
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InventoryError(f"{path}: is not UTF-8 text") from None
    except OSError as exc:
        raise InventoryError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _read_yaml_source(builder: Builder, path: Path, data: Any) -> None:
    if not data:
        raise InventoryError(f"{path}: inventory is empty; list groups and hosts under 'all:'")
    if not isinstance(data, dict):
        raise InventoryError(f"{path}: must be a YAML mapping of groups, e.g. 'all: {{hosts: …}}'")
    if data.get("plugin"):  # netbox, aws_ec2, constructed...: Ansible reads it
        script_source.read(builder, path, script_source.run_plugin(path))
        return
    yaml_source.read(builder, str(path), data)


def load_inventory(paths: str | Path | Sequence[str | Path]) -> Inventory:
    """Read inventory sources (like repeated -i) plus the group_vars/ and host_vars/ beside them."""
    sources = [Path(paths)] if isinstance(paths, str | Path) else [Path(p) for p in paths]
    if not sources:
        raise InventoryError("no inventory given; pass -i FILE")
    builder = Builder()
    bases: list[Path] = []
    for source in sources:
        files = _source_files(source)
        if not files:
            raise InventoryError(f"{source}: directory holds no inventory file")
        for path in files:
            _read_source(builder, path)
        base = source if source.is_dir() else source.absolute().parent
        real = Path(os.path.realpath(base))
        if real not in bases:
            bases.append(real)
    if builder.problems:
        raise InventoryError(builder.problems)
    builder.reconcile()
    hosts = _merge_vars(builder, bases)
    for var_source in builder.sources:
        for key, value in var_source.values.items():
            problem = check_value(str(key), value)
            if problem:
                builder.problems.append(f"{var_source.where}: {problem}")
    if builder.problems:
        raise InventoryError(builder.problems)
    inventory = Inventory(sources[0], hosts, builder.groups)
    inventory.sources = builder.sources
    inventory.paths = tuple(sources)
    return inventory


def _merge_vars(builder: Builder, bases: Iterable[Path]) -> dict[str, Host]:
    """Every host's variables in Ansible's precedence order."""
    bases = list(bases)
    files = {
        (base, g): _load_vars(base / "group_vars", g, builder)
        for base in bases
        for g in builder.groups
    }
    hosts: dict[str, Host] = {}
    for name, inline in builder.host_vars.items():
        groups = sorted(
            (g for g in builder.ancestors(name) if g.name != "all"),
            key=lambda g: (g.depth, g.priority, g.name),
        )
        merged = dict(builder.groups["all"].vars)
        for group in groups:
            merged |= group.vars
        for base in bases:
            merged |= files[base, "all"]
        for base in bases:
            for group in groups:
                merged |= files[base, group.name]
        merged |= inline
        for base in bases:
            merged |= _load_vars(base / "host_vars", name, builder)
        hosts[name] = Host(name, merged, tuple(sorted(g.name for g in groups)))
    return hosts
