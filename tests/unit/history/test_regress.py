"""netrun.history.regress: tolerances, verdicts on runs with chosen samples, and baseline lookup."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from netrun.errors import InputError
from netrun.history.db import History
from netrun.history.regress import (
    Tolerances,
    Verdict,
    compare,
    parse_tolerance,
    resolve_baseline,
    tolerances_from_doc,
    worst,
)
from tests.conftest import HISTORY_FIXTURES

M = 1e6


def sample(name: str, mbit: float | None, **extra: Any) -> dict[str, Any]:
    """One results.json sample with the fields regress reads."""
    rec: dict[str, Any] = {
        "name": name,
        "status": "ok" if mbit is not None else "failed",
        "error": None if mbit is not None else "iperf3 exited 1",
        "throughput_bps": mbit * M if mbit is not None else None,
        "jitter_ms": None,
        "lost_percent": None,
        "retransmits": None,
        "options": {},
    }
    rec.update(extra)
    return rec


def doc(*samples: dict[str, Any], run_id: str = "cur", scenario: str = "s") -> dict[str, Any]:
    return {"schema": 1, "run_id": run_id, "scenario": scenario, "tests": list(samples)}


def run(name: str, *mbits: float | None, **extra: Any) -> list[dict[str, Any]]:
    return [sample(name, m, **extra) for m in mbits]


def one(current: dict[str, Any], baseline: dict[str, Any], tol: Tolerances) -> Verdict:
    [verdict] = compare(current, baseline, tol)
    return verdict


# -- tolerances -----------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "value"), [("5%", 0.05), ("0.5%", 0.005), (" 12 % ", 0.12)])
def test_parse_tolerance(text: str, value: float) -> None:
    assert parse_tolerance(text) == pytest.approx(value)


@pytest.mark.parametrize("bad", ["5", 5, "0.05", "-5%", "five%", "150%", "", None, "5%%"])
def test_parse_tolerance_rejects(bad: object) -> None:
    with pytest.raises(InputError) as err:
        parse_tolerance(bad)
    assert str(err.value) == f"tolerance must be a percentage such as 5%, got {bad!r}"


def test_tolerances_from_the_recorded_options() -> None:
    opts = {"tolerance": "2%", "loss_tolerance": 1.5, "jitter_tolerance": None}
    d = doc(*run("udp", 100, options=opts), *run("tcp", 100))
    lookup = tolerances_from_doc(d)
    assert lookup("udp") == Tolerances(0.02, loss=1.5)
    assert lookup("tcp") == Tolerances(0.05)
    assert tolerances_from_doc(d, throughput=0.1)("udp") == Tolerances(0.1, loss=1.5)


# -- throughput verdicts ---------------------------------------------------------------------
TOL = Tolerances(throughput=0.05)
BASE = doc(*run("t", 940, 941, 939), run_id="base")


def test_within_tolerance_is_ok() -> None:
    v = one(doc(*run("t", 920, 921, 919)), BASE, TOL)  # -2.1%
    assert v.verdict == "ok"
    assert v.delta_pct == pytest.approx((920 - 940) / 940 * 100)


def test_drop_with_separate_intervals_is_regressed() -> None:
    v = one(doc(*run("t", 800, 801, 799)), BASE, TOL)
    assert v.verdict == "regressed"
    assert v.delta_pct == pytest.approx(-14.893617, abs=1e-4)
    assert "do not overlap" in v.detail and "800.0 vs 940.0 Mbit/s" in v.detail


def test_rise_with_separate_intervals_is_improved() -> None:
    assert one(doc(*run("t", 990, 991, 989)), BASE, TOL).verdict == "improved"


def test_drop_with_overlapping_intervals_is_noisy() -> None:
    # median 800 (-14.9%) but one repeat at 950: the current CI reaches over the baseline's.
    v = one(doc(*run("t", 800, 700, 950)), BASE, TOL)
    assert v.verdict == "noisy"
    assert "overlap" in v.detail and "do not" not in v.detail


def test_noisy_baseline_makes_a_drop_noisy() -> None:
    base = doc(*run("t", 940, 500, 1400), run_id="base")
    assert one(doc(*run("t", 800, 801, 799)), base, TOL).verdict == "noisy"


def test_single_samples_use_the_bare_threshold() -> None:
    base = doc(*run("t", 1000), run_id="base")
    assert one(doc(*run("t", 960)), base, TOL).verdict == "ok"
    assert one(doc(*run("t", 940)), base, TOL).verdict == "regressed"
    assert one(doc(*run("t", 1060)), base, TOL).verdict == "improved"
    # two samples now, one in the baseline: still only the threshold
    v = one(doc(*run("t", 940, 700)), base, TOL)
    assert v.verdict == "regressed" and "no CI" in v.detail


def test_two_samples_a_side_have_no_ci_only_the_threshold() -> None:
    """Two repeats give Student t one degree of freedom (t = 12.7): no interval to judge by."""
    base = doc(*run("t", 1000, 1010), run_id="base")
    v = one(doc(*run("t", 800, 700)), base, TOL)
    assert v.verdict == "regressed"
    assert "fewer than 3 samples (n=2 vs 2), no CI" in v.detail and "overlap" not in v.detail


def test_tolerance_is_per_test() -> None:
    cur = doc(*run("a", 900), *run("b", 900))
    base = doc(*run("a", 1000), *run("b", 1000), run_id="base")
    loose = {"a": Tolerances(0.15), "b": Tolerances(0.05)}
    verdicts = compare(cur, base, lambda name: loose[name])
    assert [(v.test, v.verdict) for v in verdicts] == [("a", "ok"), ("b", "regressed")]


# -- limits on loss, jitter, retransmits ---------------------------------------------------
def test_loss_rise_beyond_the_limit_regresses() -> None:
    base = doc(*run("u", 500, 500, 500, lost_percent=0.1), run_id="base")
    cur = doc(*run("u", 500, 500, 500, lost_percent=2.5))
    tol = Tolerances(0.05, loss=1.0)
    v = one(cur, base, tol)
    assert v.verdict == "regressed" and "UDP loss rose by 2.40 points" in v.detail
    assert one(cur, base, Tolerances(0.05, loss=3.0)).verdict == "ok"
    assert one(cur, base, Tolerances(0.05)).verdict == "regressed"  # iperf3's 1 point


def test_udp_loss_is_judged_by_default() -> None:
    """Issue 25: a nightly whose UDP loss went from 0.2% to 8.7% exits 3 with no tolerance
    set (iperf3's lost_percent defaults to 1 percentage point); 0.2 -> 1.1 is within it."""
    base = doc(*run("u", 500, 500, 500, lost_percent=0.2), run_id="base")
    [v] = compare(doc(*run("u", 500, 500, 500, lost_percent=8.7)), base)
    assert v.verdict == "regressed" and v.metrics == ("lost_percent",)
    assert "UDP loss rose by 8.50 points (0.20 -> 8.70), limit 1, worst repeat: 1 of 3" in v.detail
    [v] = compare(doc(*run("u", 500, 500, 500, lost_percent=1.1)), base)
    assert v.verdict == "ok"


def test_one_lossy_repeat_is_not_hidden_by_the_median() -> None:
    """A repeat that lost 27% while its siblings lost 0.2% regresses the test, named."""
    base = doc(*run("u", 500, 500, 500, lost_percent=0.2), run_id="base")
    cur = doc(*run("u", 500, 500, 500, lost_percent=0.2))
    cur["tests"][2]["lost_percent"] = 27.0
    [v] = compare(cur, base)
    assert v.verdict == "regressed"
    assert "rose by 26.80 points (0.20 -> 27.00), limit 1, worst repeat: 3 of 3" in v.detail
    # the same lossy repeat in the baseline too: not a change, not a regression
    base["tests"][0]["lost_percent"] = 27.0
    assert compare(cur, base)[0].verdict == "ok"


def test_every_directed_metric_has_a_default_tolerance() -> None:
    """Every tool's metric has a default (iperf3's throughput takes ``tolerance``), loss is
    1 percentage point everywhere; CPU use, the figures that restate another (sender_bps
    and pps the headline, lost the loss, received_pct the loss and the sender's flag,
    iperf3's TCP windows the bandwidth-delay product, its RTTs the queue a bulk flow fills,
    netrun.tools.iperf3.tcpinfo) and the offered rate (an input) are left to the scenario;
    so is every host-CPU figure (the tool's process, the busiest core, softirq: a host's CPU
    counts whatever else it ran)."""
    from netrun.tools import tools

    for tool in tools().values():
        for metric in tool.metrics:
            restated = ("sender_bps", "pps", "lost", "received_pct", "offered_bps",
                        "snd_cwnd_max_bytes", "snd_wnd_max_bytes")  # fmt: skip
            queue = tool.name == "iperf3" and metric.name in ("rtt_mean_ms", "rtt_max_ms")
            host_cpu = metric.name.startswith(("cpu_", "busiest_core_", "softirq_"))
            if host_cpu or queue or metric.name in restated:
                assert metric.tolerance is None
            elif (tool.name, metric.name) != ("iperf3", "throughput_bps"):
                assert metric.tolerance is not None, (tool.name, metric.name)
            if metric.name == "lost_percent":
                assert metric.tolerance == 1.0, tool.name


def test_jitter_and_retransmits_limits() -> None:
    base = doc(*run("u", 500, 500, jitter_ms=0.01, retransmits=3), run_id="base")
    cur = doc(*run("u", 500, 500, jitter_ms=0.5, retransmits=40))
    v = one(cur, base, Tolerances(0.05, jitter_ms=0.1, retransmits=50))
    assert v.verdict == "regressed" and "jitter rose by 0.490 ms" in v.detail
    v = one(cur, base, Tolerances(0.05, jitter_ms=1.0, retransmits=10))
    assert v.verdict == "regressed" and "retransmits rose by 37" in v.detail
    assert one(cur, base, Tolerances(0.05, jitter_ms=1.0, retransmits=37)).verdict == "ok"


# -- failed and new tests --------------------------------------------------------------------
def test_a_failed_sample_makes_the_test_failed() -> None:
    v = one(doc(*run("t", 940, None, 941)), BASE, TOL)
    assert v.verdict == "failed"
    assert v.detail.startswith("1 of 3 samples failed (iperf3 exited 1)")
    all_failed = one(doc(*run("t", None, None)), BASE, TOL)
    assert (all_failed.verdict, all_failed.delta_pct) == ("failed", None)


def test_new_tests_and_tests_only_in_the_baseline() -> None:
    cur = doc(*run("t", 940), *run("fresh", 10))
    base = doc(*run("t", 940), *run("gone", 5), run_id="base")
    verdicts = compare(cur, base, TOL)
    assert [(v.test, v.verdict) for v in verdicts] == [("t", "ok"), ("fresh", "new")]
    failed_base = doc(*run("t", None), run_id="base")
    assert one(doc(*run("t", 940)), failed_base, TOL).verdict == "new"


def test_worst() -> None:
    verdicts = [
        Verdict("a", "ok", 0, ""),
        Verdict("b", "noisy", -9, ""),
        Verdict("c", "new", None, ""),
    ]
    assert worst(verdicts) == "noisy"
    assert worst([]) is None


def test_compare_two_real_runs() -> None:
    first = json.loads((HISTORY_FIXTURES / "baremetal-1" / "results.json").read_text())
    second = json.loads((HISTORY_FIXTURES / "baremetal-2" / "results.json").read_text())
    verdicts = {v.test: v for v in compare(second, first)}
    assert set(verdicts) == {"tcp-forward", "tcp-reverse", "tcp-4-streams", "udp-500m"}
    # tcp-4-streams: 265.6, 291.1, 957.2 then 957.8, 952.1, 951.0 Mbit/s: +227% by median,
    # but the first run's 95% CI is wide enough to reach over the second's.
    assert verdicts["tcp-4-streams"].verdict == "noisy"
    assert verdicts["tcp-4-streams"].delta_pct == pytest.approx(227.1, abs=0.5)
    assert all(v.verdict in ("ok", "noisy", "improved", "regressed") for v in verdicts.values())


# -- resolving the baseline ------------------------------------------------------------------
@pytest.fixture
def history(tmp_path: Path) -> History:
    h = History.open(tmp_path / "h.sqlite")
    for name in ("baremetal-1", "baremetal-2"):
        h.add_run(json.loads((HISTORY_FIXTURES / name / "results.json").read_text()))
    yield h
    h.close()


def test_baseline_last_is_the_run_before_this_one(history: History) -> None:
    first, second = (r.run_id for r in history.runs())
    assert resolve_baseline("last", history, "baremetal", "brand-new")["run_id"] == second
    assert resolve_baseline("last", history, "baremetal", second)["run_id"] == first
    with pytest.raises(InputError, match=r"no earlier stored run of scenario 'baremetal'"):
        resolve_baseline("last", history, "baremetal", first)
    with pytest.raises(InputError, match="netrun history"):
        resolve_baseline("last", history, "other", None)


def test_baseline_by_run_id_prefix(history: History) -> None:
    first = history.runs()[0].run_id
    assert resolve_baseline(first[:4], history, "baremetal", "x")["run_id"] == first
    with pytest.raises(InputError) as err:
        resolve_baseline("zzzz", history, "baremetal", "x")
    assert str(err.value).startswith("baseline 'zzzz': ") and "`netrun history`" in str(err.value)
    with pytest.raises(InputError, match="is the current run itself"):
        resolve_baseline(first, history, "baremetal", first)


def test_baseline_by_path(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    shutil.copytree(HISTORY_FIXTURES / "baremetal-1", folder)
    want = json.loads((folder / "results.json").read_text())["run_id"]
    assert resolve_baseline(str(folder), None, "baremetal")["run_id"] == want
    assert resolve_baseline(str(folder / "results.json"), None, "baremetal")["run_id"] == want
    with pytest.raises(InputError, match=r"no such results file or run folder; list stored runs"):
        resolve_baseline(str(tmp_path / "missing.json"), None, "baremetal")
    (tmp_path / "bad.json").write_text(json.dumps({"schema": 99, "run_id": want}))
    with pytest.raises(InputError, match=r"bad\.json: not a netrun results file"):
        resolve_baseline(str(tmp_path / "bad.json"), None, "baremetal")
    with pytest.raises(InputError, match="needs the history database"):
        resolve_baseline("last", None, "baremetal")


# -- declared metrics: any tool, any direction ------------------------------------------------
def ping_run(name: str, *rtts: float | None, lost: float = 0.0, **opts: Any) -> list[dict]:
    return [
        {
            "name": name,
            "tool": "ping",
            "status": "ok",
            "options": dict(opts),
            "metrics": {"rtt_avg_ms": rtt, "rtt_min_ms": rtt, "lost_percent": lost},
            "details": {} if rtt is not None else {"unavailable": {"rtt_avg_ms": "test"}},
        }
        for rtt in rtts
    ]


def test_a_far_higher_rtt_regresses_on_rtt_avg_ms() -> None:
    cur, base = doc(*ping_run("p", 0.5)), doc(*ping_run("p", 0.05))
    [v] = compare(cur, base)
    assert v.verdict == "regressed" and v.metrics == ("rtt_avg_ms", "rtt_min_ms")
    assert v.delta_pct == pytest.approx(900)
    assert v.detail.startswith("rtt_avg_ms 0.500 vs 0.050 ms (+900.0%, tolerance 20%)")


def test_lower_rtt_is_an_improvement_and_within_tolerance_is_ok() -> None:
    assert compare(doc(*ping_run("p", 0.01)), doc(*ping_run("p", 0.05)))[0].verdict == "improved"
    assert compare(doc(*ping_run("p", 0.055)), doc(*ping_run("p", 0.05)))[0].verdict == "ok"


def test_tolerances_per_metric_override_the_tool_defaults() -> None:
    loose = {"tolerances": {"rtt_avg_ms": "1000%", "rtt_min_ms": "1000%", "lost_percent": 0.5}}
    cur = doc(*ping_run("p", 0.5, lost=2.0, **loose))
    [v] = compare(cur, doc(*ping_run("p", 0.05)))
    assert v.verdict == "regressed" and v.metrics == ("lost_percent",)
    assert "lost_percent rose by 2.00 % (0.00 -> 2.00), limit 0.5" in v.detail
    # ping's default for loss is 1 point: 0.8 more is fine
    assert (
        compare(doc(*ping_run("p", 0.05, lost=0.8)), doc(*ping_run("p", 0.05)))[0].verdict == "ok"
    )


def test_relative_tolerance_on_a_secondary_metric() -> None:
    cur = doc(*ping_run("p", 0.05, tolerances={"rtt_min_ms": "10%"}))
    for s in cur["tests"]:
        s["metrics"]["rtt_min_ms"] = 0.08
    [v] = compare(cur, doc(*ping_run("p", 0.05)))
    assert v.verdict == "regressed" and "rtt_min_ms rose by 60.0%" in v.detail


def test_a_null_metric_is_skipped_never_read_as_zero() -> None:
    """issue 13's FreeFlow records retransmits as null with a reason: no verdict on it."""
    cur = doc(*run("t", 100, 100, retransmits=None))
    base = doc(*run("t", 100, 100, retransmits=0))
    [v] = compare(cur, base, Tolerances(0.05, retransmits=0))
    assert v.verdict == "ok" and "retransmits" not in v.detail
    [v] = compare(doc(*ping_run("p", None)), doc(*ping_run("p", 0.05)))
    assert v.verdict == "failed"  # no ok rtt on our side: nothing measured


def test_schema_1_options_still_map_to_metrics() -> None:
    opts = {"tolerance": "2%", "loss_tolerance": 1.5, "tolerances": {"jitter_ms": 0.1}}
    d = doc(*run("udp", 100, options=opts))
    tol = tolerances_from_doc(d)("udp")
    assert tol.limits(None) == {
        "throughput_bps": ("relative", 0.02),
        "lost_percent": ("absolute", 1.5),
        "jitter_ms": ("absolute", 0.1),
    }


def test_a_tcp_drop_within_overlapping_cis_stays_noisy() -> None:
    """The sender's rate moves with a TCP test's throughput: it has no default of its own, so
    the headline's confidence-interval rule still decides (noisy, not regressed)."""
    base = doc(*run("t", 940, 900, 960, sender_bps=940 * M), run_id="base")
    cur = doc(*run("t", 880, 940, 800, sender_bps=860 * M))
    [v] = compare(cur, base)
    assert v.verdict == "noisy" and v.metrics == ()


def test_retransmits_are_judged_by_an_absolute_rise() -> None:
    """0 -> 5000 retransmits regresses (a relative limit cannot judge a baseline of 0);
    3 -> 40 is a healthy link's noise."""
    base = doc(*run("t", 940, 941, retransmits=0), run_id="base")
    [v] = compare(doc(*run("t", 940, 941, retransmits=5000)), base)
    assert v.verdict == "regressed" and v.metrics == ("retransmits",)
    assert "retransmits rose by 5000 (0 -> 5000), limit 1000" in v.detail
    noisy = doc(*run("t", 940, 941, retransmits=3), run_id="base")
    assert compare(doc(*run("t", 940, 941, retransmits=40)), noisy)[0].verdict == "ok"
