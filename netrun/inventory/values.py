"""Inventory variable values: which ones netrun reads, what a good one looks like, which are secret.

Kept apart from the loaders so every source format (YAML, INI, JSON, script) is checked alike.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Collection, Iterable
from typing import Any

from netrun.errors import closest

#: netrun's own inventory variables and their defaults (None: no default).
CORE_VARS: dict[str, Any] = {
    "netrun_data_ip": None,  # data-plane address; defaults to the management address
    "netrun_iface": None,  # data-plane interface name
    "netrun_link_speed_mbps": None,  # nominal link speed, for efficiency figures
    "netrun_known_hosts": None,  # known_hosts file for this host's SSH key
    "netrun_iperf3": "iperf3",  # iperf3 binary name or path on the host
    "netrun_remote_tmp": "/tmp",  # scratch directory on the host
    "netrun_iperf2": "iperf",  # iperf 2 (tool: iperf2)
    "netrun_turnserver": "turnserver",  # coturn's server (mode: turn's managed relay)
    "netrun_python": "python3",  # runs netrun's TURN tunnel on a client host (mode: turn)
    "netrun_netperf": "netperf",  # netperf client (tool: netperf)
    "netrun_netserver": "netserver",  # netperf server (tool: netperf)
    "netrun_turncat": None,  # STUNner's turncat on a client host, used instead (mode: turn)
}

_PORT_KEYS = ("ansible_port", "ansible_ssh_port")
_ADDRESS_KEYS = ("ansible_host", "ansible_ssh_host", "netrun_data_ip")
_STRING_KEYS = (
    "ansible_user ansible_ssh_user ansible_ssh_private_key_file ansible_private_key_file "
    "ansible_password ansible_ssh_pass ansible_ssh_password ansible_become_method "
    "ansible_become_user ansible_become_password ansible_become_pass netrun_known_hosts"
).split()
_COMMAND_KEYS = (
    "netrun_iperf3",
    "netrun_iperf2",
    "netrun_turnserver",
    "netrun_python",
    "netrun_turncat",
    "netrun_netperf",
    "netrun_netserver",
)
_BOOLISH = {"yes", "no", "true", "false", "on", "off", "1", "0"}  # what Host.become reads
_IFACE = re.compile(r"^[A-Za-z0-9_.:@-]{1,15}$")
_LABEL = r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
_HOSTNAME = re.compile(rf"^(?=.{{1,253}}$){_LABEL}(?:\.{_LABEL})*\.?$")
_COMMAND = re.compile(r"^[A-Za-z0-9_./+][A-Za-z0-9_./+-]*$")  # no leading "-"
_USER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}$")
_ABS_PATH = re.compile(r"^/[A-Za-z0-9_./+-]*$")
_HOSTPORT = re.compile(r"^((?:[^:\[\]]|\[[^\]]*\])+):([0-9]+)$")
_BRACKETED_PORT = re.compile(r"^\[([0-9A-Fa-f:.]+)\]:([0-9]+)$")


def split_port(pattern: str) -> tuple[str, int | None]:
    """Separate a trailing :port from a host name, as Ansible does ([v6]:port for IPv6)."""
    for regex in (_BRACKETED_PORT, _HOSTPORT):
        match = regex.match(pattern)
        if match and (regex is _HOSTPORT or is_ip(match.group(1))):
            return match.group(1), int(match.group(2))
    return pattern, None


def is_ip(value: str) -> bool:
    """An IP address; an IPv6 zone (fe80::1%eth0) must be an interface name or number."""
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    _, _, zone = value.partition("%")
    return not zone or bool(_IFACE.fullmatch(zone))


def _is_address(value: Any) -> bool:
    return isinstance(value, str) and (is_ip(value) or bool(_HOSTNAME.fullmatch(value)))


#: Variables whose values are passwords: never printed, logged or saved.
SECRET_KEYS = frozenset(
    {
        "ansible_password",
        "ansible_ssh_pass",
        "ansible_ssh_password",
        "ansible_become_password",
        "ansible_become_pass",
    }
)


def masked(values: dict[str, Any]) -> dict[str, Any]:
    """A copy of host variables with every password replaced by ****."""
    return {k: ("****" if k in SECRET_KEYS and v is not None else v) for k, v in values.items()}


def _show(value: Any, width: int = 60) -> str:
    """A value for a one-line message: repr, shortened (a hostile value can be megabytes)."""
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def check_value(key: str, value: Any) -> str | None:
    """The problem with one variable's value and how to fix it, or None when it is fine."""
    if value is None:
        return None
    got = _show(value)
    if key in _PORT_KEYS:  # Ansible also takes the port as a string of digits
        number = value if isinstance(value, int) else str(value).strip()
        if not isinstance(number, int):  # ASCII digits only: int("²") raises
            number = int(number) if number.isascii() and number.isdigit() and len(number) < 9 else 0
        ok = not isinstance(value, bool) and 1 <= number <= 65535
        return None if ok else f"{key} must be a port number 1-65535, got {got}; e.g. {key}: 22"
    if key in _ADDRESS_KEYS:
        if _is_address(value):
            return None
        return f"{key} must be an IP address or host name, got {got}; e.g. {key}: 10.0.0.5"
    if key in _STRING_KEYS and not isinstance(value, str):
        if key in SECRET_KEYS:  # never echo a password, even a mistyped one
            return f"{key} must be a string; put the value in quotes"
        return f'{key} must be a string, got {got}; quote it: {key}: "{_show(value, 40)}"'
    if key == "ansible_become":
        ok = isinstance(value, bool) or value in (0, 1) or str(value).lower() in _BOOLISH
        return None if ok else f"ansible_become must be true or false, got {got}"
    if key == "netrun_link_speed_mbps":
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        ok = ok and 0 < value <= 10_000_000  # also refuses nan, inf and 400-digit integers
        return None if ok else f"{key} must be a number > 0 and <= 10000000, got {got}; e.g. 1000"
    if key == "netrun_iface":
        if isinstance(value, str) and _IFACE.fullmatch(value):
            return None
        return f"{key} must be an interface name (1-15 of A-Z a-z 0-9 _ . : @ -), got {got}"
    if key in _COMMAND_KEYS and not (isinstance(value, str) and _COMMAND.fullmatch(value)):
        return (
            f"{key} must be a command name or path (A-Z a-z 0-9 _ . / + -, not starting with -),"
            f" got {got}"
        )
    if key == "ansible_become_user" and not _USER.fullmatch(value):
        return f"{key} must be a user name (A-Z a-z 0-9 _ . -), got {got}; e.g. {key}: root"
    if key == "netrun_remote_tmp" and not (isinstance(value, str) and _ABS_PATH.fullmatch(value)):
        return f"{key} must be an absolute path (A-Z a-z 0-9 _ . / + -), got {got}"
    return None


def check_netrun_vars(sources: Iterable[Any], extra: Collection[str] = ()) -> list[str]:
    """Problems for netrun_* keys that neither netrun nor the scenario's modes know."""
    known = set(CORE_VARS) | {e if e.startswith("netrun_") else f"netrun_{e}" for e in extra}
    problems = []
    for source in sources:
        for key in source.values:
            if isinstance(key, str) and key.startswith("netrun_") and key not in known:
                close = closest(key[7:], [k[7:] for k in known])  # compare past "netrun_"
                hint = f"; did you mean 'netrun_{close}'?" if close else ""
                hint = hint or f"; known: {', '.join(sorted(known))}"
                problems.append(f"{source.where}: unknown variable '{key}'{hint}")
    return problems
