"""What flannel mode reads on a host where a real flanneld runs: the sections of its start
round trip and the per-repeat flanneld check, parsed from output captured on the lab
(tests/fixtures/flannel/capture.sh), and the scripts run for real with sh here."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from netrun.modes.docker.flannel import (
    gone_script,
    parse_subnet_env,
    parse_vtep,
    start_script,
)
from netrun.modes.docker.launch import sections

FIXTURES = Path(__file__).parents[3] / "fixtures" / "flannel"


def test_the_start_sections_give_the_lease_the_vtep_and_flanneld() -> None:
    found = sections((FIXTURES / "start-sections.txt").read_text())
    env = parse_subnet_env(found["lease"])
    assert env == {
        "FLANNEL_NETWORK": "10.244.128.0/20",
        "FLANNEL_SUBNET": "10.244.128.1/24",
        "FLANNEL_MTU": "1450",
        "FLANNEL_IPMASQ": "false",
    }
    # flanneld gives flannel.1 the lease's first address, as a /32 (SubnetMin: the /20's first /24)
    assert parse_vtep(found["vtep"]) == (1450, "10.244.128.0/32")
    assert found["flanneld"].split() == ["16007"]


def test_the_flanneld_check_names_only_the_one_that_is_gone() -> None:
    assert (FIXTURES / "gone-alive.txt").read_text().split() == []
    assert (FIXTURES / "gone-killed.txt").read_text().split() == ["16007"]


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("", (None, None)),  # no such device (host-gw has none)
        ("1400\n", (1400, None)),  # no `ip` on the host
        ("9: flannel.1    inet 10.1.2.0/32 scope global flannel.1\n", (None, "10.1.2.0/32")),
    ],
)
def test_a_vtep_section_with_parts_missing(text: str, want: tuple[object, object]) -> None:
    assert parse_vtep(text) == want


def test_the_scripts_run_with_sh_where_no_flanneld_runs(tmp_path: Path) -> None:
    env = tmp_path / "subnet env"  # a space: quoted
    env.write_text("FLANNEL_SUBNET=10.9.0.1/24\n")
    out = subprocess.run(["sh", "-c", start_script(env, "nr-no-such-dev")],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    found = sections(out)
    assert parse_subnet_env(found["lease"]) == {"FLANNEL_SUBNET": "10.9.0.1/24"}
    assert parse_vtep(found["vtep"]) == (None, None)
    assert "flanneld" in found  # none of this machine's namespace (the lab's are others)
    me = subprocess.Popen(["sleep", "30"])
    try:
        gone = subprocess.run(["sh", "-c", gone_script([me.pid])], capture_output=True,
                              text=True, check=True).stdout  # fmt: skip
        assert gone.split() == [str(me.pid)]  # alive, but no flanneld: gone
    finally:
        me.kill()
        me.wait()
