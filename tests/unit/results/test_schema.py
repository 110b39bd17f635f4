"""netrun.results.schema on hosts' context: a real run's passes, an old run's (none) passes,
a hand-edited one of the wrong shape is one line naming the field."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from netrun.errors import NetrunError
from netrun.results import schema
from tests.conftest import RESULTS_FIXTURES


def load(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((RESULTS_FIXTURES / name / "results.json").read_text())
    return doc


def test_real_runs_with_and_without_context_pass() -> None:
    for name in ("context-a", "context-b", "baremetal-3"):
        schema.check(load(name), Path(name))


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda c: c.update(kernel=["6.1"]), "hosts.alpha.context.kernel"),
        (lambda c: c.update(sysctl="cubic"), "hosts.alpha.context.sysctl"),
        (lambda c: c["offloads"].update(gro=1), "hosts.alpha.context.offloads"),
        (lambda c: c.update(unavailable=[]), "hosts.alpha.context.unavailable"),
    ],
)
def test_a_context_of_the_wrong_shape_is_named(edit: Any, field: str) -> None:
    doc = copy.deepcopy(load("context-a"))
    edit(doc["hosts"]["alpha"]["context"])
    with pytest.raises(NetrunError, match=rf"^x.json: {field} has the wrong type"):
        schema.check(doc, Path("x.json"))


def test_a_context_that_is_not_a_mapping_is_named() -> None:
    doc = copy.deepcopy(load("context-a"))
    doc["hosts"]["alpha"]["context"] = "6.1.0"
    with pytest.raises(NetrunError, match=r"hosts.alpha.context has the wrong type"):
        schema.check(doc, Path("x.json"))
