"""One lab, several checkouts: what `lab up` says when it cannot reuse the running lab, and
how the lab tells the inventory files it wrote from the ones it must leave alone."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

from netrun.lab import inventory, sharing, state
from netrun.lab.plan import LabConfig, plan

STATE = Path("/run/netrun-lab")
A = Path("/home/ann/netrun/inventories/local.yaml")
B = Path("/home/bob/netrun/inventories/local.yaml")
BESIDE = sharing.Beside("nr2", 1, Path("/run/netrun-lab-nr2"))


def running(**kw: object) -> LabConfig:
    return LabConfig(**{"docker": True, "state_dir": STATE, "inventory": A, **kw})  # type: ignore[arg-type]


def test_the_inventory_path_is_no_part_of_a_labs_identity() -> None:
    """The issue's case: every field matched but the inventory, and `up` refused."""
    assert running().differences(running(inventory=B)) == []
    assert running().same_lab(running(inventory=B))


def test_differences_name_each_field_running_then_asked() -> None:
    asked = running(hosts=2, docker=False, rate="400mbit", inventory=B)
    assert running().differences(asked) == [
        ("hosts", 3, 2),
        ("rate", "1gbit", "400mbit"),
        ("docker", True, False),
    ]


def test_the_freeflow_source_is_identity_only_when_asked_to_be() -> None:
    """A checkout the lab serves may switch the router; a joining one must not."""
    asked = running(freeflow_src=Path("/src/Freeflow"), inventory=B)
    assert running().differences(asked) == []
    assert running().differences(asked, loose=()) == [("freeflow_src", None, "/src/Freeflow")]


def test_a_different_lab_says_what_differs_and_how_to_run_one_beside_it() -> None:
    asked = running(hosts=2, docker=False, inventory=B)
    diffs = running().differences(asked)
    text = sharing.different_lab(running(), asked, diffs, [A], BESIDE, own=False)
    assert text == (
        "a different lab is up in /run/netrun-lab (--hosts: running 3 vs asked 2; --docker: "
        f"running yes vs asked no), used by {A}: to share it, ask for the same lab (netrun lab "
        f"up --docker --inventory {B}); to run a second lab beside it: netrun lab up --hosts 2 "
        "--prefix nr2 --net-index 1 --state-dir /run/netrun-lab-nr2, then give --state-dir "
        "/run/netrun-lab-nr2 to lab status and lab down too"
    )
    assert "\n" not in text


def test_lab_down_is_offered_only_to_the_labs_only_user() -> None:
    asked = running(hosts=2, inventory=A)
    diffs = running().differences(asked)
    theirs = sharing.different_lab(running(), asked, diffs, [A, B], BESIDE, own=False)
    mine = sharing.different_lab(running(), asked, diffs, [A], BESIDE, own=True)
    assert "lab down first" not in theirs
    assert mine.endswith("; or, as only this inventory uses it, netrun lab down first")


def test_every_field_shows_as_its_flag() -> None:
    asked = running(
        hosts=5,
        rate="none",
        prefix="nrq",
        net_index=4,
        login_cost=0.1,
        freeflow_src=Path("/src/ff"),
        host_rates=(("charlie", "20mbit"),),
        inventory=B,
    )
    diffs = running().differences(asked, loose=())
    text = sharing.different_lab(running(), asked, diffs, [], BESIDE, own=False)
    for part in (
        "--hosts: running 3 vs asked 5",
        "--rate: running 1gbit vs asked none",
        "--prefix: running nr vs asked nrq",
        "--net-index: running 0 vs asked 4",
        "--login-cost: running 0 vs asked 0.1",
        "--freeflow-src: running none (the stand-in) vs asked /src/ff",
        "--host-rate: running none vs asked charlie=20mbit",
        "used by an inventory since removed",
    ):
        assert part in text, part
    assert text.endswith("; no checkout uses it any more: netrun lab down removes it")
    second = "netrun lab up --hosts 5 --rate none --docker --login-cost 0.1 --freeflow-src "
    assert second + "/src/ff --host-rate charlie=20mbit --prefix nr2" in text


def test_up_flags_leave_defaults_out() -> None:
    assert sharing.up_flags(LabConfig()) == ""
    assert sharing.up_flags(LabConfig(hosts=2, prefix="nr7", net_index=7)) == (
        "--hosts 2 --prefix nr7 --net-index 7"
    )
    assert sharing.up_flags(LabConfig(hosts=2, prefix="nr7"), where=False) == "--hosts 2"


def test_reuse_and_release_lines() -> None:
    assert sharing.reused(STATE, [A], B) == (
        f"reusing the lab already up in /run/netrun-lab (used by {A}); "
        f"wrote its inventory to {B} too"
    )
    assert sharing.still_used(STATE, B, [A]) == (
        f"lab left up in /run/netrun-lab: still used by {A}; only {B} let go of it "
        "(netrun lab down --all removes the lab for everyone)"
    )
    assert sharing.not_a_user(STATE, B, [A]) == (
        f"the lab in /run/netrun-lab was not brought up for {B}: it is used by {A}; run "
        f"netrun lab down from that checkout (or with --inventory {A}), or netrun lab down "
        "--all to remove it for everyone"
    )


# -- the inventory files a lab wrote --------------------------------------------------------
def lab_text(tmp: Path, state_dir: Path) -> str:
    cfg = LabConfig(hosts=2, state_dir=state_dir, inventory=tmp / "i.yaml")
    return inventory.render(plan(cfg))


def test_only_a_file_holding_what_the_lab_wrote_is_the_labs_to_remove(tmp_path: Path) -> None:
    mine, other = tmp_path / "state", tmp_path / "other-state"
    text = lab_text(tmp_path, mine)
    rows = {name: inventory.write(tmp_path / f"{name}.yaml", text) for name in "weru"}
    (tmp_path / "e.yaml").write_text(text + "# my note\n")  # edited: still this lab's
    (tmp_path / "r.yaml").write_text(lab_text(tmp_path, other))  # another lab wrote over it
    (tmp_path / "u.yaml").unlink()
    found = {name: inventory.state_of(row, mine) for name, row in rows.items()}
    assert found == {"w": "written", "e": "edited", "r": "replaced", "u": "missing"}
    assert [inventory.remove(rows[n], mine) for n in "weru"] == [True, False, False, False]
    assert sorted(p.name for p in tmp_path.glob("*.yaml")) == ["e.yaml", "r.yaml"]


def test_a_file_without_the_labs_header_is_never_removed(tmp_path: Path) -> None:
    """Before hashes were kept, any lab's header was trusted; a person's file never was."""
    path = tmp_path / "local.yaml"
    path.write_text("all:\n  hosts: {}\n")
    assert not inventory.remove({"path": str(path)}, tmp_path)
    path.write_text(lab_text(tmp_path, tmp_path / "x"))  # another lab's (no hash recorded)
    assert not inventory.remove({"path": str(path)}, tmp_path)
    assert inventory.remove({"path": str(path)}, tmp_path / "x")


def test_users_are_the_checkouts_whose_up_wrote_a_file_still_there(tmp_path: Path) -> None:
    mine = tmp_path / "state"
    text = lab_text(tmp_path, mine)
    data: dict = {"config": {"inventory": str(tmp_path / "a.yaml")}}
    assert state.records(data) == [{"path": str(tmp_path / "a.yaml"), "by": "up"}]  # old state
    data["inventories"] = []
    for name, by in (("a", "up"), ("b", "up"), ("c", "export"), ("d", "up")):
        assert state.register(data, inventory.write(tmp_path / f"{name}.yaml", text), by)
    (tmp_path / "d.yaml").unlink()
    assert state.users(data, mine) == [tmp_path / "a.yaml", tmp_path / "b.yaml"]
    # an exported copy that an `up` then asks for becomes that checkout's
    assert not state.register(data, inventory.write(tmp_path / "c.yaml", text), "up")
    assert tmp_path / "c.yaml" in state.users(data, mine)
    state.forget(data, tmp_path / "a.yaml")
    assert [r["path"] for r in state.records(data)] == [
        str(tmp_path / n) for n in ("b.yaml", "c.yaml", "d.yaml")
    ]


def test_up_rewrites_other_checkouts_inventories_only_while_as_written(tmp_path: Path) -> None:
    """A new router image (say) reaches every checkout's file the lab still owns; an edited
    one is left alone, and one whose file is gone is forgotten."""
    from netrun.lab.core import write_inventories

    mine = tmp_path / "state"
    lab = plan(LabConfig(hosts=2, docker=True, state_dir=mine, inventory=tmp_path / "a.yaml"))
    old = inventory.render(lab)
    data: dict = {"config": lab.config.to_json(), "inventories": []}
    for name in "abc":
        state.register(data, inventory.write(tmp_path / f"{name}.yaml", old), "up")
    (tmp_path / "b.yaml").write_text(old + "# mine\n")
    (tmp_path / "c.yaml").unlink()
    mine.mkdir()
    said: list[str] = []
    data["freeflow"] = {"image": "netrun-lab/freeflow:tcp-abc"}
    write_inventories(lab, data, tmp_path / "d.yaml", said.append)
    new = (tmp_path / "d.yaml").read_text()
    assert "netrun-lab/freeflow:tcp-abc" in new and new != old
    assert (tmp_path / "a.yaml").read_text() == new
    assert (tmp_path / "b.yaml").read_text() == old + "# mine\n"
    assert [r["path"] for r in state.records(data)] == [
        str(tmp_path / n) for n in ("a.yaml", "b.yaml", "d.yaml")
    ]
    assert said == [
        f"inventory: {tmp_path / 'a.yaml'} (rewritten: the lab wrote it for another checkout)"
    ]
    assert state.files(data, mine)[0].state == "written"


def test_every_lab_setting_has_its_flag() -> None:
    """A running lab that refuses a second one names the flags that ask for it: a setting
    with none was an internal error (KeyError: 'k8s') instead of that line."""
    assert {f.name for f in fields(LabConfig)} <= set(sharing.FLAGS)
    cfg = LabConfig(hosts=2, k8s=True, cni="flannel", mtu=9000, iperf3="3.9", docker=True)
    assert sharing.up_flags(cfg, where=False) == (
        "--hosts 2 --docker --iperf3 3.9 --k8s --cni flannel --mtu 9000"
    )
