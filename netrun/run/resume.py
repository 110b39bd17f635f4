"""Whether a run may be resumed with this scenario and these options.

``--resume`` finishes an interrupted run in its folder: the tests that passed are kept and
the rest run now. If the options changed in between (``-e duration=2``, an edited file),
one results.json would mix figures measured two ways under one run id, and a baseline
comparison would trust it. So every test the earlier run recorded must have the same
mode, hosts and options now; what differs is named, so the user can drop it or start anew.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from netrun.core.spec import TestSpec


def _plain(value: Any) -> Any:
    """A value as results.json holds it (tuples become lists), for comparing."""
    return json.loads(json.dumps(value, default=str))


def differences(previous: Mapping[str, Any], tests: Iterable[TestSpec]) -> list[str]:
    """``KEY now NEW (was OLD) in TEST, ...`` for each option, mode or host that changed."""
    recorded: dict[str, dict[str, Any]] = {}
    for sample in previous.get("tests", []):
        if isinstance(sample, dict) and isinstance(sample.get("name"), str):
            recorded.setdefault(sample["name"], sample)
    changed: dict[tuple[str, str, str], list[str]] = {}
    for test in tests:
        old = recorded.get(test.name)
        if old is None:
            continue
        now: dict[str, Any] = {"mode": test.mode, **dict(test.hosts_by_role)}
        then: dict[str, Any] = {"mode": old.get("mode")}
        then.update(old.get("hosts") or {"server": old.get("server"), "client": old.get("client")})
        now.update(test.options)
        then.update(old.get("options") or {})
        for key in dict.fromkeys([*now, *then]):
            a, b = _plain(now.get(key)), _plain(then.get(key))
            if a != b:
                changed.setdefault((key, json.dumps(a), json.dumps(b)), []).append(test.name)
    return [
        f"{key} is {new} now, was {was} (in {', '.join(names)})"
        for (key, new, was), names in changed.items()
    ]
