"""kubectl as a kubernetes-mode test calls it: the argv prefix (kubectl's own flags) and
what its errors mean, one line each.

netrun talks to the cluster the way its users do: the kubectl on the host that stands for
a node, with the kubeconfig and context a scenario names (``--kubeconfig``,
``--context``), else that host's ``KUBECONFIG`` or ``~/.kube/config``. Nothing here reads
a kubeconfig: its credentials never pass through netrun.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Kubectl:
    """kubectl on one host: its program, kubeconfig and context (None: kubectl's own)."""

    program: str = "kubectl"
    kubeconfig: str | None = None
    context: str | None = None

    def argv(self, *args: str) -> list[str]:
        """kubectl ARGS with the kubeconfig and context flags this test sets."""
        flags = []
        if self.kubeconfig:
            flags += ["--kubeconfig", self.kubeconfig]
        if self.context:
            flags += ["--context", self.context]
        return [self.program, *flags, *args]

    def exec_argv(
        self, namespace: str, pod: str, argv: Sequence[str], *, stdin: bool = False
    ) -> list[str]:
        """``kubectl exec`` of ``argv`` in the pod's one container (``-i``: with stdin)."""
        return self.argv("exec", *(["-i"] if stdin else []), "-n", namespace, pod, "--", *argv)


#: kubectl's words for an API it cannot reach (dial errors, TLS, a missing kubeconfig).
_UNREACHABLE = re.compile(
    r"Unable to connect to the server|connection refused|no such host|i/o timeout|"
    r"dial tcp|the server could not find the requested resource|"
    r"The connection to the server .* was refused|x509:|"
    r"stat .*: no such file or directory|invalid configuration|"
    r"context .* does not exist|no configuration has been provided",
    re.IGNORECASE,
)
#: The verb and resource RBAC denied (``cannot create resource "pods/exec"``).
_DENIED = re.compile(r'cannot (\w+) resource "([^"]+)"')
_FORBIDDEN = re.compile(r"forbidden|cannot (create|get) resource|Unauthorized", re.IGNORECASE)


def problem(host: str, what: str, text: str, where: str) -> str:
    """One line for a kubectl command that failed on ``host`` (``what`` it did), from its
    stderr: the API unreachable, RBAC refusing, or kubectl's own last line."""
    last = _last_line(text)
    if re.search(r"^(sh: \d+: )?\S*kubectl\S*: (not found|No such file)", text, re.MULTILINE):
        return (
            f"{host}: kubectl not found to {what}: install kubectl there or set "
            "netrun_kubectl (or kubectl:) to its path"
        )
    if _UNREACHABLE.search(text):
        return (
            f"{host}: the Kubernetes API is unreachable from {host} ({where}): {last}; check "
            "kubeconfig / kube_context (or KUBECONFIG there) and that the API server runs"
        )
    if _FORBIDDEN.search(text):
        denied = _DENIED.search(text)
        grant = (
            f"grant the user of that kubeconfig {denied[1]} on {denied[2]} (a Role or "
            "ClusterRole bound to it)"
            if denied
            else "grant the user of that kubeconfig the RBAC verbs on namespaces, pods and "
            "pods/exec"
        )
        return f"{host}: the cluster refused to {what} ({where}): {last}; {grant}"
    return f"{host}: kubectl could not {what} ({where}): {last or 'no output'}"


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""
