"""The nightly-cron features end to end through the CLI, against the emulated 3-host lab.

History, reports in every format, plots, baselines and verdicts, --wait-lock, interruption
and --resume, the Prometheus and JUnit exporters, and a bad or locked history database.
Every run gets ``--db <tmp>/history.sqlite`` and XDG_DATA_HOME points into the test's tmp
folder, so no test touches the real user history. Tests judge exit codes and files
(results.json, report.txt, the database through ``netrun history``), not progress lines.
"""

from __future__ import annotations

import copy
import csv
import io
import json
import os
import re
import shutil
import signal
import sqlite3
import struct
import subprocess
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.conftest import LabHandle
from tests.integration.helpers import (
    assert_nothing_left,
    entry,
    error_lines,
    leases_held,
    load_results,
    netrun_process,
    run_netrun,
    samples_of,
    wait_for,
    write_inventory,
    write_scenario,
    write_yaml,
)
from tests.integration.test_faults_runner import fill, tiny_tmpfs

pytestmark = pytest.mark.integration

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
EXIT_OK, EXIT_FAILED, EXIT_INPUT, EXIT_REGRESSED, EXIT_LOCKED, EXIT_INT = 0, 1, 2, 3, 75, 130
VERDICTS = {"failed", "regressed", "noisy", "improved", "ok", "new"}
#: A lab address nothing answers on (the lab's management net, no host there).
GHOST = {"ansible_host": "10.201.1.250"}
SCENARIO = "cron"  # the scenario of the module's saved run


@pytest.fixture(autouse=True)
def private_history(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Belt and braces: a netrun run that forgot --db still writes only under tmp."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))


@pytest.fixture(autouse=True)
def nothing_left(lab: LabHandle, tmp_path: Path) -> Iterator[None]:
    """After every test: no iperf3 in the lab, no run folder of the test's main run."""
    yield
    assert_nothing_left(lab, tmp_path / "out")
    assert not (tmp_path / "xdg").exists(), "a run used the default history database"


# -- helpers ------------------------------------------------------------------------------------
def netrun(
    tmp: Path,
    *args: str | Path,
    db: Path | None = None,
    out: str | None = "out",
    timeout: float = 90,
) -> subprocess.CompletedProcess[str]:
    """Run netrun quietly with ``--db`` (default tmp/history.sqlite) and ``-o out``."""
    argv: list[str | Path] = [*args, "-q", "--db", db or tmp / "history.sqlite"]
    if out is not None:
        argv += ["-o", out]
    res = run_netrun(argv, cwd=tmp, timeout=timeout)
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr, res.stderr
    return res


def cli(tmp: Path, *args: str | Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """A subcommand (report, history): no -q / -o added."""
    res = run_netrun(list(args), cwd=tmp, timeout=timeout)
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr, res.stderr
    return res


def expect(res: subprocess.CompletedProcess[str], code: int) -> None:
    why = [line for line in res.stdout.splitlines() if re.match(r"\S+ (regressed|noisy): ", line)]
    said = "\n".join([res.stderr, *why])  # a verdict's why, when the code is a verdict's
    assert res.returncode == code, f"exit {res.returncode}, wanted {code}\n{said}"


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from a PNG's IHDR; fails unless the file really is a PNG."""
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE, f"{path}: not a PNG"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13, f"{path}: no IHDR first"
    width, height = struct.unpack(">II", data[16:24])
    assert width > 100 and height > 100, (path, width, height)
    return width, height


def stored_runs(tmp: Path, db: Path) -> str:
    res = cli(tmp, "history", "--db", db)
    expect(res, EXIT_OK)
    return res.stdout


def scaled_baseline(doc: dict[str, Any], factor: float, path: Path) -> Path:
    """A baseline file: ``doc`` with every test's throughput its median times ``factor``.

    Every sample of a test gets the same value (plus a 1 bit/s step), so the baseline's
    standard deviation is tiny and its confidence interval narrow.
    """
    base = copy.deepcopy(doc)
    base["run_id"] = f"{doc['run_id']}-x{factor:g}"
    for name in {t["name"] for t in base["tests"]}:
        group = [t for t in base["tests"] if t["name"] == name]
        values = sorted(t["throughput_bps"] for t in group)
        median = values[len(values) // 2]
        for i, t in enumerate(group):
            t["throughput_bps"] = median * factor + i
    path.write_text(json.dumps(base))
    return path


def table_header(report: str) -> str:
    """The header line of report.txt's table."""
    return next(line for line in report.splitlines() if line.split()[:1] == ["test"])


def verdicts_of(doc: dict[str, Any]) -> dict[str, str]:
    return {v["test"]: v["verdict"] for v in doc["baseline"]["verdicts"]}


def moved_of(doc: dict[str, Any]) -> dict[str, str]:
    """Each test's verdict, where "noisy" because a core saturated on either side (or the
    hypervisor took the CPU) reads as the way the figure moved: the lab's hosts share one
    machine's two cores, so under a loaded CI machine a TCP test at line rate is sometimes
    cpu-bound, and the verdict then rightly says the change may be the CPU's."""
    out = {}
    for v in doc["baseline"]["verdicts"]:
        verdict = v["verdict"]
        detail = v.get("detail") or ""
        cpu = verdict == "noisy" and ("cpu-bound in" in detail or "CPU stolen by" in detail)
        # a busy receiver's UDP loss (cause receiver, no page) says nothing of the headline
        busy = verdict == "regressed" and v.get("cause") == "receiver" and not v.get("pages")
        if cpu or busy:
            verdict = "regressed" if v["delta_pct"] < 0 else "improved"
        out[v["test"]] = verdict
    return out


def regressed_exit(doc: dict[str, Any]) -> int:
    """The exit a run with these verdicts owes: 3 when a test regressed for a cause that
    pages (a UDP drop all at a busy receiver does not, netrun.history.judge), else 0 (a
    drop within what a saturated core widens the tolerance to is ``noisy``, no alarm)."""
    paging = [v for v in doc["baseline"]["verdicts"] if v["verdict"] == "regressed" and v["pages"]]
    return EXIT_REGRESSED if paging else EXIT_OK


def cron_tests() -> list[dict[str, Any]]:
    """A TCP test repeated twice and a UDP test once, between different pairs."""
    return [
        entry("tcp", repeat=2),
        entry("udp", server="alpha", client="charlie", protocol="udp", bitrate="100M"),
    ]


def write_cron_scenario(tmp: Path, **top: Any) -> Path:
    """The module's scenario (name "cron"), with extra top-level keys such as baseline."""
    path = write_scenario(tmp, cron_tests(), name=SCENARIO)
    if top:
        data = yaml.safe_load(path.read_text())
        data.update(top)
        write_yaml(path, data)
    return path


@pytest.fixture(scope="module")
def saved(lab: LabHandle, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real run of the "cron" scenario (folder ``out``, db ``history.sqlite``), for tests
    that only read it or copy it. Do not change files in it."""
    tmp = tmp_path_factory.mktemp("saved")
    res = netrun(tmp, write_cron_scenario(tmp), "-i", lab.inventory)
    expect(res, EXIT_OK)
    assert_nothing_left(lab, tmp / "out")
    return tmp


# -- 1. repeat, statistics, history -----------------------------------------------------------
def test_repeat_samples_stats_and_history(lab: LabHandle, tmp_path: Path) -> None:
    scen = write_scenario(tmp_path, [entry("tcp3", repeat=3)], name="stats")
    res = netrun(tmp_path, scen, "-i", lab.inventory)
    expect(res, EXIT_OK)
    doc = load_results(tmp_path / "out")
    assert doc["status"] == "finished"
    samples = samples_of(doc, "tcp3")
    assert [s["repeat"] for s in samples] == [1, 2, 3]
    for s in samples:
        assert s["status"] == "ok", s["error"]
        assert s["intervals"], "every sample keeps its per-interval throughput"
        for start, end, bps in s["intervals"]:
            assert 0 <= start < end and bps > 0

    report = (tmp_path / "out" / "report.txt").read_text()
    header = table_header(report)
    for column in ("n", "mean±sd", "min-max", "95% CI"):
        assert re.search(rf"(^|\s){re.escape(column)}(\s|$)", header), (column, header)
    row = next(line for line in report.splitlines() if line.startswith("tcp3"))
    assert re.search(r"\s3\s", row), row  # n = 3
    assert re.search(r"\d±\d", row) and re.search(r"\d-\d", row), row

    listed = stored_runs(tmp_path, tmp_path / "history.sqlite")
    assert doc["run_id"] in listed and "3/3" in listed, listed
    res = cli(tmp_path, "history", "--scenario", "stats", "--test", "tcp3", "--db",
              tmp_path / "history.sqlite")  # fmt: skip
    expect(res, EXIT_OK)
    assert "median Mbit/s" in res.stdout, res.stdout
    trend = next(line for line in res.stdout.splitlines() if line.startswith("stats "))
    assert "tcp3" in trend and "+0.0%" not in trend, trend  # one run: no change (issue 25)
    assert trend.split()[-2:] == ["-", "-"], trend
    median = sorted(s["throughput_bps"] for s in samples)[1] / 1e6
    assert f"{median:.0f}" in trend, (median, trend)


# -- 2. re-rendering a saved run -----------------------------------------------------------------
def test_report_formats_by_folder_and_by_id(saved: Path, tmp_path: Path) -> None:
    out, db = saved / "out", saved / "history.sqlite"
    doc = load_results(out)

    md = cli(tmp_path, "report", out, "--format", "markdown")
    expect(md, EXIT_OK)
    assert re.search(r"^\| test\s+\|", md.stdout, re.M), md.stdout
    assert re.search(r"^\| tcp\s+\|", md.stdout, re.M) and "| udp" in md.stdout

    got = cli(tmp_path, "report", out, "--format", "csv")
    expect(got, EXIT_OK)
    rows = list(csv.DictReader(io.StringIO(got.stdout)))
    assert [r["name"] for r in rows] == ["tcp", "udp"]
    tcp_median = sorted(s["throughput_bps"] for s in samples_of(doc, "tcp"))
    assert float(rows[0]["mbps"]) == pytest.approx(sum(tcp_median) / 2 / 1e6, rel=1e-6)
    assert rows[0]["samples"] == "2" and rows[1]["samples"] == "1"

    got = cli(tmp_path, "report", out, "--format", "json")
    expect(got, EXIT_OK)
    summary = json.loads(got.stdout)
    assert summary["run_id"] == doc["run_id"] and len(summary["tests"]) == 2

    got = cli(tmp_path, "report", out, "--format", "html")
    expect(got, EXIT_OK)
    assert got.stdout.startswith("<!DOCTYPE html>") and got.stdout.rstrip().endswith("</html>")

    by_id = cli(tmp_path, "report", doc["run_id"], "--db", db, "--format", "json")
    expect(by_id, EXIT_OK)
    assert json.loads(by_id.stdout) == summary
    prefix = cli(tmp_path, "report", doc["run_id"][:8], "--db", db, "--format", "csv")
    expect(prefix, EXIT_OK)
    assert prefix.stdout.splitlines()[0].startswith("name,")

    unknown = cli(tmp_path, "report", "feedfacefeedface", "--db", db)
    assert unknown.returncode in (EXIT_INPUT, EXIT_FAILED), unknown.stderr
    assert len(error_lines(unknown.stderr)) == 1, unknown.stderr
    assert "feedfacefeedface" in unknown.stderr


def test_report_plot_writes_pngs_and_html_embeds_them(saved: Path, tmp_path: Path) -> None:
    run = tmp_path / "copy"
    shutil.copytree(saved / "out", run)
    page = tmp_path / "page.html"
    got = cli(tmp_path, "report", run, "--plot", "--format", "html", "-o", page)
    expect(got, EXIT_OK)
    for name in ("throughput.png", "intervals.png"):
        png_size(run / name)
    html = page.read_text()
    assert html.count('src="data:image/png;base64,') == 2, "both plots are inlined"
    assert (saved / "out" / "results.json").read_bytes() == (run / "results.json").read_bytes()


# -- 3. plots on a run, trend on the second ---------------------------------------------------
def test_plot_on_runs_and_trend_on_the_second(lab: LabHandle, tmp_path: Path) -> None:
    scen = write_scenario(tmp_path, [entry("tp")], name="plots")
    expect(netrun(tmp_path, scen, "-i", lab.inventory, "--plot", out="first"), EXIT_OK)
    first = tmp_path / "first"
    for name in ("throughput.png", "intervals.png"):
        png_size(first / name)
    assert not list(first.glob("trend-*.png")), "one run is no trend"
    html = (first / "report.html").read_text()
    assert html.count("data:image/png;base64,") == 2

    expect(netrun(tmp_path, scen, "-i", lab.inventory, "--plot", out="out"), EXIT_OK)
    second = tmp_path / "out"
    for name in ("throughput.png", "intervals.png", "trend-tp.png"):
        png_size(second / name)
    assert (second / "report.html").read_text().count("data:image/png;base64,") == 3


# -- 4. baselines ---------------------------------------------------------------------------------
def test_baseline_last_first_run_notes_second_run_verdicts(lab: LabHandle, tmp_path: Path) -> None:
    scen = write_scenario(tmp_path, [entry("bl")], name="last")
    res = netrun(tmp_path, scen, "-i", lab.inventory, "--baseline", "last", out="first")
    expect(res, EXIT_OK)
    assert re.search(r"^netrun: no comparison: .*no earlier stored run", res.stderr, re.M), (
        res.stderr
    )
    first = load_results(tmp_path / "first")
    assert "baseline" not in first

    # A wide tolerance: two real runs differ by noise; the verdict is what is checked here.
    res = netrun(tmp_path, scen, "-i", lab.inventory, "--baseline", "last", "--tolerance", "50%")
    expect(res, EXIT_OK)
    doc = load_results(tmp_path / "out")
    assert doc["baseline"]["run_id"] == first["run_id"]
    assert verdicts_of(doc) == {"bl": "ok"}
    verdict = doc["baseline"]["verdicts"][0]
    assert isinstance(verdict["delta_pct"], float) and verdict["detail"]
    header = table_header((tmp_path / "out" / "report.txt").read_text())
    assert "verdict" in header and "Δ%" in header, header


def test_no_baseline_no_verdict_columns(saved: Path, tmp_path: Path) -> None:
    assert "baseline" not in load_results(saved / "out")
    header = table_header((saved / "out" / "report.txt").read_text())
    assert "verdict" not in header and "Δ%" not in header, header
    got = cli(tmp_path, "report", saved / "out")
    expect(got, EXIT_OK)
    assert "verdict" not in table_header(got.stdout), got.stdout


def test_file_baseline_regressed_and_improved(lab: LabHandle, saved: Path, tmp_path: Path) -> None:
    doc = load_results(saved / "out")
    higher = scaled_baseline(doc, 10, tmp_path / "higher.json")
    lower = scaled_baseline(doc, 0.1, tmp_path / "lower.json")

    # (b) the baseline was 10x faster: tonight regressed, exit 3.
    scen = write_cron_scenario(tmp_path)
    res = netrun(tmp_path, scen, "-i", lab.inventory, "--baseline", higher, out="reg")
    reg = load_results(tmp_path / "reg")
    expect(res, regressed_exit(reg))
    assert reg["status"] == "finished"
    assert moved_of(reg) == {"tcp": "regressed", "udp": "regressed"}
    assert all(v["delta_pct"] < -80 for v in reg["baseline"]["verdicts"])
    assert "regressed" in (tmp_path / "reg" / "report.txt").read_text()

    # (c) + (d) the scenario's baseline: key, 10x slower: improved, exit 0.
    scen = write_cron_scenario(tmp_path, baseline=str(lower))
    res = netrun(tmp_path, scen, "-i", lab.inventory, out="out")
    expect(res, EXIT_OK)
    imp = load_results(tmp_path / "out")
    assert moved_of(imp) == {"tcp": "improved", "udp": "improved"}
    assert imp["baseline"]["run_id"] == f"{doc['run_id']}-x0.1"

    # --baseline wins over the scenario's key.
    res = netrun(tmp_path, scen, "-i", lab.inventory, "--baseline", higher, out="cli")
    cli = load_results(tmp_path / "cli")
    expect(res, regressed_exit(cli))
    assert moved_of(cli)["tcp"] == "regressed"


@pytest.mark.parametrize(
    "how",
    ["unknown-id", "missing-path", "scenario-key"],
)
def test_missing_baseline_is_bad_input_before_anything_runs(
    lab: LabHandle, tmp_path: Path, how: str
) -> None:
    extra: list[str | Path] = []
    top: dict[str, Any] = {}
    if how == "unknown-id":
        extra = ["--baseline", "deadbeef"]
    elif how == "missing-path":
        extra = ["--baseline", tmp_path / "nowhere" / "results.json"]
    else:
        top = {"baseline": "deadbeef"}
    scen = write_cron_scenario(tmp_path, **top)
    started = time.monotonic()
    res = netrun(tmp_path, scen, "-i", lab.inventory, *extra)
    expect(res, EXIT_INPUT)
    assert time.monotonic() - started < 15, "refused only after running?"
    lines = error_lines(res.stderr)
    assert len(lines) == 1, res.stderr
    assert "baseline" in lines[0] and ("deadbeef" in lines[0] or "nowhere" in lines[0]), lines
    assert not (tmp_path / "out").exists(), "nothing may run, not even a results folder"
    assert "no stored runs" in stored_runs(tmp_path, tmp_path / "history.sqlite")


@pytest.mark.parametrize(
    ("where", "value"),
    [("cli", "five"), ("cli", "5"), ("scenario", 5), ("scenario", "five")],
)
def test_tolerance_that_is_not_a_percentage_is_bad_input(
    lab: LabHandle, tmp_path: Path, where: str, value: Any
) -> None:
    if where == "cli":
        scen = write_scenario(tmp_path, [entry("tol")], name="tol")
        extra = ["--tolerance", str(value)]
    else:
        scen = write_scenario(tmp_path, [entry("tol", tolerance=value)], name="tol")
        extra = []
    res = netrun(tmp_path, scen, "-i", lab.inventory, *extra)
    expect(res, EXIT_INPUT)
    lines = error_lines(res.stderr)
    assert len(lines) == 1, res.stderr
    assert "tolerance" in lines[0] and ("percentage" in lines[0] or "%" in lines[0]), lines
    assert not (tmp_path / "out").exists()


def test_tolerance_out_of_range_is_refused_before_the_run(
    lab: LabHandle, saved: Path, tmp_path: Path
) -> None:
    scen = write_scenario(tmp_path, [entry("tcp", tolerance="500%")], name=SCENARIO)
    res = netrun(tmp_path, scen, "-i", lab.inventory, "--baseline", saved / "out")
    expect(res, EXIT_INPUT)
    assert not (tmp_path / "out").exists(), "refused only after measuring"


# -- 5. runs at once: one per host (test_host_lease_lab), the old --wait-lock still waits ---------
def lock_args(tmp: Path, lab: LabHandle, out: str, *extra: str) -> list[str | Path]:
    scen = write_scenario(tmp, [entry("lk", duration=2)], name="lock")
    return [scen, "-i", lab.inventory, "-q", "--db", tmp / "history.sqlite", "-o", out, *extra]


def holds_leases(out: Path) -> bool:
    """Whether the run writing into ``out`` holds its hosts' leases (netrun.hosts.lease)."""
    return (out / "results.json").exists() and bool(leases_held(load_results(out)["run_id"]))


def test_wait_lock_waits_then_runs(lab: LabHandle, tmp_path: Path) -> None:
    """--wait-lock, from before host leases, waits for the hosts (up to an hour)."""
    with netrun_process(lock_args(tmp_path, lab, "out"), cwd=tmp_path) as first:
        assert wait_for(lambda: holds_leases(tmp_path / "out"), 30), "no lease held"
        waiting = run_netrun(
            lock_args(tmp_path, lab, "second", "--wait-lock"), cwd=tmp_path, timeout=120
        )
        first.wait(timeout=60)
    assert first.returncode == EXIT_OK
    expect(waiting, EXIT_OK)
    a, b = load_results(tmp_path / "out"), load_results(tmp_path / "second")
    assert b["tests"][0]["started"] >= a["finished"], (
        "the waiting run measured before the first ended"
    )
    assert_nothing_left(lab, tmp_path / "second")
    listed = stored_runs(tmp_path, tmp_path / "history.sqlite")
    assert a["run_id"] in listed and b["run_id"] in listed


# -- 6. interruption and --resume -----------------------------------------------------------
def three_tests(tmp: Path) -> Path:
    return write_scenario(
        tmp, [entry("one"), entry("two"), entry("three")], defaults={"duration": 2}, name="resume"
    )


def first_test_ok(out: Path) -> bool:
    try:
        doc = load_results(out)
    except (OSError, ValueError):
        return False
    return any(t["name"] == "one" and t["status"] == "ok" for t in doc["tests"])


def resume_and_check(
    lab: LabHandle, tmp: Path, scen: Path, before: dict[str, Any]
) -> dict[str, Any]:
    res = netrun(tmp, scen, "-i", lab.inventory, "--resume", tmp / "out", out=None)
    expect(res, EXIT_OK)
    doc = load_results(tmp / "out")
    assert doc["run_id"] == before["run_id"]
    assert doc["status"] == "finished"
    assert doc["started"] == before["started"]
    kept = [t for t in before["tests"] if t["name"] == "one" and t["status"] == "ok"]
    assert samples_of(doc, "one") == kept, "the passed test must be kept as it was"
    for name in ("two", "three"):
        (sample,) = samples_of(doc, name)
        assert sample["status"] == "ok", sample["error"]
    listed = stored_runs(tmp, tmp / "history.sqlite")
    assert listed.count(doc["run_id"]) == 1 and "finished" in listed, listed
    return doc


def test_sigint_then_resume(lab: LabHandle, tmp_path: Path) -> None:
    scen = three_tests(tmp_path)
    args: list[str | Path] = [
        scen, "-i", lab.inventory, "-q", "--db", tmp_path / "history.sqlite", "-o", "out"
    ]  # fmt: skip
    xml = tmp_path / "junit.xml"
    with netrun_process([*args, "--junit", xml], cwd=tmp_path) as proc:
        assert wait_for(lambda: first_test_ok(tmp_path / "out"), 60), "test one never passed"
        proc.send_signal(signal.SIGINT)
        _stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == EXIT_INT, stderr
    assert "Traceback" not in stderr
    before = load_results(tmp_path / "out")  # valid JSON, or this raises
    assert before["status"] == "interrupted"
    assert not [t for t in samples_of(before, "three") if t["status"] == "ok"], "ran to the end"
    # JUnit lists the tests the run never reached as skipped; none vanishes
    suite = junit(xml)
    assert suite.get("tests") == "3", ET.tostring(suite, encoding="unicode")
    skipped = {c.get("name") for c in suite.findall("testcase") if c.find("skipped") is not None}
    assert skipped == set(before["not_run"]) and "three" in skipped
    assert_nothing_left(lab)
    resume_and_check(lab, tmp_path, scen, before)


def test_sigkill_then_resume(lab: LabHandle, tmp_path: Path) -> None:
    scen = three_tests(tmp_path)
    args = [scen, "-i", lab.inventory, "-q", "--db", tmp_path / "history.sqlite", "-o", "out"]
    with netrun_process(args, cwd=tmp_path) as proc:
        assert wait_for(lambda: first_test_ok(tmp_path / "out"), 60), "test one never passed"
        time.sleep(0.5)  # into test two
        proc.kill()
        proc.communicate(timeout=30)
    before = load_results(tmp_path / "out")  # atomic writes: always whole
    assert before["status"] == "running"
    resume_and_check(lab, tmp_path, scen, before)


# -- 7. exporters ---------------------------------------------------------------------------------
def metrics(path: Path) -> dict[str, list[Any]]:
    from prometheus_client.parser import text_string_to_metric_families

    return {f.name: f.samples for f in text_string_to_metric_families(path.read_text())}


def last_success(found: dict[str, list[Any]], scenario: str = "exp") -> float:
    (sample,) = found["netrun_last_success_timestamp_seconds"]
    assert sample.labels == {"scenario": scenario}
    return float(sample.value)


def junit(path: Path) -> ET.Element:
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    assert suite.get("tests") == root.get("tests") and suite.get("failures") == root.get("failures")
    return suite


def test_prometheus_and_junit(lab: LabHandle, tmp_path: Path) -> None:
    prom, xml = tmp_path / "netrun.prom", tmp_path / "junit.xml"
    scen = write_scenario(
        tmp_path,
        [entry("tcp", repeat=2), entry("udp", client="charlie", protocol="udp", bitrate="50M")],
        name="exp",
    )
    res = netrun(tmp_path, scen, "-i", lab.inventory, "--prometheus", prom, "--junit", xml)
    expect(res, EXIT_OK)
    doc = load_results(tmp_path / "out")
    found = metrics(prom)
    # base units: bytes/s, seconds (not bit/s, ms)
    throughput = {s.labels["test"]: s for s in found["netrun_iperf3_throughput_bytes_per_second"]}
    assert set(throughput) == {"tcp", "udp"}
    tcp = sorted(t["throughput_bps"] for t in samples_of(doc, "tcp"))
    assert throughput["tcp"].value * 8 == pytest.approx(sum(tcp) / 2, rel=1e-9)
    udp_bps = samples_of(doc, "udp")[0]["throughput_bps"]
    assert throughput["udp"].value * 8 == pytest.approx(udp_bps)
    assert throughput["tcp"].labels == {
        "scenario": "exp", "test": "tcp", "mode": "baremetal", "server": "alpha",
        "client": "bravo", "protocol": "tcp",
    }  # fmt: skip
    (jitter,) = found["netrun_iperf3_jitter_seconds"]
    assert jitter.labels["test"] == "udp"
    assert jitter.value * 1e3 == pytest.approx(samples_of(doc, "udp")[0]["jitter_ms"])
    assert [s.value for s in found["netrun_run_exit_code"]] == [EXIT_OK]
    # -q: one summary line first, stamped with the time and the run id
    first = res.stdout.splitlines()[0]
    assert re.fullmatch(rf"exp: 2 ok \[\S+Z run {doc['run_id']}\]", first), res.stdout
    assert {s.labels["test"]: s.value for s in found["netrun_test_ok"]} == {"tcp": 1, "udp": 1}
    passed_at = last_success(found)
    assert passed_at > 0
    assert oct(prom.stat().st_mode & 0o777) == "0o644", "node_exporter must be able to read it"
    suite = junit(xml)
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("2", "0", "0")
    assert [c.get("name") for c in suite.findall("testcase")] == ["tcp", "udp"]

    # A failing run of the same scenario: its last success is the earlier run's.
    inv = write_inventory(tmp_path, lab, host_vars={"ghost": GHOST})
    scen = write_scenario(tmp_path, [entry("tcp"), entry("down", server="ghost")], name="exp")
    res = netrun(
        tmp_path, scen, "-i", inv, "--connect-timeout", "2", "--prometheus", prom,
        "--junit", xml, out="failed",
    )  # fmt: skip
    expect(res, EXIT_FAILED)
    found = metrics(prom)
    assert last_success(found) == passed_at
    assert {s.labels["test"]: s.value for s in found["netrun_test_ok"]} == {"tcp": 1, "down": 0}
    (run_at,) = found["netrun_run_timestamp_seconds"]
    assert run_at.value >= passed_at
    assert [s.value for s in found["netrun_run_exit_code"]] == [EXIT_FAILED]
    assert res.stdout.startswith("exp: 1 ok, 1 failed (down failed on bravo→ghost) ["), res.stdout
    suite = junit(xml)
    assert (suite.get("tests"), suite.get("failures")) == ("2", "1")
    (failure,) = suite.iter("failure")
    assert "ghost" in (failure.get("message") or "") + (failure.text or "")


def test_exit_2_and_75_leave_no_stale_export(lab: LabHandle, tmp_path: Path) -> None:
    """A run that ends before measuring replaces what it was asked to write: yesterday's
    passing JUnit and figures are not published again as tonight's."""
    prom, xml = tmp_path / "netrun.prom", tmp_path / "junit.xml"
    exports: list[str | Path] = ["--prometheus", prom, "--junit", xml]
    ok = run_netrun([*lock_args(tmp_path, lab, "out"), "-q", *exports], cwd=tmp_path, timeout=90)
    expect(ok, EXIT_OK)
    # -qq, for a cron mail: one line on stdout, the table only in report.txt
    (line,) = ok.stdout.splitlines()
    assert re.fullmatch(r"lock: 1 ok \[\S+Z run [0-9a-f]+\]", line), ok.stdout
    assert "lk " in (tmp_path / "out" / "report.txt").read_text()
    passed_at = last_success(metrics(prom), "lock")
    with netrun_process(
        lock_args(tmp_path, lab, "first", "-e", "duration=60"), cwd=tmp_path
    ) as first:
        assert wait_for(lambda: holds_leases(tmp_path / "first"), 30), "no lease held"
        held = run_netrun([*lock_args(tmp_path, lab, "second"), *exports], cwd=tmp_path)
        first.send_signal(signal.SIGTERM)  # measured long enough
        first.wait(timeout=60)
    expect(held, EXIT_LOCKED)
    assert_replaced(prom, xml, EXIT_LOCKED, passed_at, "--wait-for-hosts")
    assert re.search(r"\[\S+Z run [0-9a-f]+\]$", held.stderr.strip()), held.stderr
    bad = run_netrun([*lock_args(tmp_path, lab, "third", "-e", "nosuchkey=1"), *exports],
                     cwd=tmp_path)  # fmt: skip
    expect(bad, EXIT_INPUT)
    assert_replaced(prom, xml, EXIT_INPUT, passed_at, "nosuchkey")
    assert bad.stderr.strip().endswith(" no run]"), bad.stderr


def assert_replaced(prom: Path, xml: Path, code: int, passed_at: float, said: str) -> None:
    found = metrics(prom)
    assert set(found) == {"netrun_run_exit_code", "netrun_run_timestamp_seconds",
                          "netrun_last_success_timestamp_seconds"}, found  # fmt: skip
    assert [s.value for s in found["netrun_run_exit_code"]] == [code]
    assert last_success(found, "lock") == passed_at
    suite = junit(xml)
    assert (suite.get("tests"), suite.get("errors"), suite.get("failures")) == ("1", "1", "0")
    assert said in ET.tostring(suite, encoding="unicode")


def test_a_full_results_disk_exits_1_even_when_a_test_regressed(
    lab: LabHandle, tmp_path: Path
) -> None:
    """reports.md promises 1 when results cannot be saved; a regression judged on the way
    must not turn it into 3. The line saying so comes last. The regression is a ping's RTT
    against a baseline run whose RTTs are a hundredth of this lab's: no CPU rule or noise
    can call that change anything but a regression."""
    scen = write_scenario(
        tmp_path, [entry("rtt", tool="ping", count=5, interval=0.2, repeat=2)], name="full"
    )
    expect(netrun(tmp_path, scen, "-i", lab.inventory, out="first"), EXIT_OK)
    base = load_results(tmp_path / "first")
    base["run_id"] += "-fast"
    for sample in base["tests"]:
        sample["metrics"] = {k: v / 100 if k.startswith("rtt_") and v else v
                             for k, v in sample["metrics"].items()}  # fmt: skip
    (tmp_path / "base.json").write_text(json.dumps(base))
    prom, xml = tmp_path / "netrun.prom", tmp_path / "junit.xml"
    with tiny_tmpfs(tmp_path / "results") as fs:
        fill(fs)
        res = netrun(
            tmp_path, scen, "-i", lab.inventory, "--baseline", tmp_path / "base.json",
            "--prometheus", prom, "--junit", xml, out=str(fs / "nightly"),
        )  # fmt: skip
    expect(res, EXIT_FAILED)
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith(f"netrun: error: results not saved: {fs}/nightly"), res.stderr
    assert "No space left on device" in last and last.endswith("]"), last
    assert [s.value for s in metrics(prom)["netrun_run_exit_code"]] == [EXIT_FAILED]
    (regression,) = [f for f in junit(xml).iter("failure") if f.get("type") == "regression"]
    # the deciding RTT metric (the one furthest past its limit), with its values
    assert re.search(r"rtt_\w+_ms \S+ -> \S+ ms", regression.get("message") or ""), xml.read_text()
    assert res.stdout.startswith("full: 1 regressed (rtt +"), res.stdout
    assert_nothing_left(lab, fs / "nightly")


# -- 8. a bad history database --------------------------------------------------------------------
def test_corrupt_database_is_refused_and_left_alone(lab: LabHandle, tmp_path: Path) -> None:
    db = tmp_path / "history.sqlite"
    db.write_bytes(os.urandom(8192))
    before = db.read_bytes()
    scen = write_scenario(tmp_path, [entry("c")], name="corrupt")
    res = netrun(tmp_path, scen, "-i", lab.inventory, db=db)
    assert res.returncode in (EXIT_INPUT, EXIT_FAILED), res.stderr
    lines = error_lines(res.stderr)
    assert len(lines) == 1, res.stderr
    assert str(db) in lines[0] and "--db" in lines[0], lines
    assert db.read_bytes() == before, "a file that is not ours must never be written"
    assert not (tmp_path / "out").exists(), "no test may run"
    hist = cli(tmp_path, "history", "--db", db)
    assert hist.returncode in (EXIT_INPUT, EXIT_FAILED) and len(error_lines(hist.stderr)) == 1
    assert db.read_bytes() == before


class HeldLock:
    """An exclusive SQLite lock on ``db`` held by this process (like another writer)."""

    def __init__(self, db: Path) -> None:
        self.conn = sqlite3.connect(db, isolation_level=None)
        self.conn.execute("BEGIN EXCLUSIVE")

    def release(self) -> None:
        self.conn.execute("ROLLBACK")
        self.conn.close()


def prepare_db(tmp: Path, lab: LabHandle, saved: Path) -> Path:
    """A valid history database holding the saved run (so a lock is what fails, not schema)."""
    db = tmp / "history.sqlite"
    res = cli(tmp, "history", "import", saved / "out", "--db", db)
    expect(res, EXIT_OK)
    return db


def check_not_lost(
    tmp: Path, db: Path, res: subprocess.CompletedProcess[str], *, hint: bool = False
) -> None:
    """The run failed to store itself but kept its results; import takes them in later.

    ``hint``: also require the error to say how to store the run later.
    """
    assert res.returncode == EXIT_FAILED, res.stderr
    lines = error_lines(res.stderr)
    assert len(lines) == 1, res.stderr
    assert str(db) in lines[0] and "locked" in lines[0], lines
    doc = load_results(tmp / "out")
    assert doc["status"] == "finished" and doc["tests"][0]["status"] == "ok"
    assert doc["run_id"] not in stored_runs(tmp, db)
    got = cli(tmp, "history", "import", tmp / "out", "--db", db)
    expect(got, EXIT_OK)
    assert "imported 1 run(s)" in got.stdout, got.stdout
    assert doc["run_id"] in stored_runs(tmp, db)
    if hint:
        assert f"netrun history import {tmp / 'out'}" in lines[0], lines


def lock_db_mid_run(lab: LabHandle, tmp: Path, db: Path) -> subprocess.CompletedProcess[str]:
    """Run netrun; once it is measuring, hold an exclusive SQLite lock until it exits."""
    scen = write_scenario(tmp, [entry("lk", duration=2)], name="dblock")
    args: list[str | Path] = [scen, "-i", lab.inventory, "-q", "--db", db, "-o", "out"]
    with netrun_process(args, cwd=tmp) as proc:
        assert wait_for(lambda: (tmp / "out" / "results.json").exists(), 30)
        held = HeldLock(db)
        try:
            _stdout, stderr = proc.communicate(timeout=90)
        finally:
            held.release()
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    return subprocess.CompletedProcess(args, proc.returncode, "", stderr)


def test_database_locked_during_the_run_keeps_results(
    lab: LabHandle, saved: Path, tmp_path: Path
) -> None:
    db = prepare_db(tmp_path, lab, saved)
    check_not_lost(tmp_path, db, lock_db_mid_run(lab, tmp_path, db))


def test_database_locked_error_says_how_to_import_later(
    lab: LabHandle, saved: Path, tmp_path: Path
) -> None:
    db = prepare_db(tmp_path, lab, saved)
    check_not_lost(tmp_path, db, lock_db_mid_run(lab, tmp_path, db), hint=True)


def test_database_locked_for_the_whole_run_keeps_results(
    lab: LabHandle, saved: Path, tmp_path: Path
) -> None:
    db = prepare_db(tmp_path, lab, saved)
    scen = write_scenario(tmp_path, [entry("lk")], name="dblock")
    held = HeldLock(db)
    try:
        res = netrun(tmp_path, scen, "-i", lab.inventory, db=db)
    finally:
        held.release()
    check_not_lost(tmp_path, db, res, hint=True)


def test_history_import_folder_skips_stored_runs(
    lab: LabHandle, saved: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "saved-runs"
    shutil.copytree(saved / "out", folder / "night1")
    second = load_results(saved / "out")
    second["run_id"] = second["run_id"][::-1]
    (folder / "night2").mkdir()
    (folder / "night2" / "results.json").write_text(json.dumps(second))
    (folder / "broken").mkdir()
    (folder / "broken" / "results.json").write_text("{not json")
    db = tmp_path / "history.sqlite"

    # The saved run is already stored in its own database: copy that one.
    shutil.copy(saved / "history.sqlite", db)
    got = cli(tmp_path, "history", "import", folder, "--db", db)
    expect(got, EXIT_OK)
    assert "imported 1 run(s)" in got.stdout, got.stdout
    assert "broken" in got.stderr and "netrun: skipped" in got.stderr, got.stderr
    listed = stored_runs(tmp_path, db)
    assert second["run_id"] in listed and load_results(saved / "out")["run_id"] in listed

    again = cli(tmp_path, "history", "import", folder, "--db", db)
    expect(again, EXIT_OK)
    assert "imported 0 run(s)" in again.stdout, again.stdout
    fresh = cli(tmp_path, "history", "import", folder, "--db", tmp_path / "fresh.sqlite")
    assert "imported 2 run(s)" in fresh.stdout, fresh.stdout
