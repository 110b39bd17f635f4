"""The lab's Kubernetes cluster, without root: its plan, certificates, configs and images.

The cluster itself runs in tests/integration/test_k8s_lab.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml
from cryptography import x509

from netrun.errors import NetrunError
from netrun.lab import inventory
from netrun.lab.images import tar_root
from netrun.lab.k8s import build, cni, images, kube_flannel, node, pki
from netrun.lab.k8s.layout import cluster
from netrun.lab.plan import LabConfig, plan


def _cluster(tmp_path: Path, hosts: int = 3, net_index: int = 9):
    cfg = LabConfig(hosts=hosts, prefix="nrk", net_index=net_index, state_dir=tmp_path, k8s=True)
    return cluster(plan(cfg))


def test_each_node_gets_its_own_pod_subnet_cgroup_root_and_folder(tmp_path: Path) -> None:
    c = _cluster(tmp_path)
    assert [n.pod_cidr for n in c.nodes] == [
        "10.246.144.0/24",
        "10.246.145.0/24",
        "10.246.146.0/24",
    ]
    assert c.pod_network == "10.246.144.0/20" and c.service_range == "10.246.159.0/24"
    assert c.service_ip == "10.246.159.1" and c.server == "https://10.201.9.1:6443"
    assert [n.cgroup_root for n in c.nodes] == ["/nrk-alpha", "/nrk-bravo", "/nrk-charlie"]
    assert len({n.dir for n in c.nodes}) == 3 and c.nodes[1].gateway == "10.246.145.1"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"hosts": 16}, r"lab hosts must be 1\.\.15"),
        ({"net_index": 16}, r"net_index must be 0\.\.15"),
        ({"cni": "calico"}, r"--cni 'calico'"),
        ({"k8s_version": "latest"}, r"--k8s-version 'latest'"),
        ({"mtu": 9001}, r"--mtu 9001: the data links take 1280\.\.9000"),
        ({"mtu": 1000}, r"--mtu 1000: the data links take 1280\.\.9000"),
        ({"mtu": 1480, "docker": True}, r"--mtu 1480 with --docker: .*nr-routed.* at least 1500"),
    ],
)
def test_configs_the_cluster_cannot_have_are_refused(changes: dict, message: str) -> None:
    with pytest.raises(NetrunError, match=message):
        plan(LabConfig(k8s=True, **changes))


def test_the_config_round_trips_and_old_states_read_as_no_cluster() -> None:
    cfg = LabConfig(k8s=True, k8s_version="1.36.3", mtu=9000)
    assert LabConfig.from_json(cfg.to_json()) == cfg
    old = cfg.to_json()
    for key in ("k8s", "k8s_version", "cni", "mtu"):
        del old[key]
    assert LabConfig.from_json(old).k8s is False and LabConfig.from_json(old).mtu == 1500
    assert LabConfig(mtu=9000).differences(LabConfig()) == [("mtu", 9000, 1500)]


def test_the_pod_mtu_follows_the_data_links_less_each_cnis_encapsulation() -> None:
    # the write-up's node MTUs; VXLAN (Flannel) takes 50 bytes of each, as flanneld does
    assert [cni.pod_mtu(m, "bridge") for m in (1500, 6000, 9000)] == [1500, 6000, 9000]
    assert [cni.pod_mtu(m, "flannel") for m in (1500, 6000, 9000)] == [1450, 5950, 8950]


def test_the_inventory_names_the_kubeconfig(tmp_path: Path) -> None:
    c = _cluster(tmp_path)
    data = yaml.safe_load(inventory.render(c.lab))
    assert data["all"]["vars"]["netrun_kubeconfig"] == str(tmp_path / "k8s/admin.kubeconfig")


def test_certificates_name_each_client_and_the_apiserver_addresses(tmp_path: Path) -> None:
    c = _cluster(tmp_path, hosts=2)
    creds = pki.make_all(c)
    server = x509.load_pem_x509_certificate(creds.apiserver.cert.read_bytes())
    sans = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {str(ip) for ip in sans.get_values_for_type(x509.IPAddress)} == {
        "10.201.9.1",
        "10.246.159.1",
        "127.0.0.1",
    }
    kubelet = yaml.safe_load(c.nodes[1].kubeconfig.read_text())
    assert kubelet["clusters"][0]["cluster"]["server"] == c.server
    assert kubelet["users"][0]["name"] == "system:node:bravo"
    assert oct(creds.ca.key.stat().st_mode & 0o777) == "0o600"
    again = pki.make_all(c)  # a second `up` keeps the CA and every certificate
    assert again.ca.cert.read_bytes() == creds.ca.cert.read_bytes()


def test_kubelet_and_containerd_configs_hold_the_cgroup_v1_settings(tmp_path: Path) -> None:
    c = _cluster(tmp_path)
    n = c.nodes[0]
    kubelet = yaml.safe_load(node.kubelet_yaml(c, n, tmp_path / "ca.crt"))
    assert kubelet["cgroupDriver"] == "cgroupfs" and kubelet["failCgroupV1"] is False
    assert kubelet["cgroupRoot"] == "/nrk-alpha" and kubelet["oomScoreAdj"] == 0
    assert kubelet["containerRuntimeEndpoint"] == f"unix://{n.sock}"
    toml = node.containerd_toml(n, tmp_path / "nr-runc")
    assert "restrict_oom_score_adj = true" in toml and f'BinaryName = "{tmp_path}/nr-runc"' in toml
    assert f'sandbox_image = "{images.PAUSE_IMAGE}"' in toml
    assert f'config_path = "{n.dir}/containerd/certs.d"' in toml  # netrun.lab.k8s.registry


def test_the_cni_daemonset_renders_a_conflist_from_the_configmap_mtu(tmp_path: Path) -> None:
    c = _cluster(tmp_path)
    n = c.nodes[1]
    cni.write_subnet_env(n)
    n.cni_conf_dir.mkdir(parents=True)
    config_map, daemon_set = cni.manifests(c, mtu=1400)
    assert config_map["data"] == {"mtu": "1400"}
    script = daemon_set["spec"]["template"]["spec"]["containers"][0]["command"][2]
    # the real script, run by sh as the DaemonSet's pod runs it (minus its final sleep)
    env = {"NODE_DIR": str(n.dir), "MTU": "1400", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        ["sh", "-c", script.replace("exec sleep infinity", "")], env=env, capture_output=True
    )
    assert done.returncode == 0, done.stderr
    rendered = json.loads((n.cni_conf_dir / cni.CONFLIST).read_text())
    bridge = rendered["plugins"][0]
    assert bridge["mtu"] == 1400 and bridge["ipam"]["ranges"] == [
        [{"subnet": "10.246.145.0/24", "gateway": "10.246.145.1"}]
    ]


def test_an_image_archive_has_what_ctr_import_reads(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "hello").write_text("hi\n")
    archive = images.write_archive(tmp_path / "x.tar", "example/x:1", tar_root(root), ["/hello"])
    with tarfile.open(archive.path) as tar:
        manifest = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
        config = json.loads(tar.extractfile(manifest[0]["Config"]).read())  # type: ignore[union-attr]
        assert manifest[0]["RepoTags"] == ["example/x:1"]
        assert config["rootfs"]["diff_ids"][0].split(":")[1] in manifest[0]["Layers"][0]


def test_flannel_runs_as_upstreams_daemonset_with_the_lab_s_paths(tmp_path: Path) -> None:
    c = _cluster(tmp_path)
    docs = {d["kind"]: d for d in kube_flannel.manifests(c, "v0.28.10")}
    net_conf = json.loads(docs["ConfigMap"]["data"]["net-conf.json"])
    assert net_conf == {"Network": "10.246.144.0/20", "EnableNFTables": False,
                        "Backend": {"Type": "vxlan"}}  # fmt: skip
    spec = docs["DaemonSet"]["spec"]["template"]["spec"]
    flanneld = spec["containers"][0]
    assert spec["hostNetwork"] is True and "--kube-subnet-mgr" in flanneld["args"]
    assert flanneld["image"] == "docker.io/netrun-lab/flannel:v0.28.10"
    env = {e["name"]: e.get("value") for e in flanneld["env"]}
    assert env["KUBERNETES_SERVICE_HOST"] == "10.201.9.1"  # no kube-proxy: the apiserver
    # the init container's real script installs the conflist with this node's own paths
    n = c.nodes[1]
    n.cni_conf_dir.mkdir(parents=True)
    cfg = tmp_path / "etc-kube-flannel"
    cfg.mkdir()
    (cfg / "cni-conf.json").write_text(docs["ConfigMap"]["data"]["cni-conf.json"])
    script = spec["initContainers"][0]["command"][2]
    script = script.replace("/etc/kube-flannel", str(cfg)).replace(
        '"/hosts/', f'"{tmp_path}/hosts/'
    )
    done = subprocess.run(["sh", "-c", script], env={"NODE_NAME": "bravo", "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    plugin = json.loads((n.cni_conf_dir / kube_flannel.CONFLIST).read_text())["plugins"][0]
    assert plugin["subnetFile"] == str(kube_flannel.subnet_file(n))
    assert plugin["dataDir"] == str(kube_flannel.data_dir(n))
    assert plugin["delegate"]["ipMasq"] is False


@pytest.mark.skipif(not build.go_available(), reason="no Go toolchain to build the plugin")
def test_the_flannel_cni_plugin_delegates_to_bridge_with_the_lease_and_mtu(tmp_path: Path) -> None:
    """The real plugin (cmd/flannel), run as a container runtime runs it; the delegate is a
    script that records what it was given, as the bridge plugin would receive it."""
    go = build.go_binary()
    plugin = tmp_path / "flannel"
    env = {**os.environ, "CGO_ENABLED": "0", "GOTOOLCHAIN": "local"}
    argv = [str(go), "build", "-C", str(build.MODULE), "-o", str(plugin), "./cmd/flannel"]
    subprocess.run(argv, check=True, env=env)
    bridge = tmp_path / "bridge"
    bridge.write_text(
        f'#!/bin/sh\ncat > {tmp_path}/got.$CNI_COMMAND\necho \'{{"cniVersion": "1.0.0"}}\'\n'
    )
    bridge.chmod(0o755)
    subnet = tmp_path / "subnet.env"
    subnet.write_text("FLANNEL_NETWORK=10.246.144.0/20\nFLANNEL_SUBNET=10.246.145.1/24\n"
                      "FLANNEL_MTU=1450\nFLANNEL_IPMASQ=false\n")  # fmt: skip
    conf = {"cniVersion": "1.0.0", "name": "cbr0", "type": "flannel",
            "subnetFile": str(subnet), "dataDir": str(tmp_path / "data"),
            "delegate": {"ipMasq": False}}  # fmt: skip
    env = {"CNI_PATH": str(tmp_path), "CNI_CONTAINERID": "abc", "CNI_NETNS": "/x",
           "CNI_IFNAME": "eth0", "PATH": "/usr/bin:/bin"}  # fmt: skip

    def call(command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(plugin)], input=json.dumps(conf), capture_output=True,
                              text=True, env={**env, "CNI_COMMAND": command})  # fmt: skip

    assert call("ADD").returncode == 0
    given = json.loads((tmp_path / "got.ADD").read_text())
    assert given["type"] == "bridge" and given["name"] == "cbr0" and given["mtu"] == 1450
    assert given["ipMasq"] is False and given["isGateway"] is True
    assert given["ipam"] == {"type": "host-local", "ranges": [[{"subnet": "10.246.145.0/24"}]],
                             "routes": [{"dst": "10.246.144.0/20"}]}  # fmt: skip
    subnet.unlink()  # DEL uses the saved config, as upstream's does: the lease may be gone
    assert call("DEL").returncode == 0
    assert json.loads((tmp_path / "got.DEL").read_text()) == given
    assert not (tmp_path / "data" / "abc").exists() and call("DEL").returncode == 0
    failed = call("ADD")  # no subnet file: one CNI error result naming it
    assert failed.returncode == 1 and "subnet.env" in json.loads(failed.stdout)["msg"]
    version = subprocess.run([str(plugin)], env={"CNI_COMMAND": "VERSION"}, capture_output=True)
    assert "1.0.0" in json.loads(version.stdout)["supportedVersions"]
