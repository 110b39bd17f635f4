"""`mode: kubernetes` on the lab's cluster, through the CLI: each end in a pod pinned to its
host's node, measured through `kubectl exec` from the hosts.

The same 2-host cluster as test_k8s_lab.py (its prefix and net index: the modules run one
after another), at the lab's default MTU. It proves, each test a run of its own with the
data links' counters read around it: iperf3 TCP and UDP between pods across nodes put at
least iperf3's bytes on bravo's data0, the server pod's address in bravo's pod subnet; with
`k8s_network: host` (hostNetwork pods) the server end is bravo's own data address and the
bytes cross data0 too; two hosts standing for one node (`netrun_k8s_node`) place a test
same-node, and its bytes stay off the data links; ping runs through the same ends
unchanged. A pod whose image is not on its node, and a kubeconfig that reaches no API,
each fail their test with one line while the next test still runs. After every run no
namespace with netrun's label is left in the cluster.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from netrun.lab.system import ip_json
from tests.integration.helpers import (
    error_lines,
    load_results,
    netrun_process,
    only_test,
    run_netrun,
    wait_for,
    write_yaml,
)
from tests.integration.test_k8s_lab import Cluster, _skip_reason, up_and_down

pytestmark = pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))


@pytest.fixture(scope="module")
def k8s(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from up_and_down(tmp_path_factory.mktemp("k8smode"))


def inventory(k8s: Cluster, tmp: Path) -> Path:
    """The lab's inventory plus alpha2: a second name for alpha's host standing for node
    alpha, so a test of alpha2 and alpha is placed same-node."""
    data = yaml.safe_load(k8s.inventory.read_text())
    hosts = data["all"]["hosts"]
    hosts["alpha2"] = {**hosts["alpha"], "netrun_k8s_node": "alpha"}
    return write_yaml(tmp / "inventory.yaml", data)


def run_one(
    k8s: Cluster, tmp: Path, name: str, **test: Any
) -> tuple[dict[str, Any], dict[str, dict[str, int]], Any]:
    """One test as a run of its own: its sample, each host's data0 counter deltas, the run."""
    scenario = write_yaml(
        tmp / f"{name}.yaml",
        {"name": name, "defaults": {"mode": "kubernetes"},
         "tests": [{"name": name, "server": "bravo", "client": "alpha", **test}]},
    )  # fmt: skip
    before = {h: k8s.data0(h) for h in ("alpha", "bravo")}
    run = run_netrun(
        [scenario, "-i", inventory(k8s, tmp), "-o", f"out-{name}", "--no-history"],
        cwd=tmp, timeout=300,
    )  # fmt: skip
    after = {h: k8s.data0(h) for h in ("alpha", "bravo")}
    delta = {h: {k: after[h][k] - before[h][k] for k in ("rx", "tx")} for h in after}
    doc = load_results(tmp / f"out-{name}")
    assert_nothing_left(k8s, doc["run_id"])
    return only_test(doc, name) if run.returncode == 0 else {}, delta, run


def assert_nothing_left(k8s: Cluster, run_id: str) -> None:
    """No namespace of this run, nor any netrun-labelled one, is left in the cluster."""
    mine = k8s.kubectl("get", "namespaces", "-l", f"netrun.run_id={run_id}", "-o", "name")
    assert mine.strip() == "", mine
    every = k8s.kubectl("get", "namespaces", "-l", "netrun", "-o", "name")
    assert every.strip() == "", every


def received_bytes(tmp: Path, name: str, sample: dict[str, Any]) -> int:
    raw = json.loads((tmp / f"out-{name}" / sample["raw"]).read_text())
    return int(raw["end"]["sum_received"]["bytes"])


def test_iperf3_between_pods_across_nodes_crosses_the_data_links(
    k8s: Cluster, tmp_path: Path
) -> None:
    sample, delta, run = run_one(k8s, tmp_path, "pod-cross", duration=2)
    assert run.returncode == 0, run.stderr[-3000:]
    assert sample["status"] == "ok" and sample["throughput_bps"] > 1e6
    kube = sample["details"]["kubernetes"]
    assert kube["placement"] == "cross-node" and kube["network"] == "pod"
    assert kube["nodes"] == {"server": "bravo", "client": "alpha"}
    subnet = k8s.layout.node("bravo").pod_cidr.rsplit(".", 1)[0]
    assert kube["pods"]["server"]["ip"].rsplit(".", 1)[0] == subnet
    assert kube["pod_mtu"]["server"] == 1500
    got = received_bytes(tmp_path, "pod-cross", sample)
    assert delta["bravo"]["rx"] >= got > 1_000_000, (delta, got)


def test_mtu_sets_the_nodes_nics_and_the_cnis_checks_the_pods_and_restores_both(
    k8s: Cluster, tmp_path: Path
) -> None:
    """The lab's bridge CNI (ConfigMap netrun-cni): mtu: 9000 puts both nodes' data0 and
    the pods' eth0 at 9000, don't-fragment pings of 9000 bytes cross between the pods, the
    bytes cross cni0 and data0; after the run the ConfigMap and data0 are as before."""
    mtu_of = ("-n", "kube-system", "get", "configmap", "netrun-cni", "-o", "jsonpath={.data.mtu}")
    before = k8s.kubectl(*mtu_of)
    sample, _, run = run_one(k8s, tmp_path, "pod-mtu", duration=1, mtu=9000)
    assert run.returncode == 0, run.stderr[-3000:]
    details = sample["details"]
    assert details["mtu"]["container"] == {"server": 9000, "client": 9000}
    assert details["cni"]["kind"] == "bridge" and details["cni"]["want"] == 9000
    assert details["cni"]["path_checked"] == [
        "pod client -> pod server 9000", "pod server -> pod client 9000"
    ]  # fmt: skip
    assert details["overlay_mtu"] == 9000 and "MTU 9000" in sample["ceiling_basis"]
    assert details["crossed_overlay"] is True, details["path_check"]
    assert details["path_bytes"]["server"]["overlay"]["device"] == "cni0"
    assert k8s.kubectl(*mtu_of) == before
    for host in ("alpha", "bravo"):
        ns = k8s.layout.lab.host(host).namespace
        assert ip_json("link", "show", "data0", netns=ns)[0]["mtu"] == 1500


def test_udp_between_pods_reports_loss_and_jitter(k8s: Cluster, tmp_path: Path) -> None:
    sample, delta, run = run_one(
        k8s, tmp_path, "pod-udp", protocol="udp", bitrate="50M", duration=2
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert sample["status"] == "ok"
    assert sample["lost_percent"] is not None and sample["jitter_ms"] is not None
    assert 30e6 < sample["throughput_bps"] < 60e6
    assert delta["bravo"]["rx"] >= 2 * 30e6 / 8, delta


def test_host_network_pods_dial_the_nodes_own_address(k8s: Cluster, tmp_path: Path) -> None:
    sample, delta, run = run_one(k8s, tmp_path, "host-cross", k8s_network="host", duration=2)
    assert run.returncode == 0, run.stderr[-3000:]
    kube = sample["details"]["kubernetes"]
    assert kube["network"] == "host" and kube["pod_mtu"] == {"server": None, "client": None}
    assert kube["pods"]["server"]["ip"] == kube["pods"]["server"]["host_ip"]  # hostNetwork
    assert sample["details"]["server_address"] == k8s.layout.lab.host("bravo").data_ip
    got = received_bytes(tmp_path, "host-cross", sample)
    assert delta["bravo"]["rx"] >= got > 1_000_000, (delta, got)


def test_two_hosts_of_one_node_place_a_test_same_node(k8s: Cluster, tmp_path: Path) -> None:
    sample, delta, run = run_one(k8s, tmp_path, "pod-same", server="alpha2", duration=2)
    assert run.returncode == 0, run.stderr[-3000:]
    kube = sample["details"]["kubernetes"]
    assert kube["placement"] == "same-node"
    # no link ceiling is claimed for bytes that crossed no link: not flagged above it
    assert sample["goodput_ceiling_mbps"] is None and sample["details"]["off_link"]
    assert "above-ceiling" not in sample["flags"]
    assert kube["nodes"] == {"server": "alpha", "client": "alpha"}
    got = received_bytes(tmp_path, "pod-same", sample)
    assert got > 1_000_000
    # the bytes stayed on alpha: its data link carried a small part of them at most
    assert delta["alpha"]["tx"] < got / 10, (delta, got)


def test_ping_runs_through_the_pods_unchanged(k8s: Cluster, tmp_path: Path) -> None:
    sample, _, run = run_one(k8s, tmp_path, "ping-pod", tool="ping", count=3, interval=0.2)
    assert run.returncode == 0, run.stderr[-3000:]
    assert sample["status"] == "ok" and sample["metrics"]["rtt_avg_ms"] > 0
    assert sample["details"]["target"] == sample["details"]["kubernetes"]["pods"]["server"]["ip"]


def test_a_missing_image_and_an_unreachable_api_fail_one_line_each(
    k8s: Cluster, tmp_path: Path
) -> None:
    scenario = write_yaml(
        tmp_path / "bad.yaml",
        {"name": "bad", "defaults": {"mode": "kubernetes", "duration": 1},
         "tests": [
             {"name": "no-image", "server": "bravo", "client": "alpha",
              "pod_image": "docker.io/netrun-lab/absent:1", "image_pull_policy": "Never"},
             {"name": "no-api", "server": "bravo", "client": "alpha",
              "kubeconfig": str(tmp_path / "absent.kubeconfig")},
             {"name": "fine", "server": "bravo", "client": "alpha"},
         ]},
    )  # fmt: skip
    run = run_netrun(
        [scenario, "-i", inventory(k8s, tmp_path), "-o", "out", "--no-history"],
        cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert run.returncode != 0 and "Traceback" not in run.stderr
    lines = error_lines(run.stderr)
    image = [line for line in lines if "no-image" in line or "absent:1" in line]
    assert len(image) == 1, lines
    # both pods lack the image: the line names each one stuck when it looked (the server's
    # or the client's first, as the kubelets answer), each on its own node
    named = re.findall(r"\(the (server|client) end\) cannot become Ready on node (\w+)", image[0])
    assert named and set(named) <= {("server", "bravo"), ("client", "alpha")}, image[0]
    assert "ErrImageNeverPull" in image[0] and "put image" in image[0]
    api = [line for line in lines if "unreachable" in line]
    assert len(api) == 1 and "absent.kubeconfig" in api[0], lines
    doc = load_results(tmp_path / "out")
    assert only_test(doc, "fine")["status"] == "ok"
    assert_nothing_left(k8s, doc["run_id"])


def test_the_pods_carry_the_scenarios_resources_selector_and_tolerations(
    k8s: Cluster, tmp_path: Path
) -> None:
    """The API takes the scenario's pod keys as netrun writes them, and the test runs."""
    sample, _, run = run_one(
        k8s, tmp_path, "shaped", duration=1, k8s_namespace_prefix="team-a",
        pod_resources={"requests": {"cpu": "50m", "memory": "32Mi"},
                       "limits": {"cpu": 1, "memory": "256Mi"}},
        pod_node_selector={"kubernetes.io/os": "linux"},
        pod_tolerations=[{"key": "netrun-test", "operator": "Exists", "effect": "NoSchedule"}],
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert sample["status"] == "ok", sample.get("error")
    assert sample["details"]["kubernetes"]["namespace"].startswith("team-a-")


#: What netrun's ends need of the cluster, but exec: a user RBAC lets create and delete
#: the test's namespace and pods and read them, and nothing else.
NO_EXEC_RULES = [
    {"apiGroups": [""], "resources": ["namespaces", "pods"],
     "verbs": ["create", "get", "list", "watch", "patch", "delete"]},
]  # fmt: skip


def no_exec_kubeconfig(k8s: Cluster, tmp: Path) -> tuple[Path, str]:
    """A kubeconfig of a ServiceAccount RBAC forbids ``pods/exec`` (the lab's API and CA,
    the account's token), and that token, to prove netrun never shows it."""
    rbac = "rbac.authorization.k8s.io"
    meta = {"name": "netrun-noexec"}
    account = {**meta, "namespace": "default"}
    k8s.apply({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": account},
        {"apiVersion": f"{rbac}/v1", "kind": "ClusterRole", "metadata": meta,
         "rules": NO_EXEC_RULES},
        {"apiVersion": f"{rbac}/v1", "kind": "ClusterRoleBinding", "metadata": meta,
         "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": "netrun-noexec"},
         "subjects": [{"kind": "ServiceAccount", "name": "netrun-noexec",
                       "namespace": "default"}]},
    ]})  # fmt: skip
    token = k8s.kubectl("-n", "default", "create", "token", "netrun-noexec", "--duration=15m")
    config = yaml.safe_load(k8s.kubectl("config", "view", "--raw", "--minify", "-o", "yaml"))
    config["users"][0]["user"] = {"token": token.strip()}
    path = tmp / "noexec.kubeconfig"
    path.touch(mode=0o600)
    path.write_text(yaml.safe_dump(config))
    return path, token.strip()


def test_rbac_without_exec_and_a_full_node_fail_one_line_each(k8s: Cluster, tmp_path: Path) -> None:
    """A user RBAC forbids exec into the pods, and pods that ask more CPU than a node has:
    one line each naming the object and the fix, no token shown or saved, the next test
    runs, nothing left in the cluster."""
    config, token = no_exec_kubeconfig(k8s, tmp_path)
    try:
        scenario = write_yaml(
            tmp_path / "denied.yaml",
            {"name": "denied", "defaults": {"mode": "kubernetes", "duration": 1},
             "tests": [
                 {"name": "no-exec", "server": "bravo", "client": "alpha",
                  "kubeconfig": str(config)},
                 {"name": "full", "server": "bravo", "client": "alpha", "pod_ready_timeout": 8,
                  "pod_resources": {"requests": {"cpu": "500"}}},
                 {"name": "fine", "server": "bravo", "client": "alpha"},
             ]},
        )  # fmt: skip
        run = run_netrun(
            [scenario, "-i", inventory(k8s, tmp_path), "-o", "out", "--no-history"],
            cwd=tmp_path, timeout=300,
        )  # fmt: skip
    finally:
        for kind in ("clusterrolebinding", "clusterrole"):
            k8s.kubectl("delete", kind, "netrun-noexec", "--ignore-not-found")
        k8s.kubectl("-n", "default", "delete", "serviceaccount", "netrun-noexec")
    assert run.returncode != 0 and "Traceback" not in run.stderr
    lines = error_lines(run.stderr)
    denied = [line for line in lines if "refused to exec into pod" in line]
    assert len(denied) == 1, lines
    assert "/server" in denied[0] and str(config) in denied[0]
    assert 'cannot create resource "pods/exec"' in denied[0]
    assert "grant the user of that kubeconfig create on pods/exec" in denied[0]
    full = [
        line for line in lines if re.search(r"did not become Ready on node \w+ within 8s", line)
    ]
    assert len(full) == 1 and "Insufficient cpu" in full[0], lines
    assert "lower pod_resources' requests or free the node" in full[0]
    doc = load_results(tmp_path / "out")
    assert only_test(doc, "fine")["status"] == "ok"
    assert token not in run.stdout + run.stderr
    saved = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert saved and not [p for p in saved if token in p.read_text(errors="replace")]
    assert_nothing_left(k8s, doc["run_id"])


def test_iperf2_runs_through_the_pods_unchanged(k8s: Cluster, tmp_path: Path) -> None:
    sample, delta, run = run_one(k8s, tmp_path, "iperf2-pod", tool="iperf2", duration=2)
    assert run.returncode == 0, run.stderr[-3000:]
    assert sample["status"] == "ok" and sample["details"]["kubernetes"]["network"] == "pod"
    assert delta["bravo"]["rx"] > 0


def test_netperf_runs_between_pods(k8s: Cluster, tmp_path: Path) -> None:
    """netserver and netperf from the lab's tools image (its netperf build), through the
    pods' ends, dialled at the server pod's address."""
    sample, delta, run = run_one(
        k8s, tmp_path, "netperf-pod", tool="netperf", test="TCP_RR", duration=2
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert sample["status"] == "ok", sample.get("error")
    assert sample["metrics"]["transactions_per_s"] > 10
    server_ip = sample["details"]["kubernetes"]["pods"]["server"]["ip"]
    assert sample["details"]["target"].startswith(f"{server_ip}:")
    assert delta["bravo"]["rx"] > 0


def test_a_load_runs_in_the_pods_beside_ping(k8s: Cluster, tmp_path: Path) -> None:
    sample, delta, run = run_one(
        k8s, tmp_path, "ping-load", tool="ping", count=5, interval=0.2,
        load={"streams": 1, "direction": "up", "protocol": "tcp"},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert sample["status"] == "ok", sample.get("error")
    m = sample["metrics"]
    assert m["rtt_p50_ms_idle"] > 0 and m["rtt_p50_ms_loaded"] > 0
    assert m["load_throughput_bps"] > 1e6
    assert delta["bravo"]["rx"] > m["load_throughput_bps"] / 8  # the load crossed data0


def test_a_fanin_places_each_flow_in_pods_of_its_own(k8s: Cluster, tmp_path: Path) -> None:
    scenario = write_yaml(
        tmp_path / "fan.yaml",
        {"name": "fan", "defaults": {"mode": "kubernetes"},
         "tests": [{"name": "fan", "hosts": "alpha,alpha2,bravo",
                    "pairs": {"fanin": "bravo"}, "duration": 2}]},
    )  # fmt: skip
    run = run_netrun(
        [scenario, "-i", inventory(k8s, tmp_path), "-o", "out", "--no-history"],
        cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    doc = load_results(tmp_path / "out")
    (sample,) = doc["tests"]
    assert sample["status"] == "ok", sample.get("error")
    flows = sample["details"]["flows"]
    assert sorted(f["client"] for f in flows) == ["alpha", "alpha2"]
    assert all(f["throughput_bps"] > 1e5 for f in flows), flows
    assert sample["metrics"]["aggregate_bps"] > 1e6
    assert_nothing_left(k8s, doc["run_id"])


def test_a_killed_runs_namespace_is_removed_by_netrun_cleanup(k8s: Cluster, tmp_path: Path) -> None:
    scenario = write_yaml(
        tmp_path / "long.yaml",
        {"name": "long", "defaults": {"mode": "kubernetes"},
         "tests": [{"name": "long", "server": "bravo", "client": "alpha", "duration": 30,
                    "k8s_namespace_prefix": "lab-bench"}]},
    )  # fmt: skip
    inv = inventory(k8s, tmp_path)
    with netrun_process([scenario, "-i", inv, "-o", "out", "--no-history"], cwd=tmp_path) as proc:

        def measuring() -> str:
            found = k8s.kubectl("get", "pods", "-A", "-l", "netrun", "-o", "json")
            pods = json.loads(found)["items"]
            running = [p for p in pods if p["status"].get("phase") == "Running"]
            return str(pods[0]["metadata"]["namespace"]) if len(running) == 2 else ""

        def run_of(namespace: str) -> str:  # found by its label, whatever its name
            found = k8s.kubectl("get", "namespace", namespace, "-o", "json")
            return str(json.loads(found)["metadata"]["labels"]["netrun.run_id"])

        namespace = wait_for(measuring, 90, interval=1)
        assert namespace, "the run's pods never ran"
        assert namespace.startswith("lab-bench-")  # the scenario's prefix
        time.sleep(3)  # its iperf3 started
        os.kill(proc.pid, signal.SIGKILL)
    run_id = run_of(namespace)
    assert k8s.kubectl("get", "namespace", namespace, "-o", "name").strip()  # left behind
    clean = run_netrun(["cleanup", "-i", inv, "--run-id", run_id], cwd=tmp_path, timeout=200)
    assert clean.returncode == 0, clean.stderr[-2000:]
    assert f"undone: delete namespace {namespace}" in clean.stdout + clean.stderr
    assert_nothing_left(k8s, run_id)
