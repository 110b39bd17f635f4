"""The control plane as processes beside the lab: etcd, kube-apiserver,
kube-controller-manager and kube-scheduler, listening only on the lab's management gateway.

etcd speaks plain HTTP on that address (only this lab's hosts and this machine reach it);
every Kubernetes component speaks TLS with the lab CA's certificates (netrun.lab.k8s.pki).
kube-proxy and CoreDNS are left out: the lab's measurements go pod IP to pod IP.
"""

from __future__ import annotations

from pathlib import Path

from netrun.lab.k8s import process
from netrun.lab.k8s.layout import APISERVER_PORT, ETCD_PEER_PORT, Cluster
from netrun.lab.k8s.pki import Credentials

COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")


def argv(c: Cluster, bin_dir: Path, creds: Credentials, name: str) -> list[str]:
    pki = c.pki
    if name == "etcd":
        peer = f"http://{c.address}:{ETCD_PEER_PORT}"
        return [
            str(bin_dir / "etcd"), "--name", "netrun-lab", "--data-dir", str(c.dir / "etcd"),
            "--listen-client-urls", c.etcd_url, "--advertise-client-urls", c.etcd_url,
            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
            "--initial-cluster", f"netrun-lab={peer}", "--log-level", "warn",
            "--quota-backend-bytes", str(1 << 30),
        ]  # fmt: skip
    if name == "kube-apiserver":
        return [
            str(bin_dir / name),
            "--etcd-servers", c.etcd_url,
            "--bind-address", c.address, "--advertise-address", c.address,
            "--secure-port", str(APISERVER_PORT),
            "--client-ca-file", str(creds.ca.cert),
            "--tls-cert-file", str(creds.apiserver.cert),
            "--tls-private-key-file", str(creds.apiserver.key),
            "--kubelet-client-certificate", str(creds.kubelet_client.cert),
            "--kubelet-client-key", str(creds.kubelet_client.key),
            "--kubelet-preferred-address-types", "InternalIP",
            "--service-account-issuer", "https://kubernetes.default.svc",
            "--service-account-key-file", str(creds.service_accounts.cert),
            "--service-account-signing-key-file", str(creds.service_accounts.key),
            "--service-cluster-ip-range", c.service_range,
            "--authorization-mode", "Node,RBAC",
            "--enable-admission-plugins", "NodeRestriction",
            "--allow-privileged=true",
            "--profiling=false",
            "--cert-dir", str(pki / "apiserver-generated"),
        ]  # fmt: skip
    if name == "kube-controller-manager":
        return [
            *_client(c, bin_dir, name, "controller-manager"),
            "--service-account-private-key-file", str(creds.service_accounts.key),
            "--root-ca-file", str(creds.ca.cert),
            "--use-service-account-credentials=true",
            "--cluster-name", "netrun-lab",
            "--leader-elect=false",
            "--allocate-node-cidrs=false",
            "--profiling=false",
            "--cert-dir", str(pki / "kcm-generated"),
        ]  # fmt: skip
    return [*_client(c, bin_dir, name, "scheduler"), "--leader-elect=false", "--profiling=false"]


def _client(c: Cluster, bin_dir: Path, name: str, file: str) -> list[str]:
    """A controller's program and its identity (one kubeconfig for all three uses); it
    serves no port (--secure-port 0), so two labs' controllers never meet."""
    kubeconfig = str(c.dir / f"{file}.kubeconfig")
    return [
        str(bin_dir / name),
        "--kubeconfig", kubeconfig,
        "--authentication-kubeconfig", kubeconfig,
        "--authorization-kubeconfig", kubeconfig,
        "--bind-address", c.address, "--secure-port", "0",
    ]  # fmt: skip


def needles(c: Cluster, name: str) -> tuple[str, ...]:
    """What a live component's command line holds: its name and this lab's files."""
    return (name, str(c.dir))


def start(c: Cluster, bin_dir: Path, creds: Credentials, name: str) -> int:
    return process.start(argv(c, bin_dir, creds, name), c.logs / f"{name}.log")
