"""Rewrite every case's expected commands from the current code: ``make cases``
(``python -m tests.unit.modes.regen [NAME...]``).

Then read the diff (``git diff tests/unit/modes/cases``): a changed sequence is a change of
what netrun does on the hosts. Each case is recorded twice; a case whose two recordings
differ is not written (a sequence must not depend on timing).
"""

from __future__ import annotations

import sys

from tests.unit.modes.sequences import case_files, load, record, save


def main(names: list[str]) -> int:
    unstable = []
    for path in case_files():
        if names and path.stem not in names:
            continue
        case = load(path)
        expected = record(case)
        if record(case) != expected:
            unstable.append(path.stem)
            continue
        changed = case.get("expected") != expected
        case["expected"] = expected
        save(path, case)
        print(f"{path.stem}: {'CHANGED' if changed else 'same'}")
    for name in unstable:
        print(f"{name}: two recordings differ; not written", file=sys.stderr)
    return 1 if unstable else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
