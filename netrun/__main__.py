"""``python -m netrun`` is the same as the ``netrun`` command."""

from __future__ import annotations

from netrun.cli.main import entry

entry()
