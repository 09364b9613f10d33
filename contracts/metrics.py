"""One definition per metric (docs/scoring.md, "Metrics" and "Adding a metric").

A metric is additive sums over cells that finish into a number: MSE is SSE over n, CRPS
the sum of the cells' CRPS over the cells that have one, coverage at 90% the cells whose
actual lies in the central 90% interval over the cells with a density. Every level of
eval.metrics (global, horizon, item, statement, item x horizon), a round's metrics and
the Diebold-Mariano inputs are roll-ups of the same sums, so a metric is defined by:

- `sums`: the additive sums it needs (`SUMS`), each an SQL aggregate over one cell's
  inputs (`CELL_INPUTS`: the per-cell score columns of eval.cell_scores and
  rounds.cell_scores, and `y = actual - baseline`);
- `finish`: an SQL expression over those sums (summed up to the level) that makes the
  metric;
- what the pages, the API, the report and the published snapshot need: its label, what
  it measures, which way is better, point or density, the digits it is shown with, the
  tracks whose leaderboards show it and how an upload's value is coarsened.

The SQL formulas are data here and nowhere else: the aggregate steps (sql/eval/064-070,
sql/rounds/040-055, sql/public/040 and 050) hold `{{ metric_... }}` slots that
`proforma.app.store.metric_sql` fills from this registry when the step is read, so the
steps' checksums (the scoring-SQL version) follow the definitions. Pure data: this module
imports nothing of the project.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

#: Central interval coverage levels in percent: each gives the cell column in{p}
#: (sql/eval/054, 056, 057: whether the actual lies in the central p% interval) and the metric
#: cov{p}.
COVERAGE_LEVELS: tuple[int, ...] = (50, 80, 90, 95)

#: Bins of the PIT histogram: bin b holds the cells with u in [b / PIT_BINS, (b + 1) /
#: PIT_BINS) (u = 1 in the last); the run's per-group columns pit0..pit{PIT_BINS - 1}.
PIT_BINS = 20


def coverage_bounds(p: int) -> tuple[float, float]:
    """The PIT bounds of the central p% interval: ((1 - p) / 2, (1 + p) / 2)."""
    return ((100 - p) / 200, (100 + p) / 200)


#: What one cell offers the sums: y = actual - baseline (the truth's change), r the point
#: residual (point - actual), r_abs the absolute track's residual (a quantile forecast's
#: median - actual; r otherwise), the density terms nll, crps, z = r / sigma, the PIT
#: u = F(actual) and in{p} (the actual inside the central p% interval). A density term is
#: NULL where the cell has none (a point forecast, a quantile forecast's NLL).
CELL_INPUTS: tuple[str, ...] = (
    "y",
    "r",
    "r_abs",
    "nll",
    "crps",
    "z",
    "u",
    *(f"in{p}" for p in COVERAGE_LEVELS),
)
#: The inputs every scored cell has, a point forecast's included.
POINT_INPUTS: tuple[str, ...] = ("y", "r", "r_abs")


class Better(Enum):
    """Which way a metric improves (not a str Enum: `lower` would shadow str.lower)."""

    lower = "lower"
    higher = "higher"
    #: closest to `Metric.target` (calibration: z² near 1, coverage near its level)
    target = "target"


class Kind(str, Enum):
    """What a metric scores: the point forecast (every submission) or the density."""

    point = "point"
    density = "density"


class Disclosure(str, Enum):
    """How an upload's value leaves the warehouse (app/read/disclosure.py, sql/public;
    docs/service.md, "The truth: threat model").

    `noise`: with keyed Gaussian noise of standard deviation sigma * sensitivity / n, at
    every published level; `headline_noise`: the same, at the headline levels only (the
    whole footprint or round, and per horizon), withheld at the finer ones; `from_mse`:
    computed from the published MSE (R2 = 1 - MSE (1 - r2) / mse, so no second draw);
    `withheld`: not published for an upload (unbounded as its sigma shrinks).
    """

    noise = "noise"
    headline_noise = "headline_noise"
    from_mse = "from_mse"
    withheld = "withheld"


@dataclass(frozen=True)
class Sum:
    """An additive sum of run_agg (sql/eval/064), summed up to every level."""

    name: str
    #: SQL aggregate over one group of cells' inputs (CELL_INPUTS).
    sql: str
    #: BIGINT (a count) or DOUBLE.
    type: str
    #: The cell inputs `sql` reads (tests/eval/test_metric_definitions.py checks them).
    inputs: tuple[str, ...] = ()

    @property
    def density(self) -> bool:
        """Whether it reads a density input: a point-only submission has none (its count
        is 0, its sum NULL)."""
        return any(i not in POINT_INPUTS for i in self.inputs)


@dataclass(frozen=True)
class Metric:
    name: str
    #: The column header on pages and in the report.
    label: str
    #: What it measures (the API's field description, the docs).
    description: str
    better: Better
    kind: Kind
    #: The sums it needs (names in SUMS).
    sums: tuple[str, ...]
    #: SQL over the sums (rolled up to the level) that finishes the metric.
    finish: str
    #: Decimal places it is shown with.
    digits: int
    #: Tracks (contracts.tracks) whose leaderboards show it.
    tracks: tuple[str, ...]
    disclosure: Disclosure
    #: The most one cell's term moves per standardized unit of its truth y, for any
    #: forecast an upload may hold (Disclosure.noise and headline_noise): the noise of
    #: an upload's mean over n cells is sigma * sensitivity / n.
    sensitivity: float | None = None
    #: The ideal value where `better` is `target`.
    target: float | None = None

    @property
    def point(self) -> bool:
        return self.kind is Kind.point


def _sums(*sums: Sum) -> dict[str, Sum]:
    return {s.name: s for s in sums}


#: Every additive sum, in run_agg's column order. n, the truth's sums and the ones named in
#: STORED_SUMS are stored beside the metrics in eval.metric_rows.
SUMS: dict[str, Sum] = _sums(
    Sum("n", "count(*)", "BIGINT"),
    Sum("sum_y", "sum(y)", "DOUBLE", ("y",)),
    Sum("sum_y2", "sum(y * y)", "DOUBLE", ("y",)),
    Sum("sse", "sum(r * r)", "DOUBLE", ("r",)),
    Sum("n_abs", "count(r_abs)", "BIGINT", ("r_abs",)),
    Sum("sae", "sum(abs(r_abs))", "DOUBLE", ("r_abs",)),
    Sum("n_density", "count(u)", "BIGINT", ("u",)),
    Sum("n_nll", "count(nll)", "BIGINT", ("nll",)),
    Sum("sum_nll", "sum(nll)", "DOUBLE", ("nll",)),
    Sum("n_crps", "count(crps)", "BIGINT", ("crps",)),
    Sum("sum_crps", "sum(crps)", "DOUBLE", ("crps",)),
    Sum("n_z", "count(z)", "BIGINT", ("z",)),
    Sum("sum_z2", "sum(z * z)", "DOUBLE", ("z",)),
    *(
        s
        for p in COVERAGE_LEVELS
        for s in (
            Sum(f"n{p}", f"count(in{p})", "BIGINT", (f"in{p}",)),
            Sum(f"in{p}", f"count(*) FILTER (WHERE in{p})", "BIGINT", (f"in{p}",)),
        )
    ),
)
#: Sums kept in eval.metric_rows (and a round's metric rows) beside n and the metrics.
STORED_SUMS: tuple[str, ...] = ("sum_y", "sum_y2", "sse", "sae", "n_density")

#: A group's truth variance around the baseline, times n (shared by every submission).
_TRUTH_SS = "sum_y2 - sum_y * sum_y / n"
#: A share moves by at most 1 / n when one cell's truth moves (the cell enters or leaves
#: the interval).
_COVERAGE_SENSITIVITY = 1.0
#: MSE: d (mu - y)^2 / dy = 2 (y - mu), |mu| <= 60 (the upload checks) and |y| <= 12 (the
#: change of two standardized values, each clipped to +-6: sql/build/110).
_MSE_SENSITIVITY = 2.0 * (60.0 + 12.0)
#: MAE and CRPS: d |mu - y| / dy and d CRPS / dy = 2 F(y) - 1 lie in [-1, 1].
_ABSOLUTE_SENSITIVITY = 1.0


def _coverage(p: int) -> Metric:
    lo, hi = coverage_bounds(p)
    return Metric(
        name=f"cov{p}",
        label=f"cov {p}%",
        description=(
            f"Coverage of the central {p}% interval: the share of cells with a density "
            f"whose actual lies in it (PIT u in [{lo}, {hi}]; a quantile forecast's levels "
            f"{lo} and {hi})."
        ),
        better=Better.target,
        kind=Kind.density,
        sums=(f"n{p}", f"in{p}"),
        finish=f"in{p} / nullif(n{p}, 0)",
        digits=4,
        tracks=("density",),
        disclosure=Disclosure.headline_noise,
        sensitivity=_COVERAGE_SENSITIVITY,
        target=p / 100,
    )


def _registry(*metrics: Metric) -> dict[str, Metric]:
    return {m.name: m for m in metrics}


#: Every metric, in the order of eval.metrics' columns, the API's fields and the pages.
METRICS: dict[str, Metric] = _registry(
    Metric(
        name="r2",
        label="R²",
        description=(
            "Out-of-sample R² against the no-change baseline, pooled over the group's "
            "cells: 1 - SSE / (sum y² - (sum y)² / n + 1e-12), y = actual - baseline; "
            "NaN when the truth has no variance (<= 1e-15)."
        ),
        better=Better.higher,
        kind=Kind.point,
        sums=("n", "sum_y", "sum_y2", "sse"),
        finish=(
            f"CASE WHEN {_TRUTH_SS} <= 1e-15 THEN 'NaN'::DOUBLE "
            f"ELSE 1 - sse / ({_TRUTH_SS} + 1e-12) END"
        ),
        digits=4,
        tracks=("squared", "absolute"),
        disclosure=Disclosure.from_mse,
    ),
    Metric(
        name="mse",
        label="MSE",
        description="Mean squared error of the point forecast (the mean): SSE / n.",
        better=Better.lower,
        kind=Kind.point,
        sums=("n", "sse"),
        finish="sse / n",
        digits=4,
        tracks=("squared", "absolute"),
        disclosure=Disclosure.noise,
        sensitivity=_MSE_SENSITIVITY,
    ),
    Metric(
        name="mae",
        label="MAE",
        description=(
            "Mean absolute error of the median (a quantile forecast's level 0.5, the point "
            "forecast otherwise), over the cells that have one."
        ),
        better=Better.lower,
        kind=Kind.point,
        sums=("n_abs", "sae"),
        finish="sae / nullif(n_abs, 0)",
        digits=4,
        tracks=("squared", "absolute"),
        disclosure=Disclosure.noise,
        sensitivity=_ABSOLUTE_SENSITIVITY,
    ),
    Metric(
        name="nll",
        label="NLL",
        description="Mean negative log density of the actual, over the cells that have one.",
        better=Better.lower,
        kind=Kind.density,
        sums=("n_nll", "sum_nll"),
        finish="sum_nll / nullif(n_nll, 0)",
        digits=4,
        tracks=("density",),
        disclosure=Disclosure.withheld,
    ),
    Metric(
        name="crps",
        label="CRPS",
        description="Mean continuous ranked probability score, over the cells that have one.",
        better=Better.lower,
        kind=Kind.density,
        sums=("n_crps", "sum_crps"),
        finish="sum_crps / nullif(n_crps, 0)",
        digits=4,
        tracks=("density",),
        disclosure=Disclosure.noise,
        sensitivity=_ABSOLUTE_SENSITIVITY,
    ),
    Metric(
        name="z2",
        label="z²",
        description=(
            "Mean squared standardized residual (r / sigma)²: 1 for a calibrated "
            "Gaussian; over the cells with a sigma."
        ),
        better=Better.target,
        kind=Kind.density,
        sums=("n_z", "sum_z2"),
        finish="sum_z2 / nullif(n_z, 0)",
        digits=4,
        tracks=("density",),
        disclosure=Disclosure.withheld,
        target=1.0,
    ),
    *(_coverage(p) for p in COVERAGE_LEVELS),
)
METRIC_NAMES: tuple[str, ...] = tuple(METRICS)


def coverage_names() -> tuple[str, ...]:
    """The coverage metrics (cov50, ...), in level order."""
    return tuple(f"cov{p}" for p in COVERAGE_LEVELS if f"cov{p}" in METRICS)


def track_metrics(track: str) -> tuple[str, ...]:
    """The metrics a track's leaderboard shows, in registry order."""
    return tuple(m.name for m in METRICS.values() if track in m.tracks)


def used_sums() -> tuple[str, ...]:
    """The sums run_agg carries: n, those the metrics need and the stored ones, in SUMS
    order."""
    needed = {"n", *STORED_SUMS, *(s for m in METRICS.values() for s in m.sums)}
    return tuple(s for s in SUMS if s in needed)


#: The headline metrics a board shows with bootstrap intervals (issue 49; docs/scoring.md,
#: "Rank uncertainty"): each track's ranking metric and the MSE its squared loss means.
UNCERTAINTY_METRICS: tuple[str, ...] = ("r2", "mse", "mae", "crps")


def cluster_sums() -> tuple[str, ...]:
    """The sums eval.cluster_loss_rows keeps per (submission, firm, origin quarter): n and
    those UNCERTAINTY_METRICS finish from, in SUMS order."""
    needed = {"n", *(s for m in UNCERTAINTY_METRICS for s in METRICS[m].sums)}
    return tuple(s for s in SUMS if s in needed)
