"""mode: kubernetes: each end in a pod pinned to the node its host stands for.

Setup creates the test's namespace and the two pods in one ``kubectl apply`` (after the
undo record that deletes the namespace), waits until both are Ready on their nodes, and
checks that ``kubectl exec`` works in each; the tools then run through the pods' ends
(netrun.modes.kubernetes.end). Placement is the test's hosts': two hosts standing for one
node is ``same-node``, two nodes ``cross-node``.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from netrun.core.measurement import Measurement
from netrun.core.options import Option, number
from netrun.core.programs import Program
from netrun.core.spec import TestSpec
from netrun.errors import Cancelled, ModeError
from netrun.hosts.host import Host
from netrun.modes.base import Mode
from netrun.modes.kubernetes import manifest, pathbytes, podkeys
from netrun.modes.kubernetes import mtu as cni_mtu
from netrun.modes.kubernetes.end import PodEnd
from netrun.modes.kubernetes.kubectl import Kubectl, problem
from netrun.tools.ends import Carried, End, T

#: The lab's tools image (netrun.lab.k8s.images.TOOLS_IMAGE): iperf3, iperf, ping, netperf,
#: netserver, ss, sh.
TOOLS_IMAGE = "docker.io/netrun-lab/k8s-tools:latest"
#: Why a pod that is not Ready will not become Ready by waiting.
STUCK = ("ErrImageNeverPull", "InvalidImageName", "ImagePullBackOff", "ErrImagePull",
         "CreateContainer", "its container ended")  # fmt: skip
IMAGE_REASONS = ("ErrImageNeverPull", "InvalidImageName", "ImagePullBackOff", "ErrImagePull")

# fmt: off
OPTIONS: tuple[Option, ...] = (
    Option("k8s_network", str, "pod", "kubernetes: pod (the CNI's pod network) or host "
           "(hostNetwork pods: the node's own network seen from Kubernetes)",
           choices=("pod", "host")),
    Option("pod_image", str, TOOLS_IMAGE, "kubernetes: the ends' image; it holds the test's "
           "tool and sh, grep, sleep (default: the lab's tools image)", from_inventory=True),
    Option("image_pull_policy", str, "IfNotPresent", "kubernetes: the pods' imagePullPolicy "
           "(IfNotPresent and Never pull nothing when the node has the image)",
           choices=("IfNotPresent", "Never", "Always"), from_inventory=True),
    Option("kubeconfig", str, None, "kubernetes: kubectl --kubeconfig on the hosts (null: "
           "their KUBECONFIG or ~/.kube/config)", nullable=True, from_inventory=True),
    Option("kube_context", str, None, "kubernetes: kubectl --context (null: the kubeconfig's "
           "current context)", nullable=True, from_inventory=True),
    Option("kubectl", str, "kubectl", "kubernetes: the kubectl program on the hosts",
           from_inventory=True),
    Option("k8s_node", str, None, "kubernetes: the node a host stands for (null: the host's "
           "name); two hosts of one node place a test same-node", nullable=True,
           from_inventory=True),
    Option("pod_ready_timeout", (int, float), 120, "kubernetes: seconds the ends' pods may "
           "take to be Ready", check=number(1, strict=True, maximum=3600)),
    *podkeys.OPTIONS,
)
# fmt: on


class Kubernetes(Mode):
    """Both ends in pods of the test's own namespace, on their hosts' nodes."""

    name = "kubernetes"
    options = (*OPTIONS, *cni_mtu.OPTIONS)
    tools = ("iperf3", "ping", "iperf2", "netperf")
    needs: ClassVar[Mapping[str, tuple[str, ...]]] = {
        "server": ("kubectl",),
        "client": ("kubectl",),
    }
    installs = (
        Program(
            "kubectl", "netrun_kubectl", "kubectl (Kubernetes apt repo)",
            "kubectl (Kubernetes yum repo)", version_flag="version --client",
        ),
    )  # fmt: skip

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        prefix = str(self.value("k8s_namespace_prefix"))
        self.namespace = manifest.namespace_name(self.ctx.run_id, self.test.tag, prefix)
        #: role -> its pod as the cluster said once Ready (setup).
        self.pods: dict[str, manifest.PodState] = {}

    @classmethod
    def alone(cls, test: TestSpec) -> str | None:
        """A pod-network test that sets the pods' MTU changes the CNI's configuration and
        restarts its DaemonSet: the whole cluster's pod network, which every other test in
        it shares (netrun.modes.kubernetes.mtu)."""
        opts = test.options
        if opts.get("k8s_network", "pod") == "pod" and (opts.get("mtu") or opts.get("cni_mtu")):
            return "it sets the CNI's MTU, the whole cluster's"
        return None

    def node(self, role: str) -> str:
        host = self.hosts[role]
        return str(self.value("k8s_node", host) or host.name)

    def kubectl(self, host: Host) -> Kubectl:
        config, context = self.value("kubeconfig", host), self.value("kube_context", host)
        return Kubectl(str(self.value("kubectl", host)), config or None, context or None)

    def placement(self) -> str:
        return "same-node" if self.node("server") == self.node("client") else "cross-node"

    def place(self, role: str) -> End:
        """The role's pod (named for the role in the test's namespace), dialled at its IP;
        before setup (a preview) its address is a placeholder. A hostNetwork pod is in its
        node's own network namespace: it is dialled at its host's data address
        (netrun_data_ip), as bare metal is, not at the node's InternalIP (which may be a
        management address)."""
        state = self.pods.get(role)
        host = self.hosts[role]
        host_network = self.value("k8s_network") == "host"
        if host_network:  # the node's own netns: its data address
            address = host.data_ip
        else:
            address = state.pod_ip if state and state.pod_ip else f"<{role} pod IP>"
        return PodEnd(
            self, role, host, address, kubectl=self.kubectl(host),
            namespace=self.namespace, pod=role, host_network=host_network,
        )  # fmt: skip

    def one_end(self) -> str | None:
        """Two pods are two ends, on one node too (their own addresses)."""
        return None

    # -- setup ---------------------------------------------------------------------------
    def setup(self) -> None:
        if why := self.refusal():
            raise ModeError(why)
        host, kubectl = self.server, self.kubectl(self.server)
        host_network = self.value("k8s_network") == "host"
        lifetime = int(float(self.test.deadline) * int(self.test.value("repeat")) + 300)
        specs = [self.pod_spec(role, host_network, lifetime) for role in ("server", "client")]
        ns = self.namespace
        self.may_create(host, kubectl)
        cni_mtu.enter(self)  # the CNI at the test's pod MTU (mtu:, cni_mtu:)
        doc = manifest.document(ns, specs, self.ctx.run_id, self.test.tag)
        # by its labels: what a killed run left is found the same way
        selector = ",".join(
            f"{k}={v}" for k, v in manifest.labels(self.ctx.run_id, self.test.tag).items()
        )
        undo = kubectl.argv("delete", "namespace", "-l", selector, "--timeout=50s")
        apply = f"printf %s {shlex.quote(doc)} | {shlex.join(kubectl.argv('apply', '-f', '-'))}"
        res = self.change(
            host, apply, shlex.join(undo), what=f"delete namespace {ns}", timeout=60, check=False
        )
        if not res.ok:
            text = f"{res.stderr}\n{res.stdout}"
            raise ModeError(problem(host.name, f"create namespace {ns}", text, where(kubectl)))
        self.pods = self.wait_ready(host, kubectl, specs)
        self._ends.clear()  # placed again, at the pods' addresses
        mtu = {role: self.check_exec(role) for role in ("server", "client")}
        self.details["kubernetes"] = {
            "namespace": ns,
            "network": self.value("k8s_network"),
            "placement": self.placement(),
            "nodes": {role: self.node(role) for role in ("server", "client")},
            "pods": {
                role: {"ip": s.pod_ip, "node": s.node, "host_ip": s.host_ip}
                for role, s in self.pods.items()
            },
            "pod_mtu": mtu,
        }
        cni_mtu.check(self, mtu)  # eth0 and don't-fragment pings at the CNI's MTU
        if self.placement() == "same-node":  # no data link carries it (run.sample)
            self.details["off_link"] = (
                f"same-node: both pods on node {self.node('server')}, the bytes never cross "
                "a data link, whose ceiling does not bound them"
            )

    def may_create(self, host: Host, kubectl: Kubectl) -> None:
        """The API answers from ``host`` and lets its user create namespaces, asked before
        the undo record that deletes the test's namespace (it could not run otherwise)."""
        ask = shlex.join(kubectl.argv("auth", "can-i", "create", "namespaces"))
        res = host.run(ask, timeout=30, check=False)
        said = res.stdout.strip()
        if said == "yes":
            return
        text = f"{res.stderr}\n{res.stdout}"
        if said == "no":
            text = "forbidden: cannot create resource namespaces"
        raise ModeError(problem(host.name, "create namespaces", text, where(kubectl)))

    def pod_spec(self, role: str, host_network: bool, lifetime: int) -> manifest.PodSpec:
        """The role's pod: named for the role, on its host's node, with its host's image,
        resources, node selector and tolerations."""
        host = self.hosts[role]
        image, pull = self.value("pod_image", host), self.value("image_pull_policy", host)
        return manifest.PodSpec(
            role, self.node(role), image, pull, host_network, lifetime,
            resources=self.value("pod_resources", host),
            node_selector=self.value("pod_node_selector", host),
            tolerations=tuple(self.value("pod_tolerations", host) or ()),
        )  # fmt: skip

    def wait_ready(
        self, host: Host, kubectl: Kubectl, specs: list[manifest.PodSpec]
    ) -> dict[str, manifest.PodState]:
        """Each pod once Ready on its node; ModeError naming the pod, its node and why
        (the image missing there, not scheduled) as soon as waiting cannot help, or at
        ``pod_ready_timeout``."""
        timeout = float(self.value("pod_ready_timeout"))
        get = shlex.join(kubectl.argv("get", "pods", "-n", self.namespace, "-o", "json"))
        deadline = time.monotonic() + timeout
        while True:
            res = host.run(get, timeout=30, check=False)
            if not res.ok:
                text = f"{res.stderr}\n{res.stdout}"
                raise ModeError(problem(host.name, "read the test's pods", text, where(kubectl)))
            states = manifest.pod_states(res.stdout)
            if all(s.name in states and states[s.name].ready for s in specs):
                return {s.name: states[s.name] for s in specs}
            late = time.monotonic() > deadline
            stuck = [
                self.pod_not_ready(spec, state.why, timeout if late else None)
                for spec in specs
                if (state := states.get(spec.name))
                and not state.ready
                and (late or state.why.startswith(STUCK))
            ]
            if stuck:  # every pod that cannot become Ready, in one line: both ends' causes
                raise ModeError(f"test {self.test.name}: " + "; and ".join(stuck))
            if late:
                raise ModeError(self.not_ready(specs[0], "not created", timeout))
            if self.ctx.stopping.wait(1.0):
                raise Cancelled(host.name)

    def not_ready(self, spec: manifest.PodSpec, why: str, timeout: float | None) -> str:
        """One line for a pod that cannot become Ready (``timeout`` None: waiting cannot
        help) or did not within ``timeout``: the test, which pod, where, why, and the fix."""
        return f"test {self.test.name}: {self.pod_not_ready(spec, why, timeout)}"

    def pod_not_ready(self, spec: manifest.PodSpec, why: str, timeout: float | None) -> str:
        """``not_ready`` without the test's name, to join the pods of one test."""
        if why.startswith(IMAGE_REASONS):
            fix = (
                f"put image {spec.image} on node {spec.node} (or set pod_image, or "
                "image_pull_policy: IfNotPresent where it can be pulled)"
            )
        elif why.startswith("not scheduled") and "Insufficient" in why:
            fix = (
                f"node {spec.node} has no room for the pod's requests: lower pod_resources' "
                "requests or free the node"
            )
        elif why.startswith("not scheduled"):
            fix = (
                f"check that node {spec.node} exists and has room (kubectl get node "
                f"{spec.node}); netrun_k8s_node names a host's node"
            )
        else:
            fix = f"kubectl -n {self.namespace} describe pod {spec.name} says more"
        when = "" if timeout is None else f" within {timeout:g}s"
        verb = "cannot become" if timeout is None else "did not become"
        return (
            f"pod {self.namespace}/{spec.name} (the {spec.name} end) "
            f"{verb} Ready on node {spec.node}{when}: {why[:300]}; {fix}"
        )

    def check_exec(self, role: str) -> int | None:
        """``kubectl exec`` into the role's pod works from its host (RBAC allows
        pods/exec); the pod's eth0 MTU on the pod network (None on the host network)."""
        end = self.end(role)
        probe = ["sh", "-c", "cat /sys/class/net/eth0/mtu 2>/dev/null; echo NETRUN_EXEC"]
        res = end.run(shlex.join(end.wrap(probe)), timeout=30, check=False)
        if "NETRUN_EXEC" not in res.stdout:
            assert isinstance(end, PodEnd)
            text = f"{res.stderr}\n{res.stdout}"
            what = f"exec into pod {self.namespace}/{role}"
            raise ModeError(problem(end.host.name, what, text, where(end.kubectl)))
        first = res.stdout.split()[0]
        return int(first) if first.isdigit() and self.value("k8s_network") == "pod" else None

    def teardown(self) -> None:
        """The CNI's MTU back unless the next test wants it as it is."""
        if problems := cni_mtu.leave(self):
            raise ModeError("; ".join(problems))

    # -- measuring: the proof around each measurement ------------------------------------
    def proving(self, measure: Callable[[], Measurement]) -> Measurement:
        """A tool's measurement through the pods' ends, with both nodes' device counters
        around it (pathbytes) and the verdict on the bytes it says it moved (Tool.moved)."""
        m, path = pathbytes.proven(self, measure, self.bytes_moved)
        m.details.update(path)
        return m

    def bytes_moved(self, m: Measurement) -> int | None:
        """The payload the measurement moved, as its tool says (Tool.moved); None: it
        does not say."""
        moved = self.tool.moved(m.result) if self.tool.moved is not None else {}
        return sum(moved.values()) if moved else None

    def carry(
        self,
        repeat: int,
        port: int,
        leg: Callable[[str, int], T],
        moved: Callable[[T], Mapping[str, int]] | None = None,
    ) -> Carried[T]:
        """A tool's client leg to the server pod, with the nodes' device counters around
        it (pathbytes; ``moved``: the payload each way, for the verdict)."""
        address = self.end("server").address
        total = (lambda v: sum(moved(v).values())) if moved else (lambda v: None)
        value, details = pathbytes.proven(self, lambda: leg(address, port), total)
        return Carried(value, details)


def where(kubectl: Kubectl) -> str:
    """Which kubeconfig and context a kubectl used, for an error line (never its contents)."""
    config = kubectl.kubeconfig or "KUBECONFIG or ~/.kube/config"
    return f"kubeconfig {config}" + (f", context {kubectl.context}" if kubectl.context else "")


MODE = Kubernetes
