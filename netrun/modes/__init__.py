"""The registry of modes. A new mode is a module here plus one entry in ``_MODULES``.

May import: netrun.tools and below (the modes import netrun.modes.base, never a mode
of another family unless they build on it: flannel and freeflow on docker).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence

from netrun.core.options import Option
from netrun.core.programs import Program
from netrun.modes.base import Mode

#: mode name -> module that defines it (imported lazily: docker's SDK is slow to import).
_MODULES: dict[str, str] = {
    "baremetal": "netrun.modes.baremetal.mode",
    "docker": "netrun.modes.docker.mode",
    "flannel": "netrun.modes.docker.flannel",
    "freeflow": "netrun.modes.freeflow.mode",
    "kubernetes": "netrun.modes.kubernetes.mode",
    "turn": "netrun.modes.turn.mode",
}


#: Extra modes from outside netrun, ``name=module,name=module``: how the tests add modes
#: of their own (a three-role mode) without shipping them.
EXTRA_ENV = "NETRUN_EXTRA_MODES"


def _modules() -> dict[str, str]:
    extra = os.environ.get(EXTRA_ENV, "")
    pairs = [p.partition("=") for p in extra.split(",") if "=" in p]
    return {**_MODULES, **{name.strip(): mod.strip() for name, _, mod in pairs}}


def get_mode(name: str) -> type[Mode]:
    """The Mode class for a name; KeyError when there is none."""
    module = importlib.import_module(_modules()[name])
    cls: type[Mode] = module.MODE
    return cls


def mode_options() -> dict[str, Sequence[Option]]:
    """Each mode's own scenario keys, for validation."""
    return {name: get_mode(name).options for name in _modules()}


def mode_roles() -> dict[str, tuple[str, ...]]:
    """Each mode's roles (server, client, and e.g. relay), for validation."""
    return {name: get_mode(name).roles for name in _modules()}


def mode_tools() -> dict[str, tuple[str, ...] | None]:
    """Each mode's tools (None: any tool that runs in it), for validation."""
    return {name: get_mode(name).tools for name in _modules()}


def mode_programs() -> list[Program]:
    """What installs each mode's own programs (Mode.installs), for netrun.run.needs."""
    return [p for name in _modules() for p in get_mode(name).installs]


def all_options() -> list[Option]:
    """Every mode-specific option, once each (for inventory netrun_<name> checks)."""
    seen: dict[str, Option] = {}
    for options in mode_options().values():
        for opt in options:
            seen.setdefault(opt.name, opt)
    return list(seen.values())


def scoped_options(common: Sequence[Option] = ()) -> dict[str, Option]:
    """``<mode>_<option>`` -> its option, for every inventory-settable option of every mode
    (``common``: the options every test has): the names netrun_<mode>_<option> may take."""
    found: dict[str, Option] = {}
    for mode, options in mode_options().items():
        for opt in (*common, *options):
            if opt.from_inventory and f"{mode}_{opt.name}" not in found:
                found[f"{mode}_{opt.name}"] = opt
    return found
