"""Scoring: submissions in, footprints, per-cell scores, score runs, leaderboards.

The public API the service, the flows and the models' callers use (docs/scoring.md); the
modules below never import this package's names themselves (no import circles):

- ingest_forecasts(wh, name, batches, *, family, df, source, metadata) -> submission_id
- ingest_parquet(wh, path, name, *, family, df, metadata) -> submission_id
- score(wh, footprint="full", submissions=None) -> score_run_id
- score_ahead(wh, footprint="full", submissions=None) -> the submissions prepared
- leaderboard(wh, footprint="full", track="squared", by=None) -> pyarrow.Table
- run_reference_baselines(wh) -> list of submission ids
- missing_reference_baselines(wh) -> names not yet made for the current build

Where each job lives: submissions/ (checks, uploads, batches, current), footprints/
(store, create, standard, llm, mask_import), cells.py (per-cell scores), sample.py
(coverage and the common sample), runs.py (a score run), significance.py (DM tests),
coherence.py (identity checks), leaderboard.py (ranking and exports), baselines.py (the
SQL reference baselines).
"""

from proforma.app.scoring.baselines import missing_reference_baselines, run_reference_baselines
from proforma.app.scoring.coherence import coherence_table, compute_coherence
from proforma.app.scoring.footprints.create import create_footprint
from proforma.app.scoring.footprints.standard import ensure_standard_footprints
from proforma.app.scoring.footprints.store import get_footprint, list_footprints, validate_predicate
from proforma.app.scoring.leaderboard import export_table, leaderboard, table_to_text
from proforma.app.scoring.runs import run_summary, score, score_ahead
from proforma.app.scoring.significance import diebold_mariano, newey_west_variance
from proforma.app.scoring.submissions.batches import ingest_forecasts
from proforma.app.scoring.submissions.uploads import ingest_parquet

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
    "missing_reference_baselines",
    "newey_west_variance",
    "run_reference_baselines",
    "run_summary",
    "score",
    "score_ahead",
    "table_to_text",
    "validate_predicate",
]
