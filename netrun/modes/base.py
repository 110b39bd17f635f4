"""What a mode is: its options, and setup / measure / teardown around one test.

A mode is registered by name; the core never imports a mode by hand, so a new mode is a
new module plus one line in netrun/modes/__init__.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: Types YAML may hand us for an option; ``int`` values are accepted where floats are.
Kind = type | tuple[type, ...]


@dataclass(frozen=True)
class Option:
    """One scenario key: its accepted types, default and a check for its value.

    ``check`` returns a problem text (e.g. "must be > 0") or None when the value is fine.
    Options with ``from_inventory`` may also be set as the inventory variable
    ``netrun_<name>`` on the hosts involved (the test and defaults win over inventory).
    """

    name: str
    kind: Kind
    default: Any
    help: str
    choices: tuple[Any, ...] | None = None
    check: Callable[[Any], str | None] | None = None
    nullable: bool = False
    from_inventory: bool = False
