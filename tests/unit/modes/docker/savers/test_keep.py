"""Which container tests share containers (netrun.modes.docker.savers.keep), and how the
one-round-trip start scripts are read back (netrun.modes.docker.launch,
netrun.modes.freeflow.router)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netrun.core.spec import TestSpec
from netrun.errors import ModeError
from netrun.hosts.host import Host
from netrun.modes import get_mode
from netrun.modes.base import Order, RunContext
from netrun.modes.docker import launch
from netrun.modes.docker.mode import DockerMode
from netrun.modes.docker.savers import client as armedexec
from netrun.modes.docker.savers import keep
from netrun.modes.freeflow import router
from netrun.scenario.loader import load_scenario
from netrun.tools import get_tool
from netrun.tools.savers.model import NONE


def scenario_tests(tmp_path: Path, body: str) -> list[TestSpec]:
    scen = tmp_path / "s.yaml"
    scen.write_text(
        "defaults: {server: alpha, client: bravo, duration: 1}\ntests:\n" + body,
    )
    return list(load_scenario(scen, hosts=["alpha", "bravo", "charlie"]).tests)


def test_client_only_keys_share_containers_and_others_do_not(tmp_path: Path) -> None:
    tests = scenario_tests(
        tmp_path,
        "  - {name: s, mode: docker, sweep: {bitrate: [1M, 2M], reverse: [false, true]}}\n"
        "  - {name: i, mode: docker, image: other/iperf3}\n"
        "  - {name: f, mode: freeflow}\n"
        "  - {name: c, mode: docker, client: charlie}\n"
        "  - {name: m, mode: docker, sweep: {mtu: [1400, 1500]}}\n",
    )
    keys = {t.name: keep.key(t, get_tool(t.tool)) for t in tests}
    shared = {keys[t.name] for t in tests if t.name.startswith("s[")}
    assert len(shared) == 1 and None not in shared
    others = [keys["i"], keys["f"], keys["c"]]
    assert len({*shared, *others}) == 4
    assert keys["m[mtu=1400]"] is None and keys["m[mtu=1500]"] is None


def test_the_next_test_on_the_hosts_and_the_shared_time_bound(tmp_path: Path) -> None:
    tests = scenario_tests(
        tmp_path,
        "  - {name: a, mode: docker, sweep: {bitrate: [1M, 2M]}}\n"
        "  - {name: other, mode: docker, server: charlie, client: charlie, "
        "allow_same_host: true}\n"
        "  - {name: b, mode: baremetal}\n",
    )
    ctx = RunContext("1a2b", order=Order(tests))
    first, second, _other, last = tests
    assert keep.next_test(ctx, first) is second
    ctx.order.finished.add(first.name)
    assert keep.next_test(ctx, second) is last  # "other" touches neither host
    assert keep.next_test(ctx, last) is None
    assert keep.shared_bound(ctx, first, get_tool(first.tool)) == first.deadline + second.deadline
    assert keep.shared_bound(RunContext("1a2b"), first, get_tool(first.tool)) == first.deadline


def test_sections_and_image_ids() -> None:
    out = "NETRUN_RECORDED\n==netrun:image0==\nsha256:ab\n==netrun:image1==\n\n==netrun:run==\n0"
    found = launch.sections(out)
    assert found[""] == launch.RECORDED
    assert launch.image_ids(found, ["a", "b"]) == {"a": "sha256:ab", "b": None}
    assert found["run"] == "0"


def plan() -> router.RouterPlan:
    return router.RouterPlan(
        docker="docker", name="freeflow", library="/freeflow/libfsocket.so",
        argv=["docker", "run", "-d", "--name", "freeflow", "img"], image_id=None,
        image="img", timeout=30, vnet=None, subnet_env="/run/flannel/subnet.env",
        network="bridge",
        scratch="/tmp/netrun-abc/router-state.out",
    )  # fmt: skip


def test_router_outcomes() -> None:
    ok = {"router": "reused id1 sha256:1 5e5e", "vnet": "10.244.0.0/16", "standin": "{}"}
    state = router.read(ok, plan(), "alpha", "1a2b")
    assert state.record["reused"] is True and state.vnet == "10.244.0.0/16"
    mine = dict(ok, router="reused id1 sha256:1 1a2b", standin='{"netrun.standin": "1"}')
    state = router.read(mine, plan(), "alpha", "1a2b")
    assert state.record["reused"] is False and state.standin
    started = router.read(dict(ok, router="started id2 sha256:2"), plan(), "alpha", "1a2b")
    assert started.record == {"name": "freeflow", "image": "img", "reused": False,
                              "id": "id2", "image_id": "sha256:2"}  # fmt: skip
    with pytest.raises(ModeError, match="exists but is not a healthy router"):
        router.read({"router": "foreign"}, plan(), "alpha", "1a2b")
    with pytest.raises(ModeError, match=r"exited at once; .*\(logs: boom\)"):
        router.read({"router": "exited", "routerlogs": "boom"}, plan(), "alpha", "1a2b")
    with pytest.raises(ModeError, match=r"did not publish /freeflow/libfsocket\.so within 30s"):
        router.read({"router": "timeout"}, plan(), "alpha", "1a2b")
    with pytest.raises(ModeError, match="cannot tell the overlay CIDR"):
        router.read(dict(ok, vnet=""), plan(), "alpha", "1a2b")


def test_kept_containers_another_test_cannot_adopt_go_on_its_hosts_next_command(
    tmp_path: Path,
) -> None:
    from netrun.hosts.host import Host

    tests = scenario_tests(
        tmp_path,
        "  - {name: a, mode: docker}\n  - {name: b, mode: docker, image: other/iperf3}\n",
    )
    ctx = RunContext("1a2b", order=Order(tests))
    alpha, bravo = Host("alpha"), Host("bravo")
    k = keep.key(tests[0], get_tool(tests[0].tool))
    assert k is not None
    started = [(alpha, "netrun-1a2b-t0-server"), (bravo, "netrun-1a2b-t0-client")]
    docker = {"alpha": "docker", "bravo": "docker"}
    keep.park(
        ctx, keep.Kept(k, started, ctx.ledger.scope("kept"), "10.0.0.2", {}, {}, docker=docker)
    )
    assert (
        keep.take(ctx, tests[1], get_tool(tests[1].tool)) is None and ctx.family(keep.Parked) == {}
    )
    assert alpha._deferred == ["docker rm -f -v netrun-1a2b-t0-server"]
    assert bravo._deferred == ["docker rm -f -v netrun-1a2b-t0-client"]


def test_the_preamble_stops_for_a_missing_image_or_pull_always(tmp_path: Path) -> None:
    import subprocess

    docker = tmp_path / "docker"  # answers like an engine that has image "here" only
    docker.write_text(
        '#!/bin/sh\ncase "$1" in version) echo \'{"Server": {}}\';; '
        'image) [ "$5" = here ] && echo sha256:1 || exit 1;; esac\n'
    )
    docker.chmod(0o755)

    def run(images: list[str], pull: bool = False) -> dict[str, str]:
        script = launch.preamble(None, str(docker), images, str(tmp_path / "w"), pull=pull)
        out = subprocess.run(["sh", "-c", script + "echo ==netrun:body=="], capture_output=True,
                             text=True, check=True).stdout  # fmt: skip
        return launch.sections(out)

    assert "body" in run(["here"]) and "stop" not in run(["here"])
    assert "stop" in run(["here", "gone"]) and "body" not in run(["here", "gone"])
    assert "stop" in run(["here"], pull=True)


class Armed:
    """What a started command is to the armed client: abandoned unless fired."""

    def __init__(self, line: str) -> None:
        self.line, self.started, self.abandoned = line, 0.0, False

    def abandon(self) -> None:
        self.abandoned = True


class Starts:
    """A transport that only records the commands started on it (the armed clients')."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def start(self, argv: list[str] | str) -> Armed:
        self.lines.append(str(argv))
        return Armed(str(argv))


#: Keys that shape only the client's docker exec, with values a scenario may give them.
CLIENT_SIDE = {
    "protocol": ["tcp", "udp"],
    "streams": [1, 4],
    "bitrate": ["100M", None],
    "length": [1200, None],
    "duration": [1, 2],
    "repeat": [1, 2],
}
#: The directions a test may send in (reverse and bidir exclude each other).
DIRECTIONS: list[dict[str, object]] = [{}, {"reverse": True}, {"bidir": True}, {"reverse": False}]


def client_side_tests() -> st.SearchStrategy[list[dict[str, object]]]:
    keys = st.fixed_dictionaries(
        {}, optional={k: st.sampled_from(v) for k, v in CLIENT_SIDE.items()}
    )
    one = st.builds(lambda d, way: {**d, **way}, keys, st.sampled_from(DIRECTIONS))
    return st.lists(one, min_size=2, max_size=5)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(mode=st.sampled_from(["docker", "flannel", "freeflow"]), drawn=client_side_tests())
def test_the_armed_clients_name_the_containers_the_keep_decision_chose(
    tmp_path: Path, mode: str, drawn: list[dict[str, object]]
) -> None:
    """Consecutive tests of one pair and mode that differ only in client-side keys: each
    adopts the first one's containers, and every client command armed for it (before its
    first repeat, and between repeats) runs in the container the decision named."""
    if mode == "freeflow":  # its setup refuses UDP (netrun.modes.freeflow.sockets)
        drawn = [{**d, "protocol": "tcp"} if d.get("protocol") == "udp" else d for d in drawn]
    body = "".join(
        "  - " + json.dumps({"name": f"t{i}", "mode": mode, **opts}) + "\n"
        for i, opts in enumerate(drawn)
    )
    tests = scenario_tests(tmp_path, body)
    assert len({keep.key(t, get_tool(t.tool)) for t in tests}) == 1
    ctx = RunContext("1a2b", order=Order(tests))
    alpha, bravo = Host("alpha"), Host("bravo")
    bravo.transport = Starts()  # type: ignore[assignment]
    first_names: dict[str, str] = {}
    for i, test in enumerate(tests):
        m = get_mode(test.mode)(test, alpha, bravo, ctx, {"server": alpha, "client": bravo})
        assert isinstance(m, DockerMode)
        if i == 0:  # its containers start (as setup would, without a host to start them on)
            first_names = dict(m.names)
            m.started = [(alpha, m.names["server"]), (bravo, m.names["client"])]
            m.server_ip, m.healthy = "10.244.0.2", True
        else:
            m.setup()  # adopts: no container starts, so no host command but the armed one
            assert m.names == first_names
            assert m.details["containers_reused"] == {"from": "t0", "tests": i + 1}
        for repeat in range(1, test.repeat + 1):
            armedexec.arm_next(m, repeat)
        armed = {k: v for k, v in ctx.ahead.armed.items() if k[1].startswith(f"{test.tag}c")}
        assert len(armed) == test.repeat
        for (host, tag), cmd in armed.items():
            assert host == "bravo" and tag.endswith(":" + first_names["client"])
            assert cmd.container == first_names["client"]
            # docker exec [FreeFlow's -e LD_PRELOAD=...] CONTAINER iperf3
            assert f" {first_names['client']} iperf3" in cmd.started.line
        commands = [cmd.started for cmd in armed.values()]
        m.teardown()  # hands them on (the next test wants the same ones)
        assert all(c.abandoned for c in commands) and not ctx.ahead.armed
    lines = bravo.transport.lines  # type: ignore[union-attr]
    assert lines and all(first_names["client"] in line for line in lines)
    assert all(f"{t.tag}-client" not in line for t in tests[1:] for line in lines)


class Unsaved(DockerMode):
    """A container mode that allows no round-trip saver (netrun.tools.savers.model)."""

    savers = NONE


def test_a_container_mode_that_allows_no_saver_keeps_and_arms_nothing(tmp_path: Path) -> None:
    """The docker savers ask the mode's declaration (Mode.savers): two tests that would
    share containers, in a mode that allows neither keeping them nor arming a client."""
    tests = scenario_tests(tmp_path, "  - {name: a, mode: docker, sweep: {bitrate: [1M, 2M]}}\n")
    assert len({keep.key(t, get_tool(t.tool)) for t in tests}) == 1
    ctx = RunContext("1a2b", order=Order(tests))
    alpha, bravo = Host("alpha"), Host("bravo")
    bravo.transport = Starts()  # type: ignore[assignment]
    for cls in (Unsaved, DockerMode):
        ctx.order.finished.clear()
        m = cls(tests[0], alpha, bravo, ctx, {"server": alpha, "client": bravo})
        m.started = [(alpha, m.names["server"]), (bravo, m.names["client"])]
        m.server_ip, m.healthy = "10.244.0.2", True
        armedexec.arm_next(m, 1)
        assert bool(ctx.ahead.armed) is (cls is DockerMode)
        m.teardown()  # the next test wants the same containers: kept only if allowed
        assert bool(ctx.family(keep.Parked)) is (cls is DockerMode)
        ctx.family(keep.Parked).clear()


def test_the_keys_that_never_shape_a_container_are_the_runs_and_the_tools() -> None:
    """The run's keys (RUN_OPTIONS) and the tool's client-only options (Tool.client_only)
    are what a kept container ignores: for iperf3 the same keys as before they moved out
    of this module (the port too: its server listens on its own, Tool.resident_port)."""
    assert {"repeat", "timeout", "tolerances", "allow_same_host"} == keep.RUN_KEYS
    assert keep.RUN_KEYS | get_tool("iperf3").client_only == {
        "repeat", "timeout", "tolerances", "tolerance", "loss_tolerance", "jitter_tolerance",
        "retransmits_tolerance", "duration", "protocol", "streams", "reverse", "bidir",
        "omit", "bitrate", "length", "connect_timeout", "window", "busy_retries",
        "busy_backoff", "allow_same_host",
    }  # fmt: skip
