"""`netrun lab ACTION`: each action its own subcommand with its own help and options, so
`netrun lab up --help` says what up takes and no more.

Split from netrun.cli.parser (the other subcommands) to keep that module about them.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from netrun.lab.plan import CNIS, DATA_MTU, K8S_VERSION, SWITCH_MTU

#: Each action with the line `netrun lab --help` shows for it.
ACTIONS = {
    "up": "bring the lab up (or change a running one): network namespaces with sshd, "
    "iperf3 and, with --docker, a Docker daemon and an overlay per host",
    "down": "take the lab down; only this checkout's share while another checkout's "
    "inventory still uses it (--all: the whole lab)",
    "status": "the lab's hosts, addresses, rate, Docker and the inventories it wrote",
    "inventory": "print the lab's inventory (or write it with -o)",
    "netperf": "build netperf and netserver from --netperf-src into the cache lab up uses",
    "turncat": "build STUNner's turncat from the Go module proxy into the cache lab up uses "
    "(turn_client: turncat)",
    "flanneld": "build flanneld from the Go module proxy into the cache lab up --docker uses",
    "k8s-netperf": "build k8s-netperf (its modules from the Go module proxy) into the lab's "
    "cache; with --serve, ready the running k8s lab for it (its image, node labels)",
}
PREFIX_RULE = (
    "namespace and bridge name prefix: 'nr' plus up to 4 lowercase letters or digits "
    "(nr, nrb, nrt5); a second lab beside one needs its own"
)


def _state_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=Path("/run/netrun-lab"),
        help="the lab's own files (/run/netrun-lab); a second lab beside it needs its own, "
        "and its own --prefix and --net-index",
    )


def _inventory(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--inventory",
        type=Path,
        default=Path("inventories/local.yaml"),
        help=f"this checkout's inventory of the lab: {what} (inventories/local.yaml)",
    )


def _netperf_src(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--netperf-src",
        type=Path,
        help="a clone (or bundle) of github.com/HewlettPackard/netperf: build netperf and "
        "netserver (cached by commit) for tool: netperf on the lab's hosts",
    )


def _up(up: argparse.ArgumentParser) -> None:
    up.add_argument("--hosts", type=int, default=3, help="number of hosts (3)")
    up.add_argument(
        "--rate", default="1gbit", help="data-plane shaping rate (tc tbf), or none: unshaped"
    )
    up.add_argument(
        "--host-rate",
        action="append",
        default=[],
        metavar="HOST=RATE",
        help="one host's link at its own rate, both ways (e.g. charlie=20mbit: a constrained "
        "TURN relay); repeatable",
    )
    up.add_argument(
        "--mtu",
        type=int,
        default=DATA_MTU,
        metavar="BYTES",
        help=f"every host's data-link (NIC) MTU ({DATA_MTU}; up to {SWITCH_MTU}, jumbo "
        "frames: the switch carries them); with --k8s the CNI's pod MTU follows it",
    )
    up.add_argument("--docker", action="store_true", help="a Docker daemon and overlay per host")
    _state_dir(up)
    up.add_argument("--prefix", default="nr", help=PREFIX_RULE)
    up.add_argument(
        "--net-index", type=int, default=0, help="address block (0-255; 0-15 with --docker)"
    )
    _inventory(up, "where up writes it")
    up.add_argument(
        "--login-cost",
        type=float,
        default=0.0,
        metavar="S",
        help="seconds each SSH command's shell spends in an rc file, as on real hosts "
        "(the benchmark lab uses 0.1)",
    )
    up.add_argument(
        "--freeflow-src",
        type=Path,
        help="a clone (or bundle) of github.com/microsoft/Freeflow: build and use the real "
        "FreeFlow router instead of the stand-in (with --docker; cached by commit)",
    )
    up.add_argument(
        "--iperf3",
        metavar="VERSION",
        help="give every host this iperf3 release (a tag such as 3.5, 3.9, 3.16), built "
        "from --iperf3-src once and cached; the inventory's netrun_iperf3 names it",
    )
    up.add_argument(
        "--iperf3-src",
        type=Path,
        help="a clone (or bundle) of github.com/esnet/iperf with its tags, for --iperf3 "
        "(default: $NETRUN_IPERF3_SRC)",
    )
    up.add_argument(
        "--k8s",
        action="store_true",
        help="a real Kubernetes cluster whose nodes are the hosts (kubelet and containerd "
        "in each), built once from the Go module proxy and cached; lab status names its "
        "kubeconfig",
    )
    up.add_argument(
        "--k8s-version",
        default=K8S_VERSION,
        metavar="VERSION",
        help=f"the Kubernetes release --k8s builds ({K8S_VERSION})",
    )
    up.add_argument(
        "--cni",
        default="bridge",
        choices=list(CNIS),
        help="the cluster's pod network: bridge (one subnet per node, routed over the "
        "data links; its MTU, --mtu's, in ConfigMap kube-system/netrun-cni) or flannel "
        "(flanneld's VXLAN, pod MTU --mtu - 50; ConfigMap kube-flannel/kube-flannel-cfg)",
    )
    _netperf_src(up)


def _k8s_netperf(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--k8s-netperf-src",
        type=Path,
        help="a clone (or bundle) of github.com/cloud-bulldozer/k8s-netperf holding the "
        "release's tag (the Go module proxy refuses that module; it serves its dependencies)",
    )
    parser.add_argument(
        "--k8s-netperf-version", help="the release to build (a tag such as v0.1.43; the default)"
    )
    parser.add_argument(
        "--serve",
        action="store_true",
        help="also serve its image to the nodes of the k8s lab at --state-dir and label its "
        "nodes as k8s-netperf picks them (worker role; netperf=client, netperf=server)",
    )
    parser.add_argument("--client", default="alpha", help="the client's node (alpha)")
    parser.add_argument("--server", default="bravo", help="the server's node (bravo)")
    _state_dir(parser)


def add(sub: Any, parser_class: type[argparse.ArgumentParser], help_text: str) -> None:
    """`lab` and its actions, on the command parser's subparsers ``sub``."""
    lab = sub.add_parser(
        "lab",
        help=help_text,
        description=f"{help_text}. The lab's prefix (--prefix of up) is 'nr' plus up to 4 "
        "lowercase letters or digits.",
    )
    actions = lab.add_subparsers(
        dest="action", required=True, parser_class=parser_class, metavar="ACTION",
        help="netrun lab ACTION --help: its own options",
    )  # fmt: skip
    made = {
        name: actions.add_parser(name, help=text, description=text)
        for name, text in ACTIONS.items()
    }
    _up(made["up"])
    _state_dir(made["down"])
    _inventory(made["down"], "whose share down lets go of")
    made["down"].add_argument(
        "--all",
        action="store_true",
        help="remove the lab even while other checkouts' inventories use it",
    )
    _state_dir(made["status"])
    _state_dir(made["inventory"])
    made["inventory"].add_argument(
        "-o", "--output", type=Path, help="write the inventory to this file instead of stdout"
    )
    _netperf_src(made["netperf"])
    made["turncat"].add_argument(
        "--turncat-version",
        help="the STUNner release to build (a tag such as v1.2.1; default: the one netrun's "
        "TURN figures were compared with)",
    )
    made["flanneld"].add_argument(
        "--flannel-version",
        help="the Flannel release to build (a tag such as v0.28.10; default: the one the lab runs)",
    )
    _k8s_netperf(made["k8s-netperf"])
