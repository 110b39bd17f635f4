"""The emulated lab: hosts as network namespaces with sshd, a shaped data plane, and
optionally one Docker daemon per host with a Flannel-style VXLAN overlay.

`netrun lab up|down|status|inventory` call these; they never print (progress goes to a callback).
"""

from __future__ import annotations

from netrun.lab.core import (
    HostStatus,
    LabStatus,
    down,
    export_inventory,
    inventory_text,
    status,
    up,
)
from netrun.lab.plan import LabConfig, LabHost, LabPlan, host_name, plan, rate_mbps
from netrun.lab.sharing import release
from netrun.lab.state import InventoryFile

__all__ = [
    "HostStatus",
    "InventoryFile",
    "LabConfig",
    "LabHost",
    "LabPlan",
    "LabStatus",
    "down",
    "export_inventory",
    "host_name",
    "inventory_text",
    "plan",
    "rate_mbps",
    "release",
    "status",
    "up",
]
