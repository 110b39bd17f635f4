"""``sweep:``: its combinations, the names they give the tests, and the checks of its keys."""

from __future__ import annotations

from typing import Any

from netrun.core.options import GENERAL_OPTIONS
from netrun.scenario import sweep
from netrun.scenario.fanwidth import NOT_FAN
from netrun.tools.iperf3.tool import OPTIONS

TABLE = {o.name: o for o in (*GENERAL_OPTIONS, *OPTIONS)}


def checked(raw: Any, **own: Any) -> tuple[dict[str, list[Any]], list[str]]:
    said: list[str] = []

    def add(pre: str, text: str) -> None:
        said.append(f"{pre}: {text}")

    def unknown(pre: str, key: Any, valid: Any) -> None:
        said.append(f"{pre}: unknown {key}")

    good = sweep.check("t", {"sweep": raw}, TABLE, own, {}, False, add, unknown)
    return good, said


def test_combinations_name_each_test_in_key_order() -> None:
    combos = sweep.combinations({"streams": [1, 4], "bitrate": ["1G"]})
    assert combos == [
        ({"streams": 1, "bitrate": "1G"}, "streams=1,bitrate=1G"),
        ({"streams": 4, "bitrate": "1G"}, "streams=4,bitrate=1G"),
    ]
    assert sweep.combinations({}) == [({}, "")]  # nothing swept: the one test
    assert sweep.name_part("a b/c") == "a_b_c"


def test_check_collects_each_problem() -> None:
    assert checked({"streams": [1, 2]}) == ({"streams": [1, 2]}, [])
    good, said = checked({"streams": [1, 1], "nope": [1], "length": 3}, streams=2)
    assert good == {} and said == [
        "t: 'streams' is set both in the test and in its sweep",
        "t: sweep: unknown nope",
        "t: sweep: length must be a non-empty list, got 3",
    ]
    _, said = checked({"clients": [1]})  # a test that is no fan has no width
    assert said == ["t: sweep: " + NOT_FAN]
