"""``python -m netrun`` is the same as the ``netrun`` command."""

from __future__ import annotations

import sys

from netrun.cli.main import main

sys.exit(main())
