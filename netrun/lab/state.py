"""state_dir/lab.json: what a lab made, and every inventory file it wrote.

Written before anything is created, so `down` removes a half-made lab too and never needs
the flags `up` was given. One lab may serve several checkouts: each `up` that asked for
the same lab with another ``--inventory`` registers that file, so `down` and `status`
know every inventory the lab wrote, and which `up` wrote it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netrun.errors import NetrunError
from netrun.lab import inventory
from netrun.lab.plan import LabPlan

STATE_VERSION = 1
#: How an inventory file came to be: a `lab up` asked for it (that checkout uses the lab),
#: or `lab inventory -o` exported it (a copy: it keeps no lab up).
BY_UP, BY_EXPORT = "up", "export"


@dataclass(frozen=True)
class InventoryFile:
    """One inventory file the lab wrote, and what became of it (inventory.WRITTEN, ...)."""

    path: Path
    by: str
    state: str

    @property
    def in_use(self) -> bool:
        """A checkout still uses the lab through this file: `up` wrote it and it is there
        (perhaps edited, but still naming this lab)."""
        return self.by == BY_UP and self.state in (inventory.WRITTEN, inventory.EDITED)


def load(state_dir: Path) -> dict[str, Any] | None:
    path = state_dir / "lab.json"
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise NetrunError(f"{path} is unreadable ({err}): remove it and the lab by hand") from err
    if not isinstance(data, dict) or data.get("version") != STATE_VERSION:
        raise NetrunError(f"{path} is not a netrun lab state file (version {STATE_VERSION})")
    return data


def save(lab: LabPlan, data: dict[str, Any]) -> None:
    path = lab.state_file
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)


def record(lab: LabPlan) -> dict[str, Any]:
    """The state written before anything is made: every name `down` will remove."""
    return {
        "version": STATE_VERSION,
        "config": lab.config.to_json(),
        "namespaces": [h.namespace for h in lab.hosts] + [lab.switch_namespace],
        "root_links": [h.mgmt_veth for h in lab.hosts] + [lab.mgmt_bridge],
        "hosts": {
            h.name: {"namespace": h.namespace, "mgmt_ip": h.mgmt_ip, "data_ip": h.data_ip}
            for h in lab.hosts
        },
        "pids": {"sshd": {}, "dockerd": {}},
        "inventories": [],
    }


def records(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The inventory records, in the order written; a state from before they were kept
    names only the config's inventory (no hash: its header's state dir vouches for it)."""
    if "inventories" not in data:
        data["inventories"] = [{"path": data["config"]["inventory"], "by": BY_UP}]
    found: list[dict[str, Any]] = data["inventories"]
    return found


def files(data: dict[str, Any], state_dir: Path) -> tuple[InventoryFile, ...]:
    return tuple(
        InventoryFile(Path(r["path"]), r.get("by", BY_UP), inventory.state_of(r, state_dir))
        for r in records(data)
    )


def users(data: dict[str, Any], state_dir: Path) -> list[Path]:
    """The inventories of the checkouts that use the lab (their `up` wrote them)."""
    return [f.path for f in files(data, state_dir) if f.in_use]


def register(data: dict[str, Any], written: dict[str, str], by: str) -> bool:
    """Note (or renew) the record of an inventory file; True when it is new to the lab."""
    rows = records(data)
    for row in rows:
        if row["path"] == written["path"]:
            row["sha256"] = written["sha256"]
            if by == BY_UP:  # an exported copy that `up` now asks for becomes a user's
                row["by"] = BY_UP
            return False
    rows.append({**written, "by": by})
    return True


def forget(data: dict[str, Any], path: Path) -> None:
    data["inventories"] = [r for r in records(data) if r["path"] != str(path)]
