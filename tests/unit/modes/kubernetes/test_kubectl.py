"""kubectl's flags as a scenario sets them."""

from __future__ import annotations

from netrun.modes.kubernetes.kubectl import Kubectl


def test_kubeconfig_and_context_are_kubectls_own_flags() -> None:
    k = Kubectl("/opt/kubectl", "/k/admin.conf", "lab")
    assert k.argv("get", "pods") == [
        "/opt/kubectl", "--kubeconfig", "/k/admin.conf", "--context", "lab", "get", "pods",
    ]  # fmt: skip
    assert Kubectl().argv("version") == ["kubectl", "version"]  # KUBECONFIG decides


def test_exec_runs_the_argv_in_the_pod() -> None:
    k = Kubectl()
    assert k.exec_argv("ns", "server", ["iperf3", "-s"]) == [
        "kubectl", "exec", "-n", "ns", "server", "--", "iperf3", "-s",
    ]  # fmt: skip
    assert k.exec_argv("ns", "client", ["cat"], stdin=True)[:3] == ["kubectl", "exec", "-i"]
