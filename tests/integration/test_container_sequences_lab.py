"""Consecutive container tests of one pair and mode, drawn at random
(netrun.modes.docker.savers.keep).

Tests that differ only in keys that shape the client's ``docker exec`` (protocol, streams,
direction, bitrate, length, duration, repeats, tool options) measure with the first one's
containers, and each one's pre-started client command (netrun.modes.docker.savers.client) must name
those containers, not its own. Hypothesis draws such sequences, in docker, flannel and
freeflow (the lab's stand-in), one after another or in a parallel run beside a second
sequence on another host, and each run must be ok throughout and leave nothing on the
hosts. ``make test`` fixes the seed (--hypothesis-seed); ``make fuzz`` runs the long
variant with fresh inputs.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.integration.conftest import LabHandle
from tests.integration.helpers import assert_nothing_left, entry, load_results, write_scenario
from tests.integration.test_container_modes import assert_no_containers_left, netrun

pytestmark = [pytest.mark.integration, pytest.mark.docker]

MODES = ("docker", "flannel", "freeflow")
#: Keys that shape only the client (iperf3's Tool.client_only, the run's RUN_OPTIONS, and
#: iperf3's port, which the server container does not use), with values short runs may take.
CLIENT_SIDE: dict[str, st.SearchStrategy[Any]] = {
    "protocol": st.sampled_from(["tcp", "udp"]),
    "streams": st.integers(1, 3),
    "bitrate": st.sampled_from(["50M", "200M"]),
    "length": st.sampled_from([1200, 1400]),
    "repeat": st.integers(1, 2),
    "window": st.sampled_from(["128K", "256K"]),
    "connect_timeout": st.sampled_from([3, 5]),
    "port": st.sampled_from([5301, 5302]),
}
#: The long variant's runs: many under ``make fuzz`` (it sets NETRUN_FUZZ_SEED), a few in
#: ``make test``, which runs every marker (each run takes 5-10 s on the lab).
LONG_EXAMPLES = 40 if os.environ.get("NETRUN_FUZZ_SEED") else 4
#: reverse and bidir exclude each other.
DIRECTIONS: list[dict[str, Any]] = [{}, {"reverse": True}, {"bidir": True}, {"reverse": False}]


def client_keys(mode: str) -> st.SearchStrategy[dict[str, Any]]:
    """Client-side keys for a test of ``mode``: FreeFlow's stay TCP, since its library
    carries only TCP and netrun refuses an iperf3 UDP test there (netrun.modes.freeflow.sockets)."""
    side = dict(CLIENT_SIDE)
    if mode == "freeflow":
        side["protocol"] = st.just("tcp")
    keys = st.fixed_dictionaries({}, optional=side)
    return st.builds(lambda d, way: {**d, **way}, keys, st.sampled_from(DIRECTIONS))


@st.composite
def sequences(draw: st.DrawFn, longest: int = 3) -> tuple[int, list[dict[str, Any]]]:
    """A run's width and its tests: a sequence on alpha/bravo, and in a parallel run
    maybe another on charlie alone (then the two sequences run side by side)."""
    mode = draw(st.sampled_from(MODES))
    parallel = draw(st.sampled_from([1, 2]))
    tests = [
        entry(f"p{i}", mode=mode, duration=1, **draw(client_keys(mode)))
        for i in range(draw(st.integers(2, longest)))
    ]
    if parallel > 1 and draw(st.booleans()):
        other = draw(st.sampled_from(MODES))
        alone = [
            entry(f"c{i}", "charlie", "charlie", mode=other, duration=1, allow_same_host=True,
                  **draw(client_keys(other)))
            for i in range(draw(st.integers(2, longest)))
        ]  # fmt: skip
        mixed = [t for pair in zip(tests, alone, strict=False) for t in pair]
        tests = mixed + tests[len(alone) :] + alone[len(tests) :]
    return parallel, tests


def check_run(lab: LabHandle, parallel: int, tests: list[dict[str, Any]]) -> None:
    """Every test ok; each sequence's later tests measured with its first one's
    containers; nothing left on the hosts."""
    with tempfile.TemporaryDirectory(prefix="netrun-seq-") as name:
        tmp = Path(name)
        scenario = write_scenario(tmp, tests)
        try:
            res = netrun(tmp, scenario, lab.inventory, "-p", str(parallel), timeout=240)
            doc = load_results(tmp / "out")
            errors = [(s["name"], s["error"]) for s in doc["tests"] if s["status"] != "ok"]
            # a flanneld that exited is the lab's fault, named by netrun: say why it did
            why = lab.flanneld_logs() if "flanneld" in res.stderr else ""
            assert res.returncode == 0 and not errors, (res.stderr, errors, why)
            assert doc["status"] == "finished"
            wanted = sum(t.get("repeat", 1) for t in tests)
            assert len(doc["tests"]) == wanted, [s["name"] for s in doc["tests"]]
            for sample in doc["tests"]:
                first = "p0" if sample["name"].startswith("p") else "c0"
                reused = sample["details"].get("containers_reused")
                if sample["name"] == first:
                    assert reused is None, sample["details"]
                else:
                    assert reused is not None and reused["from"] == first, sample["details"]
        finally:
            assert_no_containers_left(lab)
            assert_nothing_left(lab, tmp / "out")


#: The issue's cases: docker TCP then UDP (scenarios/docker.yaml), docker then docker with
#: four streams, flannel TCP then UDP.
ISSUE_CASES = [
    (1, [entry("p0", mode="docker", duration=1),
         entry("p1", mode="docker", duration=1, protocol="udp", bitrate="200M", length=1400)]),
    (1, [entry("p0", mode="docker", duration=1), entry("p1", mode="docker", duration=1,
                                                         streams=4)]),
    (1, [entry("p0", mode="flannel", duration=1),
         entry("p1", mode="flannel", duration=1, protocol="udp")]),
]  # fmt: skip
#: What `make fuzz` drew (seed 2280593927) once FreeFlow refused iperf3 UDP: a FreeFlow
#: sequence whose later test changes only client keys; its protocol now stays TCP.
FREEFLOW_CLIENT_KEYS = (1, [
    entry("p0", mode="freeflow", duration=1),
    entry("p1", mode="freeflow", duration=1, streams=2, bitrate="50M", length=1400),
])  # fmt: skip
#: A parallel run: a FreeFlow sequence on alpha/bravo beside a docker one on charlie.
SIDE_BY_SIDE = (2, [
    entry("p0", mode="freeflow", duration=1),
    entry("c0", "charlie", "charlie", mode="docker", duration=1, allow_same_host=True),
    entry("p1", mode="freeflow", duration=1, reverse=True, repeat=2),
    entry("c1", "charlie", "charlie", mode="docker", duration=1, allow_same_host=True,
          protocol="udp", bitrate="100M"),
])  # fmt: skip


@settings(
    max_examples=5,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@example(run=ISSUE_CASES[0])
@example(run=ISSUE_CASES[2])
@example(run=SIDE_BY_SIDE)
@given(run=sequences())
def test_consecutive_container_tests_of_one_pair_share_containers(
    docker_lab: LabHandle, run: tuple[int, list[dict[str, Any]]]
) -> None:
    check_run(docker_lab, *run)


@pytest.mark.fuzz
@settings(
    max_examples=LONG_EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@example(run=ISSUE_CASES[1])
@example(run=FREEFLOW_CLIENT_KEYS)
@given(run=sequences(longest=5))
def test_long_sequences_of_container_tests_share_containers(
    docker_lab: LabHandle, run: tuple[int, list[dict[str, Any]]]
) -> None:
    check_run(docker_lab, *run)
