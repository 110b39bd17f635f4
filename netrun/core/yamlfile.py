"""Reading a YAML file the user handed us, safely: every loader of user YAML goes through here.

``yaml.safe_load`` alone builds no objects from tags, but it still reads a 50 MB file,
decodes garbage, builds a billion-laughs document (aliases make it cheap to parse and huge
to walk) and overflows the stack on deep nesting. ``load`` bounds each of those and turns
every failure into one line naming the file and the fix, raised as the caller's InputError.

The pure-Python SafeLoader is used on purpose: libyaml's composer (CSafeLoader) recurses in
C and crashes the interpreter on deeply nested input, where Python's raises RecursionError.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from netrun.core.yamlhint import plain
from netrun.errors import InputError

#: Larger files are refused before reading: a scenario or inventory is a few KB (10,000
#: hosts with a few variables fit in 1 MB), and 1 MB of YAML already takes seconds and
#: ~50 MB of memory to load with the pure-Python loader.
MAX_BYTES = 1024 * 1024
#: Nodes once aliases are expanded: more is an alias bomb (or a document far too large).
MAX_NODES = 1_000_000


class SafeLoader(yaml.SafeLoader):
    """yaml.SafeLoader (safe_load's semantics); the composed graph is checked before use."""


def _float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> float:
    """A YAML float, with -0.0 read as 0.0: a signed zero is no setting of its own, and it
    would reach iperf3's argv and the reports as "-0"."""
    return loader.construct_yaml_float(node) + 0.0


SafeLoader.add_constructor("tag:yaml.org,2002:float", _float)


class UniqueKeyLoader(SafeLoader):
    """SafeLoader that refuses duplicate keys instead of silently keeping the last one."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:  # before merge keys (<<) are flattened in
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, str | int | float | bool):
                continue  # unhashable keys are refused by the base class
            if key in seen:
                shown = repr(key) if isinstance(key, str) else str(key)
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {shown[:60]}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


class _SelfAlias(Exception):
    """A YAML alias that contains itself."""


def expanded_size(node: yaml.Node, limit: int) -> int:
    """Nodes in the document once aliases are expanded, counted in time linear in the
    distinct nodes (each shared node is counted once and remembered); stops past ``limit``."""
    memo: dict[int, int] = {}
    active: set[int] = set()

    def size(node: yaml.Node) -> int:
        if id(node) in memo:
            return memo[id(node)]
        if id(node) in active:
            raise _SelfAlias
        active.add(id(node))
        children: list[yaml.Node] = []
        if isinstance(node, yaml.SequenceNode):
            children = node.value
        elif isinstance(node, yaml.MappingNode):
            children = [part for pair in node.value for part in pair]
        total = 1
        for child in children:
            total += size(child)
            if total > limit:
                break
        active.discard(id(node))
        memo[id(node)] = total
        return total

    return size(node)


def read_text(path: Path, error: type[InputError], max_bytes: int = MAX_BYTES) -> str:
    """The file as UTF-8 text, at most ``max_bytes``; anything else is one plain error."""
    limit = f"{max_bytes // 2**20} MB" if max_bytes >= 2**20 else f"{max_bytes} bytes"
    too_big = f"{path}: is larger than {limit}; refusing to load it (is it the right file?)"
    try:
        if path.is_dir():
            raise error(f"{path}: is a directory; pass a YAML file")
        if path.is_file() and path.stat().st_size > max_bytes:
            raise error(too_big)
        with path.open("rb") as handle:  # bounded read: a FIFO or device has no size
            data = handle.read(max_bytes + 1)
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise error(too_big)
    nul = data.find(b"\0")
    if nul >= 0:
        raise error(
            f"{path}: is not a YAML text file (binary data: a NUL byte at offset {nul});"
            " pass the YAML file itself"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(
            f"{path}: is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start});"
            " save it as UTF-8"
        ) from None


def load(
    path: Path,
    error: type[InputError],
    *,
    unique_keys: bool = False,
    max_bytes: int = MAX_BYTES,
    max_nodes: int = MAX_NODES,
) -> Any:
    """The file's single YAML document, as yaml.safe_load would build it (None if empty).

    Raises ``error`` (an InputError subclass) with one line naming the file, and the line and
    column where YAML can tell, for every unreadable, oversized or hostile file.
    """
    text = read_text(path, error, max_bytes)
    loader: SafeLoader | None = None
    try:
        loader = (UniqueKeyLoader if unique_keys else SafeLoader)(text)
        node = loader.get_single_node()
        if node is None:
            return None
        if expanded_size(node, max_nodes) > max_nodes:
            raise error(
                f"{path}: more than {max_nodes} YAML nodes once aliases (*name) are expanded;"
                " refusing to load it: remove repeated aliases, or split the file"
            )
        return loader.construct_document(node)
    except yaml.reader.ReaderError as exc:
        what = f"#x{exc.character:04x}" if isinstance(exc.character, int) else "a byte"
        raise error(
            f"{path}: YAML error: unacceptable character {what} at offset {exc.position}"
            f" ({exc.reason}); remove it"
        ) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)

        line = exc.problem_mark.line if exc.problem_mark else None
        problem = plain(str(exc.problem or exc), exc.context, text, line)
        raise error(f"{where}: YAML syntax error: {problem}") from None
    except yaml.YAMLError as exc:
        raise error(f"{path}: YAML error: {' '.join(str(exc).split())}") from None
    except RecursionError:
        raise error(f"{path}: YAML is nested too deeply; flatten it") from None
    except _SelfAlias:
        raise error(
            f"{path}: a YAML alias contains itself; refusing to load it: an alias (*name)"
            " must not sit inside its own anchor (&name)"
        ) from None
    except (ValueError, OverflowError) as exc:  # e.g. a date like 2024-13-45
        raise error(f"{path}: bad YAML value: {exc}; quote it to keep it a string") from None
    finally:
        if loader is not None:
            loader.dispose()
