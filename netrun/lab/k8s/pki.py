"""The cluster's own certificates and kubeconfigs (a CA made per lab, never reused).

Every client authenticates with a certificate the lab's CA signed: the admin (the
controller's kubectl, in group system:masters), the controller-manager, the scheduler, the
apiserver towards kubelets, and each node as system:node:<name> (group system:nodes, so
the Node authorizer and NodeRestriction apply as on a kubeadm cluster). Keys are ECDSA
P-256 (fast to make), files 0600; nothing here prints a key.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from netrun.lab.k8s.layout import Cluster

VALID = datetime.timedelta(days=365)
CLUSTER_NAME = "netrun-lab"


@dataclass(frozen=True)
class Pair:
    cert: Path
    key: Path


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _name(cn: str, org: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org:
        attrs.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(attrs)


def _load(pair: Pair) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    cert = x509.load_pem_x509_certificate(pair.cert.read_bytes())
    key = serialization.load_pem_private_key(pair.key.read_bytes(), password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    return cert, key


def make_ca(pki: Path) -> Pair:
    pair = Pair(pki / "ca.crt", pki / "ca.key")
    if pair.cert.exists() and pair.key.exists():
        return pair
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    name = _name(f"{CLUSTER_NAME}-ca")
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALID)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(True, False, False, False, False, True, True, False, False),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    _write(pair.key, _key_pem(key))
    _write(pair.cert, cert.public_bytes(serialization.Encoding.PEM))
    return pair


def issue(
    ca: Pair,
    out: Path,
    cn: str,
    org: str | None = None,
    *,
    server: bool = False,
    dns: tuple[str, ...] = (),
    ips: tuple[str, ...] = (),
) -> Pair:
    """A certificate for `cn` (client, or server with the SANs given) signed by `ca`."""
    pair = Pair(out.with_suffix(".crt"), out.with_suffix(".key"))
    if pair.cert.exists() and pair.key.exists():
        return pair
    ca_cert, ca_key = _load(ca)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(cn, org))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALID)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    )
    if server:
        names: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
        names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    _write(pair.key, _key_pem(key))
    _write(pair.cert, cert.public_bytes(serialization.Encoding.PEM))
    return pair


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def kubeconfig(path: Path, server: str, ca: Pair, client: Pair, user: str) -> Path:
    """A kubeconfig with everything embedded, so it is one file to hand over."""
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": CLUSTER_NAME,
                "cluster": {"server": server, "certificate-authority-data": _b64(ca.cert)},
            }
        ],
        "users": [
            {
                "name": user,
                "user": {
                    "client-certificate-data": _b64(client.cert),
                    "client-key-data": _b64(client.key),
                },
            }
        ],
        "contexts": [{"name": CLUSTER_NAME, "context": {"cluster": CLUSTER_NAME, "user": user}}],
        "current-context": CLUSTER_NAME,
    }
    _write(path, yaml.safe_dump(doc, sort_keys=False).encode())
    return path


def service_account_key(pki: Path) -> Pair:
    """The key pair that signs (and verifies) service-account tokens."""
    pair = Pair(pki / "sa.pub", pki / "sa.key")
    if pair.cert.exists() and pair.key.exists():
        return pair
    key = ec.generate_private_key(ec.SECP256R1())
    _write(pair.key, _key_pem(key))
    pub = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    _write(pair.cert, pub)
    return pair


@dataclass(frozen=True)
class Credentials:
    ca: Pair
    apiserver: Pair
    kubelet_client: Pair
    service_accounts: Pair


def make_all(c: Cluster) -> Credentials:
    """Every certificate and kubeconfig of the cluster (kept when already made)."""
    pki = c.pki
    ca = make_ca(pki)
    apiserver = issue(
        ca, pki / "apiserver", "kube-apiserver", server=True,
        dns=("kubernetes", "kubernetes.default", "kubernetes.default.svc",
             "kubernetes.default.svc.cluster.local", "localhost"),
        ips=(c.address, c.service_ip, "127.0.0.1"),
    )  # fmt: skip
    kubelet_client = issue(ca, pki / "apiserver-kubelet-client", "kube-apiserver-kubelet-client",
                           "system:masters")  # fmt: skip
    admin = issue(ca, pki / "admin", "netrun-lab-admin", "system:masters")
    kubeconfig(c.admin_kubeconfig, c.server, ca, admin, "netrun-lab-admin")
    for cn, file in (("system:kube-controller-manager", "controller-manager"),
                     ("system:kube-scheduler", "scheduler")):  # fmt: skip
        pair = issue(ca, pki / file, cn)
        kubeconfig(c.dir / f"{file}.kubeconfig", c.server, ca, pair, cn)
    for node in c.nodes:
        cn = f"system:node:{node.name}"
        pair = issue(ca, node.dir / "pki" / "kubelet-client", cn, "system:nodes")
        kubeconfig(node.kubeconfig, c.server, ca, pair, cn)
    return Credentials(ca, apiserver, kubelet_client, service_account_key(pki))
