"""The emulated lab: hosts as network namespaces with sshd, a shaped data plane, and
optionally one Docker daemon per host with a Flannel-style VXLAN overlay.

`netrun lab up|down|status` call these; they never print (progress goes to a callback).
"""

from __future__ import annotations

from netrun.lab.core import HostStatus, LabStatus, down, status, up
from netrun.lab.plan import LabConfig, LabHost, LabPlan, host_name, plan, rate_mbps

__all__ = [
    "HostStatus",
    "LabConfig",
    "LabHost",
    "LabPlan",
    "LabStatus",
    "down",
    "host_name",
    "plan",
    "rate_mbps",
    "status",
    "up",
]
