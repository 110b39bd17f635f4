"""A Flannel-style VXLAN overlay between lab hosts, programmed as flanneld's vxlan backend does.

Per host: a `flannel.1` vxlan device (VNI 1, UDP 8472, no learning) on data0, holding
its lease's .0 address; docker0 owns the lease (the daemon's --bip). Per peer: a route
to the peer's lease via its .0 address (onlink), a permanent neighbour entry for that
address -> the peer's VTEP MAC, and an FDB entry sending that MAC to the peer's data IP.
flanneld writes the lease to /run/flannel/subnet.env; the lab writes the same file per
host under its state dir, and the inventory points netrun there.
"""

from __future__ import annotations

from netrun.errors import NetrunError
from netrun.lab.network import link_exists
from netrun.lab.plan import OVERLAY_MTU, VXLAN_ID, VXLAN_PORT, LabHost, LabPlan
from netrun.lab.system import ip_json, run

DEVICE = "flannel.1"


def ensure_device(host: LabHost) -> str:
    """flannel.1 on this host (created if missing); returns its VTEP MAC address."""
    ns = host.namespace
    if not link_exists(DEVICE, ns):
        run(
            [
                "ip",
                "-n",
                ns,
                "link",
                "add",
                DEVICE,
                "type",
                "vxlan",
                "id",
                str(VXLAN_ID),
                "local",
                host.data_ip,
                "dev",
                "data0",
                "dstport",
                str(VXLAN_PORT),
                "nolearning",
            ]
        )
    run(["ip", "-n", ns, "link", "set", DEVICE, "mtu", str(OVERLAY_MTU), "up"])
    run(["ip", "-n", ns, "addr", "replace", f"{host.lease_gateway}/32", "dev", DEVICE])
    info = ip_json("link", "show", "dev", DEVICE, netns=ns)
    if not info or "address" not in info[0]:
        raise NetrunError(f"{host.name}: {DEVICE} has no MAC address after creation")
    return str(info[0]["address"])


def program_peers(host: LabHost, peers: list[tuple[LabHost, str]]) -> None:
    """Route, ARP and FDB entries to every peer's lease (replace = flanneld's NeighSet)."""
    ns = host.namespace
    for peer, mac in peers:
        run(
            [
                "ip",
                "-n",
                ns,
                "route",
                "replace",
                peer.lease,
                "via",
                peer.lease_gateway,
                "dev",
                DEVICE,
                "onlink",
            ]
        )
        run(
            [
                "ip",
                "-n",
                ns,
                "neigh",
                "replace",
                peer.lease_gateway,
                "lladdr",
                mac,
                "dev",
                DEVICE,
                "nud",
                "permanent",
            ]
        )
        run(
            [
                "bridge",
                "-n",
                ns,
                "fdb",
                "replace",
                mac,
                "dev",
                DEVICE,
                "dst",
                peer.data_ip,
                "self",
                "permanent",
            ]
        )


def allow_forwarding(lab: LabPlan, host: LabHost) -> None:
    """flanneld's FORWARD accepts for the overlay network (dockerd sets policy DROP)."""
    net = lab.overlay_network
    nsenter = ["nsenter", f"--net=/run/netns/{host.namespace}"]
    run([*nsenter, "sysctl", "-qw", "net.ipv4.ip_forward=1"])
    for direction in ("-s", "-d"):
        rule = ["FORWARD", direction, net, "-j", "ACCEPT"]
        if run([*nsenter, "iptables", "-w", "-C", *rule], check=False).returncode != 0:
            run([*nsenter, "iptables", "-w", "-A", *rule])


def write_subnet_env(lab: LabPlan, host: LabHost) -> None:
    """The file flanneld writes (/run/flannel/subnet.env), here one per host."""
    host.subnet_env.parent.mkdir(parents=True, exist_ok=True)
    host.subnet_env.write_text(
        f"FLANNEL_NETWORK={lab.overlay_network}\n"
        f"FLANNEL_SUBNET={host.bip}\n"
        f"FLANNEL_MTU={OVERLAY_MTU}\n"
        "FLANNEL_IPMASQ=false\n"
    )


def ensure_overlay(lab: LabPlan) -> None:
    """Every host's flannel.1 and its view of every peer, plus subnet.env files."""
    macs = {host.name: ensure_device(host) for host in lab.hosts}
    for host in lab.hosts:
        peers = [(peer, macs[peer.name]) for peer in lab.hosts if peer is not host]
        program_peers(host, peers)
        allow_forwarding(lab, host)
        write_subnet_env(lab, host)
