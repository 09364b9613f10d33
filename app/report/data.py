"""What the report reads: submissions and their roles, each footprint's latest score run,
its metrics and Diebold-Mariano tests (eval.* tables, docs/scoring.md), coherence and
reconciliation records. Read-only; nothing here computes a score."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from typing import Any

from proforma.app.scoring.leaderboard import dm_stars
from proforma.app.store.warehouse import IN_IDS, Warehouse
from proforma.contracts.errors import UserError
from proforma.contracts.metrics import METRICS

#: Footprints in the paper's column order; any other scored footprint follows by name.
FOOTPRINT_ORDER = ("full", "geert", "llm")
#: The paper's named comparators of Figure 1, per footprint, in order of preference.
NAMED_COMPARATORS = {"full": ("rf",), "geert": ("gbm-l2", "gbm-l1")}


@dataclass(frozen=True)
class Submission:
    submission_id: int
    name: str
    source: str
    family: str
    has_sigma: bool
    n_components: int
    metadata: dict[str, Any]
    #: Cells whose sigma sits at the oracle's floor (its simulated paths all agree: a point
    #: mass), and its density cells; counted for the oracle only (`point_masses`).
    point_mass_cells: int = 0
    density_cells: int = 0

    @property
    def model(self) -> str:
        return str(self.metadata.get("model") or "")

    @property
    def parent_id(self) -> int | None:
        p = self.metadata.get("parent_id")
        return int(p) if p is not None else None

    @property
    def method(self) -> str:
        return str(self.metadata.get("method") or "")

    @property
    def is_derived(self) -> bool:
        return self.parent_id is not None

    @property
    def is_auxiliary(self) -> bool:
        """Not a model row of Table 1 / Figure 1: a reconciliation of another submission, or
        a repeated LLM draw (`llm_draw` > 1, kept for the noise measurement)."""
        return self.is_derived or int(self.metadata.get("llm_draw") or 1) > 1

    @property
    def is_forma(self) -> bool:
        return self.model == "forma" and not self.is_derived

    @property
    def is_llm(self) -> bool:
        return self.model.startswith("llm") or self.source == "llm"

    @property
    def is_oracle(self) -> bool:
        return self.name == "oracle" or self.model == "oracle"


@dataclass
class Run:
    """A footprint's latest score run."""

    score_run_id: int
    footprint: str
    version: int
    n_cells: int
    submission_ids: list[int]
    finished_at: Any
    metrics: dict[tuple[int, str, int | None], dict[str, Any]] = field(default_factory=dict)
    dm: dict[tuple[int, int, str, int], tuple[float | None, float | None]] = field(
        default_factory=dict
    )
    #: the board's rank uncertainty (eval.metric_intervals, eval.rank_sets): (sid,
    #: metric) -> (lo, hi); (track, sid) -> (p_best, in the model confidence set)
    intervals: dict[tuple[int, str], tuple[float | None, float | None]] = field(
        default_factory=dict
    )
    rank_sets: dict[tuple[str, int], tuple[float, bool]] = field(default_factory=dict)

    def metric(
        self, sid: int, name: str, level: str = "global", horizon: int | None = None
    ) -> float | None:
        row = self.metrics.get((sid, level, horizon))
        value = None if row is None else row.get(name)
        return None if value is None or (isinstance(value, float) and math.isnan(value)) else value

    def compare(
        self, reference: int, comparator: int, loss: str, horizon: int = 0
    ) -> tuple[float | None, float | None]:
        """(DM statistic, p): a positive statistic favours the comparator."""
        if (reference, comparator, loss, horizon) in self.dm:
            return self.dm[(reference, comparator, loss, horizon)]
        if (comparator, reference, loss, horizon) in self.dm:
            stat, p = self.dm[(comparator, reference, loss, horizon)]
            return (None if stat is None else -stat), p
        return None, None


def submissions(wh: Warehouse) -> dict[int, Submission]:
    rows = wh.fetchall(
        "SELECT submission_id, name, source, family, has_sigma, n_components, "
        "CAST(metadata AS VARCHAR) FROM eval.submissions"
    )
    subs = {
        r[0]: Submission(
            r[0], r[1], r[2], r[3], bool(r[4]), int(r[5]), json.loads(r[6]) if r[6] else {}
        )
        for r in rows
    }
    return point_masses(wh, subs)


#: The oracle's sigma floor (sql/oracle/010_standardize_paths.sql): where all its simulated
#: paths agree, its "density" is a point mass with this sigma.
ORACLE_SIGMA_FLOOR = 1e-4


def point_masses(wh: Warehouse, subs: dict[int, Submission]) -> dict[int, Submission]:
    """The oracle's submissions with their point-mass cells counted (sigma at the floor).

    Its sigma is the spread of 64 simulated paths; for an item the simulation holds
    constant over a horizon (a rare event no path drew) the spread is 0, floored at 1e-4,
    and a realized value off that point costs a Gaussian NLL of (r / 1e-4)^2 / 2: a handful
    of such cells dominate its mean NLL (195,713 in the demo) though CRPS and coverage are
    finite there."""
    oracle = [s.submission_id for s in subs.values() if s.model == "oracle" and s.has_sigma]
    if not oracle or not wh.table_exists("eval.forecasts"):
        return subs
    counts = {
        sid: (int(at_floor), int(n))
        for sid, at_floor, n in wh.fetchall(
            "SELECT submission_id, count(*) FILTER (WHERE sigma <= ?), count(*) "
            f"FROM eval.forecasts WHERE submission_id {IN_IDS} GROUP BY 1",
            [ORACLE_SIGMA_FLOOR * (1 + 1e-9), oracle],
        )
    }
    out = dict(subs)
    for sid, (at_floor, n) in counts.items():
        out[sid] = replace(subs[sid], point_mass_cells=at_floor, density_cells=n)
    return out


def latest_runs(wh: Warehouse) -> list[Run]:
    """Each scored footprint's board (eval.board_runs), with its metrics and DM tests
    loaded."""
    if not wh.table_exists("eval.score_runs"):
        raise UserError("No scores in the warehouse: run `proforma score` first")
    rows = wh.fetchall(
        "SELECT score_run_id, footprint_name, footprint_version, n_cells, submission_ids, finished_at "
        "FROM eval.score_runs WHERE score_run_id IN (SELECT score_run_id FROM eval.board_runs)"
    )
    runs = [Run(r[0], r[1], r[2], r[3], list(r[4]), r[5]) for r in rows]
    order = {name: i for i, name in enumerate(FOOTPRINT_ORDER)}
    runs.sort(key=lambda r: (order.get(r.footprint, len(order)), r.footprint))
    for run in runs:
        load_run(wh, run)
    return runs


def run_by_id(wh: Warehouse, score_run_id: int) -> Run:
    r = wh.fetchone(
        "SELECT score_run_id, footprint_name, footprint_version, n_cells, submission_ids, "
        "finished_at FROM eval.score_runs WHERE score_run_id = ?",
        [score_run_id],
    )
    if r is None:
        raise UserError(f"No score run {score_run_id}")
    return load_run(wh, Run(r[0], r[1], r[2], r[3], list(r[4]), r[5]))


#: The report is public (/report): it shows the in-house models and reference baselines,
#: whose numbers are exact, never an upload's (docs/service.md, "The truth: threat model";
#: an upload is on the leaderboards, with its noise).
_NOT_UPLOAD = "(SELECT submission_id FROM eval.submissions WHERE source <> 'upload')"


def load_run(wh: Warehouse, run: Run) -> Run:
    kept = {int(r[0]) for r in wh.fetchall(f"SELECT submission_id FROM {_NOT_UPLOAD}")}
    run.submission_ids[:] = [s for s in run.submission_ids if int(s) in kept]
    table = wh.arrow(
        f"SELECT submission_id, level, horizon, statement, n, {', '.join(METRICS)} "
        "FROM eval.metrics WHERE score_run_id = ? AND level IN ('global', 'horizon') "
        f"AND submission_id IN {_NOT_UPLOAD}",
        [run.score_run_id],
    )
    for row in table.to_pylist():
        h = row["horizon"] if row["level"] == "horizon" else None
        run.metrics[(row["submission_id"], row["level"], h)] = row
    for a, b, loss, h, stat, p in wh.fetchall(
        "SELECT submission_a, submission_b, loss, horizon, dm_stat, p_value FROM eval.dm_tests "
        f"WHERE score_run_id = ? AND submission_a IN {_NOT_UPLOAD} "
        f"AND submission_b IN {_NOT_UPLOAD}",
        [run.score_run_id],
    ):
        run.dm[(a, b, loss, int(h))] = (stat, p)
    for sid, metric, lo, hi in wh.fetchall(
        "SELECT submission_id, metric, lo, hi FROM eval.metric_intervals WHERE score_run_id = ?",
        [run.score_run_id],
    ):
        run.intervals[(int(sid), str(metric))] = (lo, hi)
    for track, sid, p_best, in_mcs in wh.fetchall(
        "SELECT track, submission_id, p_best, in_mcs FROM eval.rank_sets WHERE score_run_id = ? "
        "AND scope = 'public'",
        [run.score_run_id],
    ):
        run.rank_sets[(str(track), int(sid))] = (float(p_best), bool(in_mcs))
    return run


def pit(wh: Warehouse, run: Run) -> dict[int, list[float]]:
    rows = wh.fetchall(
        "SELECT submission_id, list(share ORDER BY bin) FROM eval.pit "
        f"WHERE score_run_id = ? AND submission_id IN {_NOT_UPLOAD} GROUP BY submission_id",
        [run.score_run_id],
    )
    return {sid: [float(x) for x in shares] for sid, shares in rows}


def coherence(wh: Warehouse) -> dict[int, tuple[int, float | None]]:
    """{submission_id: (identity instances, median violation)} overall ('ALL')."""
    if not wh.table_exists("eval.coherence"):
        return {}
    return {
        sid: (int(n), med)
        for sid, n, med in wh.fetchall(
            "SELECT submission_id, n_instances, median_violation FROM eval.coherence "
            "WHERE identity = 'ALL' QUALIFY row_number() OVER (PARTITION BY submission_id "
            "ORDER BY computed_at DESC) = 1"
        )
    }


def reconciliations(wh: Warehouse) -> dict[int, dict[str, Any]]:
    """{derived submission_id: its finished eval.reconciliations record}."""
    if not wh.table_exists("eval.reconciliations"):
        return {}
    t = wh.arrow(
        "SELECT * FROM eval.reconciliations WHERE status = 'done' AND submission_id IS NOT NULL"
    )
    return {r["submission_id"]: r for r in t.to_pylist()}


def resolve(subs: dict[int, Submission], text: str) -> Submission:
    """A submission by id or name (the newest of that name)."""
    text = text.strip()
    if text.isdigit() and int(text) in subs:
        return subs[int(text)]
    named = [s for s in subs.values() if s.name == text]
    if not named:
        raise UserError(f"No submission {text!r} to compare against")
    return max(named, key=lambda s: s.submission_id)


def forma_reference(
    run: Run, subs: dict[int, Submission], family: str = "gaussian"
) -> Submission | None:
    """The run's Forma submission of `family` (else any Forma), or None."""
    formas = [subs[s] for s in run.submission_ids if s in subs and subs[s].is_forma]
    formas.sort(key=lambda s: (s.family != family, -s.n_components, -s.submission_id))
    return formas[0] if formas else None


def comparator(
    run: Run, subs: dict[int, Submission], reference: Submission | None
) -> Submission | None:
    """Figure 1's comparator: the paper's named one (RF on Full, the chained GBM on Geert.,
    the best LLM on the LLM sample) when present, else the strongest other model."""
    others = [
        subs[s]
        for s in run.submission_ids
        if s in subs
        and (reference is None or s != reference.submission_id)
        and not subs[s].is_auxiliary
        and not subs[s].is_oracle
    ]
    if not others:
        return None

    def r2(s: Submission) -> float:
        v = run.metric(s.submission_id, "r2")
        return -math.inf if v is None else v

    for model in NAMED_COMPARATORS.get(run.footprint, ()):
        named = [s for s in others if s.model == model]
        if named:
            return max(named, key=r2)
    llms = [s for s in others if s.is_llm]
    if run.footprint == "llm" and llms:
        return max(llms, key=r2)
    return max(others, key=r2)


def dm_mark(stat: float | None, p: float | None) -> str:
    """The paper's table marks for a comparator against the reference (the leaderboard's
    convention, proforma.app.scoring.leaderboard.dm_stars): * / ** / *** the reference better at
    10 / 5 / 1%, a dagger the comparator better at 1%. `stat` > 0 favours the comparator."""
    if stat is None:
        return ""
    return dm_stars(p, stat > 0)


def figure_marker(stat: float | None, p: float | None, level: float = 0.05) -> str:
    """Figure 1's markers: * the reference better, a dagger the comparator better, at `level`."""
    if stat is None or p is None or math.isnan(p) or p >= level:
        return ""
    return "†" if stat > 0 else "*"
