"""The lab's OCI runtime: runc behind a wrapper that drops CAP_SYS_RESOURCE.

The lab machine's capability bounding set lacks CAP_SYS_RESOURCE, so a privileged
container (FreeFlow's router) fails with "unable to apply caps" under plain runc. The
Docker lab's daemons (--default-runtime) and the Kubernetes lab's containerd run
``nr-runc`` (lab_assets: a sh front that hands every call to /usr/sbin/runc) instead; it
asks ``nr-runc-caps`` (python3) to rewrite only a spec that names that capability.
"""

from __future__ import annotations

import os
from pathlib import Path

from netrun.lab.images import ASSETS

#: The runtime's name in dockerd's --add-runtime, and its file in the lab's state folder.
WRAPPER_NAME = "nr-runc"
#: Its rewrite helper, beside it (nr-runc finds it by its own path).
CAPS_NAME = "nr-runc-caps"


def install(state_dir: Path) -> Path:
    """Put the wrapper and its helper in ``state_dir`` (each replaced whole, so a daemon
    that runs the old one meanwhile never reads half a file); the wrapper's path."""
    for name in (CAPS_NAME, WRAPPER_NAME):
        target = state_dir / name
        tmp = target.with_name(f".{name}.new")
        tmp.write_bytes((ASSETS / name).read_bytes())
        tmp.chmod(0o755)
        os.replace(tmp, target)
    return state_dir / WRAPPER_NAME
