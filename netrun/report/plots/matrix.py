"""The pair matrix: generated pairs' main metric as an N x N grid, client rows, server columns.

In a list of hundreds of rows a bad cable hides; in a grid it is a dim row and column. For
every matrix of generated pairs (``hosts:`` + ``pairs:``, netrun.scenario.pairs) this builds the
grid from results.json alone (the median over each pair's ok repeats of the tool's first metric),
names each pair more than the tolerance worse than the median of its row and column, names
a host whose pairs are all worse, and leaves a failed pair as a gap. report/render.py renders the
grids as text, markdown and HTML, as a ``matrices`` list in JSON (``Grid.to_dict``) and as
a ``matrix`` column in CSV (its rows are the cells, long form); ``--plot`` draws heatmaps.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netrun.core.metrics import Metric, finite, parse_tolerance
from netrun.report.plots import png
from netrun.results.store import safe_name

DEFAULT_TOLERANCE = ("relative", 0.05)
UNDIRECTED = ("mesh-once", "ring")  # one leg per pair: a host's line is its row and column
SQUARE = ("mesh", "mesh-once", "ring")  # the same hosts on both axes
FAILED, NOT_PAIRED, SELF = "FAIL", "", "·"
#: Columns up to which a heatmap's cells carry their numbers (past it a cell is too narrow).
ANNOTATED = 16


@dataclass
class Grid:
    """One matrix: its hosts, each pair's value (None: the pair failed), what stands out."""

    id: str
    kind: str
    metric: Metric
    rows: list[str] = field(default_factory=list)
    cols: list[str] = field(default_factory=list)
    values: dict[tuple[str, str], float | None] = field(default_factory=dict)
    tolerance: tuple[str, float] = DEFAULT_TOLERANCE
    notes: list[str] = field(default_factory=list)

    def cell(self, client: str, server: str) -> str:
        if (client, server) not in self.values:
            return SELF if client == server else NOT_PAIRED
        value = self.values[(client, server)]
        return FAILED if value is None else f"{value / self.metric.scale:.{self.metric.digits}f}"

    @property
    def title(self) -> str:
        unit = self.metric.shown_unit or self.metric.unit
        return (
            f"matrix {self.id} ({self.kind}): {self.metric.name} in {unit}, "
            "client rows, server columns"
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON report's form: the grid in the metric's shown unit, rows x columns;
        null where no pair ran (the diagonal) or the pair failed, which ``failed`` lists."""
        scale = self.metric.scale
        return {
            "id": self.id,
            "pairs": self.kind,
            "metric": self.metric.name,
            "unit": self.metric.shown_unit or self.metric.unit,
            "clients": list(self.rows),
            "servers": list(self.cols),
            "values": [
                [None if (v := self.values.get((c, s))) is None else v / scale for s in self.cols]
                for c in self.rows
            ],
            "failed": [[c, s] for (c, s), v in self.values.items() if v is None],
            "notes": list(self.notes),
        }

    def table(self) -> tuple[list[str], list[list[str]]]:
        """Headers and cells, the first column naming the client."""
        headers = ["client \\ server", *self.cols]
        return headers, [[c, *(self.cell(c, s) for s in self.cols)] for c in self.rows]


def grids(doc: dict[str, Any]) -> list[Grid]:
    """Every matrix of the run, in scenario order (empty when no test was generated)."""
    found: dict[str, Grid] = {}
    samples: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    raw_declared = doc.get("metrics")
    declared: dict[str, Any] = raw_declared if isinstance(raw_declared, dict) else {}
    for sample in doc.get("tests") or []:
        if not isinstance(sample, dict):
            continue
        tag, client, server = sample.get("matrix"), sample.get("client"), sample.get("server")
        if not isinstance(tag, dict) or not isinstance(tag.get("id"), str):
            continue
        if not isinstance(client, str) or not isinstance(server, str):
            continue
        grid = found.get(tag["id"])
        if grid is None:
            metric = _headline(sample, declared)
            if metric is None:
                continue
            grid = found[tag["id"]] = Grid(tag["id"], str(tag.get("pairs") or "pairs"), metric)
            grid.tolerance = _tolerance(sample, metric)
        square = grid.kind in SQUARE
        for axis, host in ((grid.rows, client), (grid.cols, server)):
            for each in (grid.rows, grid.cols) if square else (axis,):
                if host not in each:
                    each.append(host)
        samples.setdefault((grid.id, client, server), []).append(sample)
    for (gid, client, server), group in samples.items():
        grid = found[gid]
        ok = [finite((s.get("metrics") or {}).get(grid.metric.name)) for s in group]
        known = [
            v for s, v in zip(group, ok, strict=True) if s.get("status") == "ok" and v is not None
        ]
        grid.values[(client, server)] = statistics.median(known) if known else None
    for grid in found.values():
        grid.notes = _findings(grid)
    return list(found.values())


def _headline(sample: dict[str, Any], declared: dict[str, Any]) -> Metric | None:
    """The tool's main metric: the first a sample carries (tools declare it first)."""
    metrics = sample.get("metrics")
    if not isinstance(metrics, dict) or not metrics:
        return Metric("throughput_bps", "bit/s", "higher", "", scale=1e6, shown_unit="Mbit/s")
    name = str(next(iter(metrics)))
    data = declared.get(name)
    return Metric.from_dict(name, data if isinstance(data, dict) else {})


def _tolerance(sample: dict[str, Any], metric: Metric) -> tuple[str, float]:
    """The test's tolerance for its main metric: tolerances:, tolerance (throughput), the
    tool's default, else 5%."""
    raw_options = sample.get("options")
    options: dict[str, Any] = raw_options if isinstance(raw_options, dict) else {}
    raw_per_metric = options.get("tolerances")
    per_metric: dict[str, Any] = raw_per_metric if isinstance(raw_per_metric, dict) else {}
    for value in (
        per_metric.get(metric.name),
        options.get("tolerance") if metric.name == "throughput_bps" else None,
        metric.tolerance,
    ):
        if value is not None:
            try:
                return parse_tolerance(value)
            except ValueError:
                continue
    return DEFAULT_TOLERANCE


def _worse(grid: Grid, value: float, reference: float) -> bool:
    kind, amount = grid.tolerance
    margin = reference * amount if kind == "relative" else amount
    if grid.metric.better == "lower":
        return value > reference + margin
    return value < reference - margin


def _lines(grid: Grid) -> dict[tuple[str, int], list[tuple[str, str]]]:
    """Each host's row (side 0: as client) and column (1) of pairs; for an undirected
    matrix, where a pair is measured one way only, both are every pair of the host."""
    out: dict[tuple[str, int], list[tuple[str, str]]] = {}
    for pair in grid.values:
        for side in (0, 1):
            out.setdefault((pair[side], side), []).append(pair)
            if grid.kind in UNDIRECTED:
                out.setdefault((pair[side], 1 - side), []).append(pair)
    return out


def _findings(grid: Grid) -> list[str]:
    """The lines under a matrix: worse pairs, worse hosts, gaps."""
    measured = {p: v for p, v in grid.values.items() if v is not None}
    show = grid.metric.show
    unit = grid.metric.shown_unit or grid.metric.unit
    kind, amount = grid.tolerance
    tol = f"{amount * 100:g}%" if kind == "relative" else f"{amount:g} {grid.metric.unit}"
    out: list[str] = []
    slow_hosts: list[str] = []
    if len(measured) >= 3:  # a host all of whose pairs are worse: its cable, port or NIC
        overall = statistics.median(measured.values())
        for host in dict.fromkeys([*grid.rows, *grid.cols]):
            mine = [measured[p] for p in measured if host in p]
            if 2 <= len(mine) < len(measured) and all(_worse(grid, v, overall) for v in mine):
                slow_hosts.append(host)
                out.append(
                    f"{grid.id}: all {len(mine)} pairs of {host} ({show(min(mine))}-"
                    f"{show(max(mine))} {unit}) are more than {tol} worse than the matrix median "
                    f"({show(overall)}): look at {host}'s cable, port or NIC"
                )
    lines = _lines(grid)
    for (client, server), value in measured.items():
        if client in slow_hosts or server in slow_hosts:
            continue  # named with its host above
        around = {*lines.get((client, 0), ()), *lines.get((server, 1), ())}
        others = [measured[p] for p in around if p in measured and p != (client, server)]
        if len(others) < 2:
            continue
        median = statistics.median(others)
        if _worse(grid, value, median):
            out.append(
                f"{grid.id}: {client}->{server} {show(value)} {unit} is more than {tol} worse "
                f"than the median of its row and column ({show(median)})"
            )
    gaps = [f"{c}->{s}" for (c, s), v in grid.values.items() if v is None]
    if gaps:
        out.append(f"{grid.id}: {len(gaps)} pair(s) failed ({FAILED}): {', '.join(gaps)}")
    return out


def plot(grid: Grid, path: Path) -> Path:
    """A heatmap PNG of one matrix; failed pairs are hatched gaps, unpaired cells blank."""
    n_cols, n_rows = len(grid.cols), len(grid.rows)
    annotated = n_cols <= ANNOTATED
    # Cells without text need only their tick label's height: a 32 x 32 grid drawn at the
    # annotated size was a 2000 x 1600 px PNG, a third of a 992-test page's render time.
    width, height = (0.55, 0.45) if annotated else (0.3, 0.26)
    fig = png.figure(min(3.0 + width * n_cols, 28.0), min(2.0 + height * n_rows, 28.0))
    ax = fig.add_subplot(1, 1, 1)
    nan = float("nan")
    data = [
        [
            nan if (v := grid.values.get((c, s))) is None else v / grid.metric.scale
            for s in grid.cols
        ]
        for c in grid.rows
    ]
    cmap = "viridis" if grid.metric.better == "higher" else "viridis_r"
    known = [v for row in data for v in row if v == v]  # v == v: not NaN
    low, top = min(known, default=0.0), max(known, default=1.0)
    if top - low < 1e-9 * max(abs(top), 1.0):  # every pair alike: a scale around the value
        low, top = low * 0.95 if low > 0 else low - 1.0, top * 1.05 if top > 0 else top + 1.0
    # The scale spans the measured pairs, not 0..max: a pair 10% below the others stands out.
    image = ax.imshow(data, cmap=cmap, aspect="auto", vmin=low, vmax=top)
    fig.colorbar(image, ax=ax, label=f"{grid.metric.name} ({grid.metric.shown_unit})")
    for i, c in enumerate(grid.rows):
        for j, s in enumerate(grid.cols):
            if (c, s) in grid.values and grid.values[(c, s)] is None:
                ax.add_patch(_gap(j, i))
            elif (c, s) in grid.values and annotated:
                dark = data[i][j] < low + 0.6 * (top - low)
                colour = "w" if dark == (grid.metric.better == "higher") else "k"
                ax.text(j, i, grid.cell(c, s), ha="center", va="center", fontsize=7, color=colour)
    ax.set_xticks(range(n_cols), grid.cols, rotation=90, fontsize=8)
    ax.set_yticks(range(n_rows), grid.rows, fontsize=8)
    ax.set_xlabel("server")
    ax.set_ylabel("client")
    ax.set_title(grid.title.replace(", client rows", ",\nclient rows"), fontsize=9)
    fig.tight_layout()
    return png.save(fig, path)


def _gap(x: int, y: int) -> Any:
    from matplotlib.patches import Rectangle

    return Rectangle((x - 0.5, y - 0.5), 1, 1, fill=False, hatch="xx", edgecolor="red")


def plot_all(doc: dict[str, Any], outdir: Path) -> list[Path]:
    """matrix-ID.png for each matrix of the run."""

    return [plot(g, outdir / f"matrix-{safe_name(g.id)}.png") for g in grids(doc)]


def members(doc: dict[str, Any]) -> dict[str, str]:
    """Test name -> the id of the matrix it is a cell of (the CSV report's column)."""
    out: dict[str, str] = {}
    for sample in doc.get("tests") or []:
        tag = sample.get("matrix") if isinstance(sample, dict) else None
        if isinstance(tag, dict) and isinstance(tag.get("id"), str):
            out.setdefault(str(sample.get("name")), tag["id"])
    return out


def text_blocks(doc: dict[str, Any]) -> Iterable[tuple[str, list[str], list[list[str]], list[str]]]:
    """(title, headers, rows, notes) of each matrix, for the report's renderers."""
    for grid in grids(doc):
        headers, rows = grid.table()
        yield grid.title, headers, rows, grid.notes
