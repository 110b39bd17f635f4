"""The registry of modes. A new mode is a module here plus one entry in ``_MODULES``."""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from netrun.modes.base import Mode, Option

#: mode name -> module that defines it (imported lazily: docker's SDK is slow to import).
_MODULES: dict[str, str] = {
    "baremetal": "netrun.modes.baremetal",
    "docker": "netrun.modes.docker",
    "flannel": "netrun.modes.flannel",
    "freeflow": "netrun.modes.freeflow",
}


def get_mode(name: str) -> type[Mode]:
    """The Mode class for a name; KeyError when there is none."""
    module = importlib.import_module(_MODULES[name])
    cls: type[Mode] = module.MODE
    return cls


def mode_options() -> dict[str, Sequence[Option]]:
    """Each mode's own scenario keys, for validation."""
    return {name: get_mode(name).options for name in _MODULES}


def all_options() -> list[Option]:
    """Every mode-specific option, once each (for inventory netrun_<name> checks)."""
    seen: dict[str, Option] = {}
    for options in mode_options().values():
        for opt in options:
            seen.setdefault(opt.name, opt)
    return list(seen.values())
