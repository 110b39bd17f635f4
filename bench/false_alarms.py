#!/usr/bin/env python3
"""The nightly's false-alarm rate: N nights of an unchanged link under the crontab line.

Brings up a 3-host lab of its own (1 Gbit/s tbf data links, as the test labs), then runs
docs/user-guide/nightly.md's crontab line N times in a row (tests/integration/nightly.py:
`env -i`, cron's PATH, `-qq --tag nightly --baseline last --prometheus --junit`, a log), on
the nightly scenario there (TCP both ways, UDP at 300M, ping; 3 repeats of 2 s). Nothing
changes between nights, so every exit 3 is a false alarm. Prints one line per night and a
summary (with the machine's load, which the verdicts must ride out) and, with --json,
writes the figures. Run as root: `python3 bench/false_alarms.py --nights 20`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from netrun.lab import core as netrun_lab_core  # noqa: E402
from netrun.lab import plan as netrun_lab_plan  # noqa: E402
from tests.integration.nightly import cron_night, write_nightly_scenario  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nights", type=int, default=20)
    ap.add_argument("--prefix", default="nrfa", help="the bench lab's name prefix")
    ap.add_argument("--net-index", type=int, default=4, help="the bench lab's address block")
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--keep", action="store_true", help="keep the work folder (its log)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="nrfalse-"))
    cfg = netrun_lab_plan.LabConfig(
        hosts=3,
        prefix=args.prefix,
        net_index=args.net_index,
        state_dir=work / "state",
        inventory=work / "inventory.yaml",
    )
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    nights = []
    try:
        status = netrun_lab_core.up(cfg)
        if not status.ok:
            print(f"lab not up: {status.problems()}", file=sys.stderr)
            return 1
        scenario = write_nightly_scenario(work)
        for i in range(1, args.nights + 1):
            load = os.getloadavg()[0]
            night = cron_night(work, scenario, cfg.inventory)
            shown = ", ".join(
                f"{v['test']} {v['verdict']}"
                + (f" ({v['confirmation']})" if v.get("confirmation") else "")
                for v in night.verdicts
                if v.get("verdict") not in ("ok", "new")
            )
            print(
                f"night {i}: exit {night.code} in {night.seconds:.0f} s, load {load:.1f}"
                + (f" ({shown})" if shown else ""),
                flush=True,
            )
            nights.append(
                {
                    "exit": night.code,
                    "seconds": night.seconds,
                    "load": load,
                    "verdicts": night.verdicts,
                }
            )
    finally:
        netrun_lab_core.down(cfg.state_dir)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"kept {work}")
    compared = len(nights) - 1  # the first night has no baseline
    alarms = sum(1 for n in nights if n["exit"] == 3)
    noisy = sum(1 for n in nights for v in n["verdicts"] if v.get("verdict") == "noisy")
    # a regression that would have paged, which a second measurement did not repeat
    cleared = sum(1 for n in nights if any(v.get("confirmation") == "not confirmed"
                                           for v in n["verdicts"]))  # fmt: skip
    loads = sorted(n["load"] for n in nights)
    print(
        f"{started}: {alarms} exit 3 in {compared} compared nights of an unchanged link "
        f"({len(nights)} runs, {noisy} noisy verdicts named; {cleared} nights would have "
        f"paged on their first measurement, which a second did not repeat), "
        f"load {loads[0]:.1f}-{loads[-1]:.1f}"
        if nights
        else "no night ran"
    )
    if args.json:
        args.json.write_text(json.dumps({"started": started, "nights": nights}, indent=1))
    return 0 if nights and not alarms else 1


if __name__ == "__main__":
    sys.exit(main())
