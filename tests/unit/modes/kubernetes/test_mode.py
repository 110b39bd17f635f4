"""mode: kubernetes through the recording transport, answered by kubectl's real output
(tests/fixtures/capture_kubernetes.py): what runs on which host, in which order, and the
one line of each failure."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from netrun.errors import ModeError
from netrun.hosts.host import Host
from netrun.modes import get_mode
from netrun.modes.base import RunContext
from netrun.modes.kubernetes import manifest
from netrun.modes.kubernetes.mode import Kubernetes
from netrun.scenario.loader import load_scenario
from netrun.testing.recording import RecordingTransport, Reply
from netrun.tools import get_tool
from tests.conftest import IPERF3_FIXTURES, KUBERNETES_FIXTURES, PING_FIXTURES

KUBECTL = "/opt/k8s/kubectl"
CONFIG = "/lab/admin.kubeconfig"


def fixture(name: str) -> Reply:
    base = KUBERNETES_FIXTURES / name
    return Reply(
        Path(f"{base}.stdout").read_text(),
        Path(f"{base}.stderr").read_text(),
        int(Path(f"{base}.rc").read_text()),
    )


def placed(
    tmp_path: Path, extra: str = "", tool: str = "iperf3"
) -> tuple[Any, dict[str, Host], list[tuple[str, str]]]:
    path = tmp_path / "s.yaml"
    path.write_text(
        "tests:\n  - {name: t, mode: kubernetes, tool: " + tool
        + ", server: bravo, client: alpha" + extra + "}\n"
    )  # fmt: skip
    (test,) = load_scenario(path, hosts=["alpha", "bravo"]).tests
    log: list[tuple[str, str]] = []
    hosts = {}
    for name in ("alpha", "bravo"):
        host = Host(name, {"netrun_kubectl": KUBECTL, "netrun_kubeconfig": CONFIG})
        host.transport = RecordingTransport(name, log)  # type: ignore[assignment]
        hosts[name] = host
    ctx = RunContext(run_id="cap1d2e3")
    return get_mode("kubernetes")(test, hosts["bravo"], hosts["alpha"], ctx), hosts, log


def answer(host: Host, pattern: str, reply: Reply) -> None:
    host.transport.answer(pattern, reply)  # type: ignore[union-attr]


def ready(hosts: dict[str, Host]) -> None:
    for host in hosts.values():
        answer(host, "auth can-i", fixture("can_i_yes"))
        answer(host, "get pods", fixture("pods"))
        answer(host, "NETRUN_EXEC", fixture("exec_ok"))


def test_setup_asks_records_creates_waits_and_checks_exec(tmp_path: Path) -> None:
    m, hosts, log = placed(tmp_path)
    ready(hosts)
    m.setup()
    kube = ["/opt/k8s/kubectl", "--kubeconfig", CONFIG]
    lines = [line for _, line in log]
    assert lines[0] == " ".join([*kube, "auth", "can-i", "create", "namespaces"])
    apply = lines[1]  # the undo record first, then the namespace and pods in one apply
    undo = "delete namespace -l netrun=1,netrun.run_id=cap1d2e3,netrun.test=t0"
    assert apply.index(undo) < apply.index("apply -f -")
    assert lines[2] == " ".join([*kube, "get", "pods", "-n", "netrun-cap1d2e3-t0", "-o", "json"])
    assert [host for host, _ in log[3:]] == ["bravo", "alpha"]  # each end's exec, from its host
    assert all("exec -n netrun-cap1d2e3-t0" in line for line in lines[3:])
    kube_details = m.details["kubernetes"]
    assert kube_details["placement"] == "cross-node"
    assert kube_details["nodes"] == {"server": "bravo", "client": "alpha"}
    assert kube_details["pods"]["server"]["node"] == "bravo"
    server_ip = kube_details["pods"]["server"]["ip"]
    assert m.end("server").address == m.end("server").bind == server_ip
    assert kube_details["pod_mtu"]["server"] == int(fixture("exec_ok").stdout.split()[0])


def test_iperf3_runs_through_the_pods(tmp_path: Path) -> None:
    m, hosts, log = placed(tmp_path, ", duration: 2")
    ready(hosts)
    m.setup()
    del log[:]
    answer(hosts["bravo"], "grep -Eq", Reply("NETRUN_READY\n"))
    client = (IPERF3_FIXTURES / "3.12" / "tcp.json").read_text()
    answer(hosts["alpha"], "iperf3 -c", Reply(client))
    found = get_tool("iperf3").measure(m, 1)
    assert found.metrics["throughput_bps"] > 0
    server_ip = m.details["kubernetes"]["pods"]["server"]["ip"]
    # both nodes, before and after: the devices and the kernel counters in one command
    reads = [c for c in log if c[1].startswith("cat /proc/net/dev; echo ==netrun:counters")]
    assert [c[0] for c in reads] == ["alpha", "bravo", "alpha", "bravo"]
    (start, wait, run, stop) = [c for c in log if c not in reads]
    assert start[0] == "bravo" and "exec -i -n netrun-cap1d2e3-t0 server --" in start[1]
    assert f"iperf3 -s -B {server_ip} -p 5201 -1" in start[1] and "mkfifo" in start[1]
    shown = m.preview()[0][1].split(" -- ", 1)[1].split("  (")[0]  # --check-only's line
    assert f" sh {shown} " in start[1]
    assert wait[0] == "bravo" and "exec -n netrun-cap1d2e3-t0 server -- grep -Eq" in wait[1]
    assert (
        run[0] == "alpha"
        and f"exec -n netrun-cap1d2e3-t0 client -- iperf3 -c {server_ip}" in run[1]
    )
    assert stop[0] == "bravo"  # the server's kubectl stopped by its pid file on its host
    assert found.details["kubernetes"]["placement"] == "cross-node"


def test_ping_runs_through_the_pods_unchanged(tmp_path: Path) -> None:
    m, hosts, log = placed(tmp_path, ", count: 2", tool="ping")
    ready(hosts)
    m.setup()
    server_ip = m.details["kubernetes"]["pods"]["server"]["ip"]
    del log[:]
    ping = (PING_FIXTURES / "ok.stdout").read_text()
    answer(hosts["alpha"], "ping -n", Reply(ping.replace("10.209.0.2", server_ip)))
    found = get_tool("ping").measure(m, 1)
    ((host, line),) = log
    assert host == "alpha" and f"client -- ping -n -c 2 -i 1 -s 56 -W 2 {server_ip}" in line
    assert found.details["target"] == server_ip


def test_a_missing_image_is_one_line_naming_pod_node_and_fix(tmp_path: Path) -> None:
    m, _, _ = placed(tmp_path)
    lost = manifest.pod_states(fixture("pods").stdout)["lost"]  # its image is on no node
    assert not lost.ready
    line = m.not_ready(m.pod_spec("client", False, 300), lost.why, None)
    assert line.startswith(
        "test t: pod netrun-cap1d2e3-t0/client (the client end) cannot become Ready on node "
        "alpha: ErrImageNeverPull"
    )
    assert (
        "ErrImageNeverPull" in line
        and "put image docker.io/netrun-lab/k8s-tools:latest on node alpha" in line
    )


def test_both_pods_stuck_are_named_in_one_line_each_on_its_node(tmp_path: Path) -> None:
    """Both ends lack the image: whichever the kubelets report first, the one line names
    every pod stuck at that look, each with its own node (not the first pod's alone)."""
    m, hosts, _ = placed(tmp_path)
    doc = json.loads(fixture("pods").stdout)
    lost = next(i for i in doc["items"] if i["metadata"]["name"] == "lost")
    for item in doc["items"]:
        if item["metadata"]["name"] in ("server", "client"):
            item["status"] = copy.deepcopy(lost["status"])
    for host in hosts.values():
        answer(host, "auth can-i", fixture("can_i_yes"))
        answer(host, "get pods", Reply(json.dumps(doc), "", 0))
    with pytest.raises(ModeError) as caught:
        m.setup()
    line = str(caught.value)
    assert line.startswith("test t: pod netrun-cap1d2e3-t0/server (the server end) cannot")
    assert "on node bravo: ErrImageNeverPull" in line and "on node alpha: ErrImageNeverPull" in line
    assert line.count("test t:") == 1 and "\n" not in line


@pytest.mark.parametrize(
    ("name", "words"),
    [
        (
            "no_kubeconfig",
            "the Kubernetes API is unreachable from bravo (kubeconfig /lab/admin.kubeconfig)",
        ),
        ("refused", "the Kubernetes API is unreachable from bravo"),
        ("can_i_node", "the cluster refused to create namespaces"),
    ],
)
def test_an_api_it_cannot_use_is_one_line_and_nothing_recorded(
    tmp_path: Path, name: str, words: str
) -> None:
    m, hosts, log = placed(tmp_path)
    answer(hosts["bravo"], "auth can-i", fixture(name))
    with pytest.raises(ModeError) as err:
        m.setup()
    assert str(err.value).startswith("bravo: ") and words in str(err.value)
    assert "\n" not in str(err.value)
    assert len(log) == 1  # no undo record, nothing created


def test_exec_forbidden_is_one_line(tmp_path: Path) -> None:
    m, hosts, _ = placed(tmp_path)
    ready(hosts)
    answer(hosts["bravo"], "NETRUN_EXEC", fixture("exec_forbidden"))
    hosts["bravo"].transport.rules.reverse()  # type: ignore[union-attr]
    with pytest.raises(ModeError) as err:
        m.setup()
    text = str(err.value)
    assert text.startswith("bravo: the cluster refused to exec into pod netrun-cap1d2e3-t0/server")
    assert "; grant the user of that kubeconfig get on pods (a Role or" in text
    assert "\n" not in text


def test_rbac_denying_exec_names_the_pod_and_the_grant(tmp_path: Path) -> None:
    """A user RBAC lets create and read the pods but not exec into them (the API's own
    answer, captured as a user impersonated by the lab's admin)."""
    m, hosts, _ = placed(tmp_path)
    ready(hosts)
    answer(hosts["bravo"], "NETRUN_EXEC", fixture("exec_denied"))
    hosts["bravo"].transport.rules.reverse()  # type: ignore[union-attr]
    with pytest.raises(ModeError) as err:
        m.setup()
    text = str(err.value)
    assert text.startswith(
        "bravo: the cluster refused to exec into pod netrun-cap1d2e3-t0/server "
        "(kubeconfig /lab/admin.kubeconfig): error: unable to upgrade connection:"
    )
    assert text.endswith(
        "; grant the user of that kubeconfig create on pods/exec (a Role or ClusterRole "
        "bound to it)"
    )
    assert "\n" not in text


def test_a_node_without_room_names_the_pods_requests(tmp_path: Path) -> None:
    m, _, _ = placed(tmp_path)
    full = manifest.pod_states(fixture("pods").stdout)["full"]  # asks 500 CPUs of bravo
    assert not full.ready and "Insufficient cpu" in full.why
    line = m.not_ready(m.pod_spec("server", False, 300), full.why, 120)
    assert line.startswith(
        "test t: pod netrun-cap1d2e3-t0/server (the server end) did not become Ready "
        "on node bravo within 120s: not scheduled (Unschedulable): 0/2 nodes are available: 1 "
        "Insufficient cpu"
    )
    assert line.endswith(
        "node bravo has no room for the pod's requests: lower pod_resources' requests or "
        "free the node"
    )


def test_the_mode_is_registered_by_its_one_line() -> None:
    assert get_mode("kubernetes") is Kubernetes
