"""Response models of the main GET routes: what /api/v1/openapi.json documents and what
the routes return. Every model keeps fields it does not declare (extra="allow"), so a
column added to a query reaches clients before it is documented here; timestamps are
ISO 8601 strings, non-finite numbers null."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from proforma.contracts.metrics import METRICS, Better, Metric


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


# -- health ---------------------------------------------------------------------------------


class SnapshotFailure(_Open):
    failed_at: dt.datetime
    error: str
    failures_since_last_publication: int


class SnapshotState(_Open):
    status: str = Field(description="ok, failing (the previous snapshot is served) or missing")
    published_at: dt.datetime | None
    file: str | None
    tables: int
    last_failure: SnapshotFailure | None = Field(None, description="Only while failing")


class ScoringFailure(_Open):
    failed_at: dt.datetime
    failures: list[dict[str, Any]] = Field(
        description="What failed: {submission_id or footprint, error}"
    )


class ScoringState(_Open):
    status: str = Field(description="ok, failing (the last scoring pass had a failure) or idle")
    last_pass_at: dt.datetime | None = None
    last_failure: ScoringFailure | None = Field(None, description="Only while failing")


class ResolutionFailure(_Open):
    failed_at: dt.datetime
    error: str


class RoundsState(_Open):
    status: str = Field(
        description="ok, failing (the latest resolution failed, or left entries unscored) or idle"
    )
    last_resolution_id: int | None = None
    last_resolved_at: dt.datetime | None = None
    failed_entries: list[dict[str, Any]] | None = Field(None, description="Only while failing")
    last_failure: ResolutionFailure | None = Field(
        None, description="Only while the latest resolution failed as a whole"
    )


class WorkerState(_Open):
    status: str = Field(
        description="ok, failing when the job worker thread has stopped, off when the "
        "app was made without one"
    )
    oldest_job_age_s: float | None = Field(
        None, description="Seconds the oldest unfinished job has waited"
    )


class Limits(_Open):
    upload_max_bytes: int
    uploads_per_day: int
    query_max_rows: int
    query_timeout_s: float


class Health(_Open):
    status: str = Field(description="ok, or degraded while any part fails (`failing` lists them)")
    failing: list[str] = Field(
        default_factory=list,
        description="Every failing part: warehouse, snapshot, scoring, rounds, worker",
    )
    version: str
    schema_version: int | None
    jobs_pending: int
    snapshot: SnapshotState | None = None
    scoring: ScoringState | None = None
    rounds: RoundsState | None = None
    worker: WorkerState | None = None
    errors: dict[str, str] | None = Field(
        None, description="A part that could not be read at all: why"
    )
    limits: Limits


# -- jobs -----------------------------------------------------------------------------------


class Job(_Open):
    job_id: int
    model_name: str
    family: str
    df: float | None
    status: str = Field(description="queued, validating, scoring, done or failed")
    message: str | None
    report: dict[str, Any] | None = Field(description="The validation report")
    submission_id: int | None
    score_runs: dict[str, int] | None
    attempts: int
    upload_bytes: int
    upload_sha256: str
    created_at: str | None
    started_at: str | None
    finished_at: str | None
    metadata: dict[str, Any]
    submission_url: str | None = Field(None, description="Once the file is ingested")
    round_name: str | None = Field(None, description="The round the file entered, if any")
    idempotency_key: str | None = Field(
        None, description="The client's Idempotency-Key of the upload, if it sent one"
    )


# -- footprints -----------------------------------------------------------------------------


class FootprintRecord(_Open):
    footprint_id: int
    name: str
    version: int
    kind: str
    predicate: str
    split: str
    description: str | None
    n_cells: int | None
    build_id: int | None
    created_at: str | None


class FootprintTable(_Open):
    """`format=json`; `format=csv` is the rows as a CSV download."""

    columns: list[str]
    rows: list[FootprintRecord]


class FootprintVersion(FootprintRecord):
    origins: int = Field(description="Origins of a frozen origin sample (0 otherwise)")
    cells: int = Field(description="Cells of a frozen cell set (0 otherwise)")


class FootprintDetail(_Open):
    name: str
    versions: list[FootprintVersion]


# -- leaderboards ---------------------------------------------------------------------------


class TrackInfo(_Open):
    name: str
    label: str
    metric: str


class ScoreRun(_Open):
    score_run_id: int
    footprint_name: str
    footprint_version: int
    submission_ids: list[int]
    footprint_cells: int | None
    n_cells: int | None
    build_id: int | None
    build_sql_version: str | None
    eval_sql_version: str | None
    started_at: str | None
    finished_at: str | None
    elapsed_s: float | None


class FootprintRun(_Open):
    footprint: str
    latest_run: ScoreRun | None
    url: str


class LeaderboardIndex(_Open):
    tracks: list[TrackInfo]
    breakdowns: list[str]
    footprints: list[FootprintRun]


class LeaderboardTable(_Open):
    """`format=json`; `format=csv` is the rows as a CSV download."""

    footprint: str
    track: str
    by: str
    score_run: ScoreRun
    against: str = Field(description="The Diebold-Mariano reference: 'leader' or a submission")
    better: dict[str, str] = Field(
        default_factory=dict,
        description="Which way each metric column improves: higher, lower or target",
    )
    columns: list[str]
    rows: list[dict[str, Any]] = Field(description="rank, model, n, the track's metrics, DM marks")


# -- submissions ----------------------------------------------------------------------------


class SubmissionRecord(_Open):
    submission_id: int
    name: str
    source: str
    family: str
    df: float | None
    has_sigma: bool | None
    n_components: int | None
    rows: int | None
    cells: int | None
    checksum: str | None
    build_id: int | None
    created_at: str | None
    retired_at: str | None
    description: str | None
    code_url: str | None
    training_cutoff: str | None
    leakage_statement: str | None
    uploaded_by: str | None
    model_family: str | None = Field(default=None, description="The family (default: the name)")
    parameters: int | None = None
    compute_hours: float | None = None
    hardware: str | None = None
    seeds: str | None = None


class SubmissionTable(_Open):
    """`format=json`; `format=csv` is the rows as a CSV download."""

    columns: list[str]
    rows: list[SubmissionRecord]


class CurrentSubmission(SubmissionRecord):
    stale: str | None = Field(description="Why new score runs leave it out (an earlier panel)")


class _MetricsKeys(_Open):
    horizon: int | None
    item: str | None
    statement: str | None
    n: int | None


def metrics_model() -> type[_MetricsKeys]:
    """A metrics row: its group's keys, then one field per metric of contracts/metrics.py
    (documented with the definition's description and direction)."""
    fields: dict[str, Any] = {
        m.name: (
            float | None,
            Field(description=f"{m.label}: {m.description} Better {_better(m)}."),
        )
        for m in METRICS.values()
    }
    return create_model("Metrics", __base__=_MetricsKeys, **fields)


def _better(m: Metric) -> str:
    return f"closer to {m.target:g}" if m.better is Better.target else m.better.value


if TYPE_CHECKING:
    Metrics = _MetricsKeys
else:
    Metrics = metrics_model()


class Coverage(_Open):
    footprint_cells: int | None
    predicted_cells: int | None
    coverage: float | None


class FootprintScores(_Open):
    footprint: str
    score_run_id: int
    coverage: Coverage | None
    global_: Metrics | None = Field(alias="global")
    by_horizon: list[Metrics]
    by_item: list[Metrics]
    by_statement: list[Metrics]
    pit: list[float | None]


class SubmissionDetail(_Open):
    submission: CurrentSubmission
    scores: list[FootprintScores]


# -- users and the query endpoint -----------------------------------------------------------


class Me(_Open):
    name: str
    is_admin: bool
    daily_limit: int = Field(description="Uploads allowed per UTC day")
    uploads_today: int
    uploads_left_today: int


class PublicColumn(_Open):
    name: str
    type: str = Field(description="The DuckDB type")


class PublicTables(_Open):
    tables: dict[str, list[PublicColumn]] = Field(description="Each public table's columns")
