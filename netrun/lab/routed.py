"""docker mode's own path on the lab: a routed Docker network, no overlay.

docker0 sits on the host's Flannel lease (flannel mode's path, through ``flannel.1``), so
docker mode gets a second bridge network per host, ``nr-routed``, on a subnet of its own
(plan.ROUTED_NET). Every other host routes that subnet via the host's data address, as
a routed lab network (or a ToR switch with a route per rack) does: container to container
without encapsulation, at the data link's MTU. The inventory points docker mode at it
(``netrun_docker_network``), so docker, flannel and bare metal are three different paths.
"""

from __future__ import annotations

from netrun.lab.plan import ROUTED_NETWORK, LabHost, LabPlan
from netrun.lab.system import run

#: the data link's MTU: nothing on this path encapsulates
ROUTED_MTU = 1500


def ensure_network(host: LabHost, docker_host: str) -> None:
    """The host's ``nr-routed`` bridge network (left as it is when it exists)."""
    base = ["docker", "-H", docker_host, "network"]
    if run([*base, "inspect", ROUTED_NETWORK], check=False, timeout=30).returncode == 0:
        return
    gateway = host.routed.split("/")[0].rsplit(".", 1)[0] + ".1"
    run(
        [
            *base, "create", "--driver", "bridge",
            "--subnet", host.routed, "--gateway", gateway,
            "-o", f"com.docker.network.bridge.name={ROUTED_NETWORK}",
            "-o", f"com.docker.network.driver.mtu={ROUTED_MTU}",
            # as the lab's docker0: container to container keeps its source address
            "-o", "com.docker.network.bridge.enable_ip_masquerade=false",
            ROUTED_NETWORK,
        ],
        timeout=60,
    )  # fmt: skip


def program_routes(lab: LabPlan, host: LabHost) -> None:
    """A route to every peer's routed subnet via its data address, and FORWARD accepts
    for them (dockerd's policy is DROP, and its own rules admit only published ports)."""
    ns = host.namespace
    for peer in lab.hosts:
        if peer is not host:
            run(["ip", "-n", ns, "route", "replace", peer.routed, "via", peer.data_ip,
                 "dev", "data0"])  # fmt: skip
    nsenter = ["nsenter", f"--net=/run/netns/{ns}"]
    run([*nsenter, "sysctl", "-qw", "net.ipv4.ip_forward=1"])
    for direction in ("-s", "-d"):
        rule = ["FORWARD", direction, lab.routed_network, "-j", "ACCEPT"]
        if run([*nsenter, "iptables", "-w", "-C", *rule], check=False).returncode != 0:
            run([*nsenter, "iptables", "-w", "-A", *rule])


def ensure_routed(lab: LabPlan, docker_host: dict[str, str]) -> None:
    """Every host's routed network and routes to the others'."""
    for host in lab.hosts:
        ensure_network(host, docker_host[host.name])
        program_routes(lab, host)
