"""The user guide's key table (docs/user-guide/scenario-keys.md) matches the code's options."""

from __future__ import annotations

import importlib.util
from types import ModuleType

import pytest

from tests.conftest import ROOT


def _gen_keys() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_keys", ROOT / "docs" / "gen_keys.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_key_table_is_current(monkeypatch: pytest.MonkeyPatch) -> None:
    """An option added, renamed or given a new default without `make docs-keys` fails here."""
    gen = _gen_keys()
    monkeypatch.delenv(gen.modes.EXTRA_ENV, raising=False)
    assert gen.PAGE.read_text() == gen.render(), "docs are stale: run make docs-keys"


def test_every_option_is_in_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every key a tool or mode declares appears as a row, with its owner."""
    gen = _gen_keys()
    monkeypatch.delenv(gen.modes.EXTRA_ENV, raising=False)
    text = gen.render()
    for name, tool in gen.tools().items():
        for option in tool.options:
            assert f"| `{option.name}` | " in text and f"tool `{name}`" in text
    for options in gen.modes.mode_options().values():
        for option in options:
            assert f"| `{option.name}` | " in text
