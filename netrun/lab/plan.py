"""The lab's plan: config, host names and every address range, in one place.

Everything here is pure (no system calls), so the plan can be checked and tested
without root. The ranges avoid the ones reserved on the project's machines
(10.77/16, 10.78/16, 10.240/16, ``ceo-*`` namespaces, the ``ceomgmt`` bridge).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from netrun.errors import NetrunError

# -- the address plan (the only place that names a range) ---------------------------------
MGMT_NET = "10.201.{n}.0/24"  # root-namespace bridge .1, hosts .10+i
DATA_NET = "10.202.{n}.0/24"  # data plane behind the switch namespace, hosts .10+i
#: the Flannel network of one lab (base = 16 * net_index): flanneld leases each host a /24
#: of it (netrun.lab.overlay), and docker0 takes the lease
OVERLAY_NET = "10.244.{base}.0/20"
#: docker mode's network on one host: a Docker bridge network whose subnet the other hosts
#: route to via this host's data address (no overlay), as a routed lab network does
ROUTED_NET = "10.245.{lease}.0/24"
ROUTED_ALL = "10.245.{base}.0/20"  # every routed subnet of one lab (base = 16 * net_index)
ROUTED_NETWORK = "nr-routed"  # its Docker network name, and its bridge's
FIRST_HOST = 10
MAX_HOSTS = 200
MAX_DOCKER_HOSTS = 16
MAX_NET_INDEX = 255
MAX_DOCKER_NET_INDEX = 15
#: Kubernetes on the lab (netrun.lab.k8s): pod and service ranges of one lab, base 16 * n
POD_NET = "10.246.{base}.0/20"  # the cluster's pods (base = 16 * net_index)
POD_SUBNET = "10.246.{lease}.0/24"  # host i's pods (base + i); the last /24: services
MAX_K8S_HOSTS = 15  # the /20's last /24 is the service range
K8S_VERSION = "1.37.2"
CNIS = ("bridge", "flannel")

NATO = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike "
    "november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu"
).split()

_PREFIX = re.compile(r"^nr[a-z0-9]{0,4}$")
_RATE = re.compile(r"^(\d+(?:\.\d+)?)(bit|kbit|mbit|gbit|tbit)$")
_RATE_MBPS = {"bit": 1e-6, "kbit": 1e-3, "mbit": 1.0, "gbit": 1e3, "tbit": 1e6}


def host_name(index: int) -> str:
    """NATO names for the first 26 hosts, then node27, node28, ..."""
    return NATO[index] if index < len(NATO) else f"node{index + 1}"


#: ``--rate none``: the data plane is left unshaped (CPU-bound, as a fast cluster is).
UNSHAPED = "none"
#: The largest frame the lab's switch carries (its bridge and ports); hosts start at 1500.
SWITCH_MTU = 9000
#: The hosts' data0 MTU (their NICs'), ``--mtu``: 1500 as a NIC starts, up to the switch's
#: 9000 (the write-up's jumbo-frame case); IPv6 needs 1280.
DATA_MTU = 1500
MIN_DATA_MTU = 1280


def shaped(rate: str) -> bool:
    """False for ``none``: no tbf on data0, and no line rate in the inventory."""
    return rate.strip().lower() != UNSHAPED


def rate_mbps(rate: str) -> float:
    """Megabits per second of a tc rate such as ``1gbit`` or ``400mbit``."""
    match = _RATE.match(rate.strip().lower())
    if not match:
        raise NetrunError(f"bad lab rate {rate!r}: use a tc rate such as 1gbit or 400mbit")
    return float(match.group(1)) * _RATE_MBPS[match.group(2)]


#: LabConfig fields a running lab may switch (`up` rewrites what they touch).
SWITCHABLE = ("freeflow_src", "iperf3", "iperf3_src")


@dataclass(frozen=True)
class LabConfig:
    """What `netrun lab up` builds; saved in state_dir/lab.json so down/status need no flags."""

    hosts: int = 3
    rate: str = "1gbit"
    prefix: str = "nr"
    net_index: int = 0
    state_dir: Path = Path("/run/netrun-lab")
    inventory: Path = Path("inventories/local.yaml")
    docker: bool = False
    #: Seconds every SSH command's shell spends in its rc file before the command: 0 is a
    #: clean host; the benchmark lab takes 0.1, what real hosts' login rc files cost.
    login_cost: float = 0.0
    #: A FreeFlow clone or bundle: the lab builds the real router image from it (else the
    #: stand-in). Not part of the lab's identity: `up` may switch it on a running lab.
    freeflow_src: Path | None = None
    #: (host name, tc rate) pairs: that host's link, both ways, at its own rate
    #: (``--host-rate charlie=20mbit``: a constrained TURN relay).
    host_rates: tuple[tuple[str, str], ...] = ()
    #: An iperf3 release (a tag of https://github.com/esnet/iperf, e.g. "3.9") built from
    #: ``iperf3_src`` and given to every host as ``netrun_iperf3`` (None: the hosts' own).
    #: Not part of the lab's identity either: `up` may switch it on a running lab.
    iperf3: str | None = None
    iperf3_src: Path | None = None
    #: A Kubernetes cluster whose nodes are the lab's hosts (netrun.lab.k8s), built from
    #: the Go module proxy at ``k8s_version``, its pod network made by ``cni``.
    k8s: bool = False
    k8s_version: str = K8S_VERSION
    cni: str = "bridge"
    #: Every host's data0 MTU (``--mtu``); the switch carries frames up to SWITCH_MTU.
    mtu: int = DATA_MTU

    def rate_for(self, name: str) -> str:
        """The tc rate of host ``name``'s data link."""
        return dict(self.host_rates).get(name, self.rate)

    def problems(self) -> list[str]:
        """Every reason this config cannot be built, so all are reported at once."""
        found: list[str] = []
        limit = MAX_DOCKER_HOSTS if self.docker else MAX_HOSTS
        if self.k8s:
            limit = min(limit, MAX_K8S_HOSTS)
        if not 1 <= self.hosts <= limit:
            found.append(f"lab hosts must be 1..{limit}, got {self.hosts}")
        if not _PREFIX.match(self.prefix):
            found.append(
                f"lab prefix {self.prefix!r} must be 'nr' plus up to 4 lowercase letters/digits"
            )
        top = MAX_DOCKER_NET_INDEX if self.docker or self.k8s else MAX_NET_INDEX
        if not 0 <= self.net_index <= top:
            found.append(f"lab net_index must be 0..{top}, got {self.net_index}")
        if self.freeflow_src is not None and not self.docker:
            found.append("--freeflow-src needs --docker: FreeFlow runs in the hosts' Docker")
        if self.k8s and self.cni not in CNIS:
            found.append(f"--cni {self.cni!r}: the lab's cluster has {', '.join(CNIS)}")
        if self.k8s and self.cni == "flannel" and self.docker:
            found.append(
                "--cni flannel with --docker: both would make flannel.1 on every host; "
                "take one (the Docker lab's overlay, or the cluster's Flannel)"
            )
        if self.k8s and not re.fullmatch(r"1\.[0-9]+\.[0-9]+", self.k8s_version):
            found.append(f"--k8s-version {self.k8s_version!r}: give a release such as 1.37.2")
        if not MIN_DATA_MTU <= self.mtu <= SWITCH_MTU:
            found.append(
                f"--mtu {self.mtu}: the data links take {MIN_DATA_MTU}..{SWITCH_MTU} "
                "(the lab's switch carries up to 9000-byte frames)"
            )
        elif self.docker and self.mtu < DATA_MTU:
            found.append(
                f"--mtu {self.mtu} with --docker: the Docker lab's routed network (nr-routed) "
                f"is at {DATA_MTU}, so its data links need at least {DATA_MTU}"
            )
        if not 0 <= self.login_cost <= 5:
            found.append(f"lab login cost must be 0..5 s, got {self.login_cost:g}")
        names = {host_name(i) for i in range(max(0, min(self.hosts, limit)))}
        for name, _ in self.host_rates:
            if name not in names:
                found.append(f"--host-rate {name}: not a host of this lab ({self.hosts} hosts)")
        for rate in (self.rate, *(r for _, r in self.host_rates)):
            if not shaped(rate):
                continue
            try:
                rate_mbps(rate)
            except NetrunError as err:
                found.append(str(err))
        return found

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["state_dir"] = str(self.state_dir)
        data["inventory"] = str(self.inventory)
        data["freeflow_src"] = str(self.freeflow_src) if self.freeflow_src else None
        data["host_rates"] = dict(self.host_rates)
        data["iperf3_src"] = str(self.iperf3_src) if self.iperf3_src else None
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LabConfig:
        return cls(
            hosts=int(data["hosts"]),
            rate=str(data["rate"]),
            prefix=str(data["prefix"]),
            net_index=int(data["net_index"]),
            state_dir=Path(data["state_dir"]),
            inventory=Path(data["inventory"]),
            docker=bool(data.get("docker", False)),
            login_cost=float(data.get("login_cost", 0.0)),
            freeflow_src=Path(data["freeflow_src"]) if data.get("freeflow_src") else None,
            host_rates=tuple((str(k), str(v)) for k, v in (data.get("host_rates") or {}).items()),
            iperf3=str(data["iperf3"]) if data.get("iperf3") else None,
            iperf3_src=Path(data["iperf3_src"]) if data.get("iperf3_src") else None,
            k8s=bool(data.get("k8s", False)),
            k8s_version=str(data.get("k8s_version") or K8S_VERSION),
            cni=str(data.get("cni") or "bridge"),
            mtu=int(data.get("mtu") or DATA_MTU),
        )

    def differences(
        self, other: LabConfig, *, loose: tuple[str, ...] = SWITCHABLE
    ) -> list[tuple[str, Any, Any]]:
        """(field, this value, other's value) for every field of the lab's identity that
        differs. The inventory path is never part of it (one lab may write several), nor
        the fields in `loose` (the FreeFlow source may change on a running lab)."""
        mine, theirs = self.to_json(), other.to_json()
        skip = {"inventory", "state_dir", *loose}
        return [
            (key, mine[key], theirs[key])
            for key in mine
            if key not in skip and mine[key] != theirs[key]
        ]

    def same_lab(self, other: LabConfig) -> bool:
        """True when `other` describes the lab this one built (so `up` may repair it)."""
        return not self.differences(other)


@dataclass(frozen=True)
class LabHost:
    """One emulated host: its names, addresses and files, all derived from the config."""

    index: int
    name: str
    namespace: str
    mgmt_ip: str
    data_ip: str
    mgmt_veth: str  # root-namespace end of mgmt0, enslaved to the mgmt bridge
    switch_port: str  # switch-namespace end of data0
    dir: Path
    routed: str  # docker mode's routed container subnet, e.g. 10.245.16.0/24

    @property
    def bin_dir(self) -> Path:
        return self.dir / "bin"

    @property
    def freeflow_dir(self) -> Path:
        return self.dir / "freeflow"

    @property
    def remote_tmp(self) -> Path:
        """The host's own tmp for run folders (netrun_remote_tmp): lab hosts share this
        machine's /tmp, where one run's sweep would find every other lab's records."""
        return self.dir / "tmp"

    @property
    def docker_sock(self) -> Path:
        return self.dir / "docker.sock"

    @property
    def subnet_env(self) -> Path:
        """Where the host's flanneld writes its lease (its --subnet-file)."""
        return self.dir / "flannel" / "subnet.env"


@dataclass(frozen=True)
class LabPlan:
    """The whole lab derived from a config: names of every object it creates."""

    config: LabConfig
    hosts: tuple[LabHost, ...]

    @property
    def mgmt_bridge(self) -> str:
        return f"{self.config.prefix}mgmt"

    @property
    def mgmt_gateway(self) -> str:
        return _addr(MGMT_NET, 1, n=self.config.net_index)

    @property
    def switch_namespace(self) -> str:
        return f"{self.config.prefix}-switch"

    @property
    def switch_bridge(self) -> str:
        return "sw0"

    @property
    def overlay_network(self) -> str:
        return OVERLAY_NET.format(base=16 * self.config.net_index)

    @property
    def routed_network(self) -> str:
        return ROUTED_ALL.format(base=16 * self.config.net_index)

    @property
    def state_dir(self) -> Path:
        return self.config.state_dir

    @property
    def key_file(self) -> Path:
        return self.config.state_dir / "id_ed25519"

    @property
    def known_hosts(self) -> Path:
        return self.config.state_dir / "known_hosts"

    @property
    def state_file(self) -> Path:
        return self.config.state_dir / "lab.json"

    def host(self, name: str) -> LabHost:
        for host in self.hosts:
            if host.name == name:
                return host
        raise NetrunError(f"no lab host named {name!r}")


def _addr(template: str, last: int, **fields: int) -> str:
    """The address with last octet `last` inside the /24 that `template` names."""
    return template.format(**fields).split("/")[0].rsplit(".", 1)[0] + f".{last}"


def plan(config: LabConfig) -> LabPlan:
    """Names and addresses of everything `up` creates; raises on a config that cannot work."""
    problems = config.problems()
    if problems:
        raise NetrunError("; ".join(problems))
    n = config.net_index
    hosts = []
    for i in range(config.hosts):
        name = host_name(i)
        third = 16 * n + i
        hosts.append(
            LabHost(
                index=i,
                name=name,
                namespace=f"{config.prefix}-{name}",
                mgmt_ip=_addr(MGMT_NET, FIRST_HOST + i, n=n),
                data_ip=_addr(DATA_NET, FIRST_HOST + i, n=n),
                mgmt_veth=f"{config.prefix}m{i}",
                switch_port=f"p{i}",
                dir=config.state_dir / "hosts" / name,
                routed=ROUTED_NET.format(lease=third),
            )
        )
    return LabPlan(config=config, hosts=tuple(hosts))
