"""The preflight: is every host a scenario needs ready to measure, without measuring?

``netrun check`` connects to each host (SSH and its host key), tries become where the
inventory asks for it, looks for the tools each mode and role needs (netrun.run.needs) and
their versions, the docker engine and the images, the data NIC's speed and MTU, and the
clock offset (netrun.hosts.clock). Each host gets one verdict with its problems, each naming its
fix, so a lab engineer can fix everything before a night's run rather than one failure per
run. Nothing is started on a host and nothing is changed there.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from netrun.cleanup.sweep import close_all
from netrun.core.options import option_for
from netrun.core.spec import DEFAULT_TOOL
from netrun.errors import NetrunError
from netrun.hosts import clock, clock_reading
from netrun.hosts.connect import connect_all
from netrun.hosts.group import on_each
from netrun.hosts.host import Host
from netrun.hosts.ssh.settings import SSHSettings
from netrun.run.needs import Needs, plan_needs, probe_host, program
from netrun.run.plan import TestPlan, plan_test
from netrun.tools import docker as dk
from netrun.tools import get_tool
from netrun.tools.facts import PROBED

if TYPE_CHECKING:
    from netrun.core.spec import TestSpec
    from netrun.inventory.model import Inventory

#: A clock further off than this (beyond the reading's own uncertainty) is not ready:
#: one-way latency (iperf2) would be off by as much.
CLOCK_LIMIT_S = 0.5
CLOCK_READS = 3


@dataclass
class HostCheck:
    """One host's preflight: what was found, and what is wrong with the fix for each."""

    name: str
    found: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def line(self) -> str:
        if self.ok:
            return f"{self.name}: ok: {', '.join(self.found)}"
        return f"{self.name}: FAIL: {'; '.join(self.problems)}"


def plan(
    inventory: Inventory, tests: Sequence[TestSpec] | None, limit: str | None = None
) -> tuple[list[Host], Needs, dict[str, list[str]]]:
    """The hosts to check, the tools each needs, and the images each needs.

    Without a scenario every inventory host (within ``limit``) is checked for the default
    tool's programs (DEFAULT_TOOL: iperf3), what the default mode (baremetal) runs.
    """
    allowed = {h.name for h in inventory.select(limit)} if limit else None
    if tests is None:
        hosts = [h for h in inventory.hosts.values() if allowed is None or h.name in allowed]
        tool = get_tool(DEFAULT_TOOL)
        wanted = list(dict.fromkeys(p for r in ("client", "server") for p in tool.programs(r)))
        needs = Needs(tools={h.name: list(wanted) for h in hosts})
        needs.know(tool.installs)
        why = "baremetal (the default mode)"
        needs.needed_by = {(h.name, p): why for h in hosts for p in wanted}
        return hosts, needs, {}
    if allowed is not None:
        tests = [t for t in tests if all(h in allowed for h in t.hosts)]
    names = list(dict.fromkeys(n for t in tests for n in t.hosts))
    plans = [plan_test(t) for t in tests]
    return [inventory.get(n) for n in names], plan_needs(plans), images_of(plans, inventory)


def images_of(tests: Iterable[TestPlan], inventory: Inventory) -> dict[str, list[str]]:
    """host name -> the container images its tests' modes run there (``image``,
    ``router_image``...), read per host as the modes read them."""

    found: dict[str, dict[str, None]] = {}
    for plan in tests:
        test, mode, table = plan.spec, plan.mode, plan.options
        keys = [o.name for o in mode.options if o.name == "image" or o.name.endswith("_image")]
        for name in dict.fromkeys(test.hosts):
            host = inventory.get(name)
            for key in keys:
                value = option_for(test, host, key, table)
                if value:
                    found.setdefault(name, {})[str(value)] = None
    return {name: list(images) for name, images in found.items()}


def check_hosts(
    hosts: Sequence[Host], needs: Needs, images: Mapping[str, list[str]], settings: SSHSettings
) -> list[HostCheck]:
    """Every host's preflight, in the order given; hosts are checked in parallel."""
    checks = {h.name: HostCheck(h.name) for h in hosts}
    connected = connect_all(hosts, settings)
    for name, err in connected.failed.items():
        checks[name].problems.append(_strip(name, err))
    ready = [h for h in hosts if h.name in connected.succeeded]
    try:
        done = on_each(
            ready,
            lambda h: _check_host(h, needs, images.get(h.name, []), checks[h.name]),
            deadline=120,
        )
        for name, err in done.failed.items():
            checks[name].problems.append(_strip(name, err))
    finally:
        close_all(ready)
    return [checks[h.name] for h in hosts]


def _strip(name: str, err: object) -> str:
    text = str(err)
    return text[len(name) + 2 :] if text.startswith(f"{name}: ") else text


def _check_host(host: Host, needs: Needs, images: list[str], out: HostCheck) -> None:
    if host.connection == "local":
        out.found.append("local connection (no SSH)")
    else:
        out.found.append(f"ssh {host.user or 'as controller user'}@{host.address}, host key ok")
    if host.become:
        res = host.run(["id", "-u"], timeout=30, sudo=True, check=False)
        if res.ok and res.stdout.strip() == "0":
            out.found.append("become ok")
        else:
            out.problems.append(
                f"become (sudo) failed: {(res.stderr or res.stdout).strip()[:160]}; allow "
                f"{host.user or 'the user'} passwordless sudo or set ansible_become_password"
            )
    facts = probe_host(host, needs)
    try:
        needs.check(host, facts)
    except NetrunError as exc:
        out.problems.append(_strip(host.name, exc))
    wanted = needs.tools.get(host.name, [])
    missing = needs.missing.get(host.name, [])
    for name in wanted:
        if name in missing:
            continue
        if name == PROBED:  # the probe read its version
            if version := facts.version(name):
                out.found.append(f"{name} {version}")
            continue
        out.found.append(_version(host, name, needs))
    if "docker" in wanted and "docker" not in missing:
        _check_docker(host, images, out)
    _check_nic(host, facts, out)
    _check_clock(host, out)


def _version(host: Host, tool: str, needs: Needs) -> str:
    """``tool VERSION`` from the tool's own first line (the tool alone when it says none)."""
    found = needs.programs.get(tool)  # as the host context reads it
    flags = (found.version_flag if found else "--version").split()
    res = host.run([program(host, tool, needs.programs), *flags], timeout=30, check=False)
    text = (res.stdout or res.stderr).strip().splitlines()
    return f"{tool} ({text[0].strip()[:60]})" if text else tool


def _check_docker(host: Host, images: list[str], out: HostCheck) -> None:

    docker = str(host.vars.get("netrun_docker") or "docker")
    res = host.run(dk.version_command(docker), timeout=30, check=False)
    try:
        engine = dk.parse_version(res.stdout, res.stderr, res.exited, host.name)
    except NetrunError as exc:
        out.problems.append(_strip(host.name, exc))
        return
    out.found.append(f"docker engine {engine.server_version}")
    for image in images:
        res = host.run(dk.image_id_command(image, docker), timeout=30, check=False)
        if dk.parse_image_id(res.stdout) is None:
            out.problems.append(
                f"image {image} is not on the host; docker pull {shlex.quote(image)} there "
                "(or docker load it, or set image_archive)"
            )
        else:
            out.found.append(f"image {image}")


def _check_nic(host: Host, facts: Any, out: HostCheck) -> None:
    nic = facts.nic
    for problem in facts.problems:
        if PROBED not in problem:  # the tool check above names it with its fix
            out.problems.append(f"{problem}; set netrun_data_ip or netrun_iface")
    if nic.iface is None:
        return
    speed = host.link_speed_mbps or nic.speed_mbps
    shown = f"{speed:g} Mbit/s" if speed else "speed unknown (set netrun_link_speed_mbps)"
    out.found.append(f"{nic.iface} {shown}, MTU {nic.mtu if nic.mtu else 'unknown'}")


def _check_clock(host: Host, out: HostCheck) -> None:
    est = clock.estimate(clock_reading.samples(host, CLOCK_READS))
    if est.offset_s is None:
        out.found.append(f"clock offset unavailable ({est.reason or 'no reading'})")
        return
    shown = f"clock {est.offset_s * 1000:+.1f} ms ±{(est.uncertainty_s or 0) * 1000:.1f} ms"
    if abs(est.offset_s) - (est.uncertainty_s or 0) > CLOCK_LIMIT_S:
        out.problems.append(
            f"{shown} from the controller; sync it (chrony or systemd-timesyncd) or one-way "
            "latency is off by as much"
        )
    else:
        out.found.append(shown)
