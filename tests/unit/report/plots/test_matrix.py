"""The pair matrix (issue 14, point 3), rendered from real 8-host mesh-once runs.

Fixtures: ``mesh-once-8`` is a clean run on an 8-host lab at 200 Mbit/s;
``mesh-once-8-slow-delta`` is the same lab with delta's NIC and switch port shaped to
120 Mbit/s (a bad cable). A failed pair is made by marking one real sample failed.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

from netrun.report.plots import matrix
from netrun.report.render import render
from netrun.run.request import RunRequest
from netrun.run.runner import Run
from tests.conftest import RESULTS_FIXTURES

HOSTS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]


def fixture(name: str) -> dict:
    return json.loads((RESULTS_FIXTURES / name / "results.json").read_text())


def test_clean_mesh_is_an_8_by_8_grid_with_nothing_to_say() -> None:
    (grid,) = matrix.grids(fixture("mesh-once-8"))
    assert grid.rows == HOSTS and grid.cols == HOSTS and grid.kind == "mesh-once"
    headers, rows = grid.table()
    assert headers == ["client \\ server", *HOSTS]
    assert rows[0][1] == matrix.SELF and rows[1][1] == matrix.NOT_PAIRED
    assert all(cell.replace(".", "").isdigit() for cell in rows[0][2:])
    assert grid.notes == []


def test_a_slow_host_is_named_once_with_all_its_pairs() -> None:
    (grid,) = matrix.grids(fixture("mesh-once-8-slow-delta"))
    assert len(grid.notes) == 1
    note = grid.notes[0]
    assert "all 7 pairs of delta" in note and "more than 5% worse" in note
    assert "delta's cable, port or NIC" in note


def test_one_slow_pair_is_named_against_its_row_and_column() -> None:
    doc = fixture("mesh-once-8")
    sample = next(s for s in doc["tests"] if s["name"] == "m[bravo->echo]")
    sample["metrics"]["throughput_bps"] *= 0.5
    (grid,) = matrix.grids(doc)
    assert len(grid.notes) == 1 and grid.notes[0].startswith("m: bravo->echo 9")
    assert "worse than the median of its row and column" in grid.notes[0]


def test_a_failed_pair_is_a_gap_and_only_that() -> None:
    doc = fixture("mesh-once-8")
    for s in doc["tests"]:
        if "hotel" in (s["client"], s["server"]):  # hotel unreachable: its pairs failed
            s.update(status="failed", error="hotel: cannot connect")
            s["metrics"] = dict.fromkeys(s["metrics"])
    (grid,) = matrix.grids(doc)
    _, rows = grid.table()
    assert [r[-1] for r in rows[:-1]] == [matrix.FAILED] * 7
    assert sum(r.count(matrix.FAILED) for r in rows) == 7
    assert grid.notes == ["m: 7 pair(s) failed (FAIL): " + ", ".join(
        f"{h}->hotel" for h in HOSTS[:-1])]  # fmt: skip


def test_every_report_format_shows_the_matrix() -> None:
    doc = fixture("mesh-once-8-slow-delta")
    text = render(doc, "table")
    assert "matrix m (mesh-once): throughput_bps in Mbit/s, client rows, server columns" in text
    assert "all 7 pairs of delta" in text
    md = render(doc, "markdown")
    assert "#### matrix m (mesh-once)" in md and "| client \\ server" in md
    page = render(doc, "html")
    assert "<h2>matrix m (mesh-once)" in page and "all 7 pairs of delta" in page
    assert "matrix" not in render(fixture("baremetal-3"), "table")


def test_json_report_carries_each_matrix_as_a_grid() -> None:
    doc = fixture("mesh-once-8-slow-delta")
    sample = next(s for s in doc["tests"] if s["name"] == "m[alpha->hotel]")
    sample.update(status="failed", error="hotel: cannot connect")
    (m,) = json.loads(render(doc, "json"))["matrices"]
    assert m["id"] == "m" and m["pairs"] == "mesh-once" and m["metric"] == "throughput_bps"
    assert m["unit"] == "Mbit/s" and m["clients"] == HOSTS and m["servers"] == HOSTS
    values = m["values"]
    assert values[0][0] is None and values[1][0] is None  # the diagonal, the unpaired half
    assert values[0][-1] is None and m["failed"] == [["alpha", "hotel"]]
    assert 190 < values[0][1] < 195 and 110 < values[0][3] < 120  # alpha->delta: slow
    assert any("pairs of delta" in n for n in m["notes"])
    assert m["notes"][-1] == "m: 1 pair(s) failed (FAIL): alpha->hotel"
    assert json.loads(render(fixture("baremetal-3"), "json"))["matrices"] == []


def test_csv_report_names_each_pairs_matrix_so_a_pivot_redraws_it() -> None:
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(render(fixture("mesh-once-8"), "csv"))))
    assert len(rows) == 28 and {r["matrix"] for r in rows} == {"m"}
    cell = next(r for r in rows if r["name"] == "m[bravo->echo]")
    assert (cell["client"], cell["server"]) == ("bravo", "echo") and float(cell["mbps"]) > 150
    assert "matrix" not in render(fixture("baremetal-3"), "csv").splitlines()[0]


def test_heatmap_png(tmp_path: Path) -> None:
    (path,) = matrix.plot_all(fixture("mesh-once-8-slow-delta"), tmp_path)
    assert path.name == "matrix-m.png" and path.read_bytes()[:4] == b"\x89PNG"


def test_hand_edited_matrix_tags_are_ignored() -> None:
    doc = copy.deepcopy(fixture("mesh-once-8"))
    doc["tests"][0]["matrix"] = "m"
    doc["tests"][1]["matrix"] = {"id": 3}
    doc["tests"].append("junk")
    (grid,) = matrix.grids(doc)
    assert len(grid.values) == 26


def test_samples_are_kept_in_scenario_order_whatever_finishes_first(tmp_path: Path) -> None:
    """A four-pair parallel run printed p2, p1, p4, p3: results.json (and every table
    rendered from it) follows the scenario instead."""
    inv = tmp_path / "inv.yaml"
    inv.write_text("all:\n  hosts:\n" + "".join(f"    {h}: {{}}\n" for h in HOSTS))
    scen = tmp_path / "s.yaml"
    scen.write_text(
        "parallel: true\ntests:\n"
        + "".join(
            f"  - {{name: p{i}, mode: baremetal, server: {HOSTS[2 * i - 2]},"
            f" client: {HOSTS[2 * i - 1]}, repeat: 2}}\n"
            for i in range(1, 5)
        )
    )
    from netrun.inventory.loader import load_inventory
    from netrun.scenario.loader import load_scenario

    req = RunRequest(load_scenario(scen, hosts=HOSTS), load_inventory(inv), tmp_path / "out")
    run = Run(req)
    tests = run.plans
    for name, repeat in [("p2", 1), ("p1", 1), ("p4", 1), ("p2", 2), ("p3", 1), ("p1", 2)]:
        run.add_sample(tests[name], repeat, None, error="stand-in")
    order = [(s["name"], s["repeat"]) for s in run.doc["tests"]]
    assert order == [("p1", 1), ("p1", 2), ("p2", 1), ("p2", 2), ("p3", 1), ("p4", 1)]
