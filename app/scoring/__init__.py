"""Scoring: submissions in, footprints, metrics, significance, coherence, baselines.

The public API the service and the models call (docs/scoring.md):

- ingest_forecasts(wh, name, batches, *, family, df, source, metadata) -> submission_id
- ingest_parquet(wh, path, name, *, family, df, metadata) -> submission_id
- score(wh, footprint="full", submissions=None) -> score_run_id
- leaderboard(wh, footprint="full", track="squared", by=None) -> pyarrow.Table
- run_reference_baselines(wh) -> list of submission ids
"""

from app.scoring.baselines import run_reference_baselines
from app.scoring.coherence import coherence_table, compute_coherence
from app.scoring.footprints import (
    create_footprint,
    ensure_standard_footprints,
    get_footprint,
    list_footprints,
    validate_predicate,
)
from app.scoring.ingest import ingest_forecasts, ingest_parquet
from app.scoring.leaderboard import export_table, leaderboard, table_to_text
from app.scoring.metrics import run_summary, score
from app.scoring.significance import diebold_mariano, newey_west_variance

__all__ = [
    "coherence_table",
    "compute_coherence",
    "create_footprint",
    "diebold_mariano",
    "ensure_standard_footprints",
    "export_table",
    "get_footprint",
    "ingest_forecasts",
    "ingest_parquet",
    "leaderboard",
    "list_footprints",
    "newey_west_variance",
    "run_reference_baselines",
    "run_summary",
    "score",
    "table_to_text",
    "validate_predicate",
]
