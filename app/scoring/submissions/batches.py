"""Submissions from a model: Arrow batches (docs/contracts.md, "Forecasts").

The batches are cast to the contract's schema as they stream past (hashed on the way),
spooled to disk when they are a lazy generator, standardized in SQL when they are in
dollars, and stored through the same checks as uploads (proforma.app.scoring.submissions.checks).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

import duckdb
import pyarrow as pa

from proforma.app.scoring import quantiles
from proforma.app.scoring.provenance import BatchHasher
from proforma.app.scoring.submissions.checks import (
    check_and_finish,
    check_family,
    claim_name,
    new_problem,
    new_submission,
    rejection_summary,
)
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.errors import UserError, ValidationError
from proforma.contracts.families import DEFAULT_FAMILY
from proforma.contracts.forecasts import FORECAST_SCHEMA as MODEL_FORECAST_SCHEMA
from proforma.contracts.forecasts import SPACES

# The models' contract schema, every field nullable here so that bad batches reach the
# checks (and their report) instead of failing on construction.
FORECAST_SCHEMA = pa.schema([f.with_nullable(True) for f in MODEL_FORECAST_SCHEMA])


def _conform(
    batches: Iterable[pa.RecordBatch],
    hasher: BatchHasher,
    name: str,
    errors: list[ValidationError],
    levels: set[float] | None = None,
) -> tuple[pa.RecordBatchReader, bool]:
    """The batches cast to FORECAST_SCHEMA (component 0 and sigma NULL when absent), or
    with `levels` (a quantile forecast) to quantiles.QUANTILE_SCHEMA, whose distinct
    levels are collected into `levels` as the batches stream past."""
    schema = FORECAST_SCHEMA if levels is None else quantiles.QUANTILE_SCHEMA
    if isinstance(batches, pa.Table):
        batches = batches.to_batches()
    elif isinstance(batches, pa.RecordBatch):
        batches = [batches]
    it: Iterator[pa.RecordBatch] = iter(batches)
    first = next(it, None)
    if first is None:
        problems = [new_problem("no rows: the submission is empty", 0)]
        raise ValidationError(rejection_summary(name, problems), problems)
    names = set(first.schema.names)
    required = ["firm_id", "origin_q", "item_id", "horizon", "mu"]
    if levels is not None:
        required.append(quantiles.LEVEL_COLUMN)
        extra = [c for c in ("sigma", "component") if c in names]
        if extra:
            problems = [
                new_problem(
                    f"a quantile forecast has no {' or '.join(extra)} column: one "
                    f"row per (cell, {quantiles.LEVEL_COLUMN}), mu the quantile",
                    0,
                )
            ]
            raise ValidationError(rejection_summary(name, problems), problems)
    missing = [c for c in required if c not in names]
    if missing:
        problems = [new_problem("missing column(s): " + ", ".join(missing), 0)]
        raise ValidationError(rejection_summary(name, problems), problems)
    has_sigma = "sigma" in names

    def cast(batch: pa.RecordBatch) -> pa.RecordBatch:
        hasher.update(batch)
        cols = []
        for field in schema:
            if field.name in batch.schema.names:
                col = batch.column(field.name)
                try:
                    cols.append(col.cast(field.type, safe=True))
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                    problems = [
                        new_problem(
                            f"wrong type or value in column {field.name}: "
                            f"{str(exc).splitlines()[0][:200]}",
                            batch.num_rows,
                        )
                    ]
                    # Raised inside DuckDB's scan; kept here so the caller re-raises it.
                    errors.append(ValidationError(rejection_summary(name, problems), problems))
                    raise errors[-1] from None
            elif field.name == "component":
                cols.append(pa.array([0] * batch.num_rows, pa.int16()))
            else:
                cols.append(pa.nulls(batch.num_rows, pa.float64()))
        out = pa.RecordBatch.from_arrays(cols, schema=schema)
        if levels is not None:
            levels.update(quantiles.batch_levels(out))
        return out

    stream = (cast(b) for b in itertools.chain([first], it))
    return pa.RecordBatchReader.from_batches(schema, stream), has_sigma


def _forecast_rows(view: str, space: str, quantile: bool = False) -> str:
    """SELECT of eval.forecast_rows from the registered view; dollars are standardized
    with the origin's parameters (a forecast for a non-origin gets a NULL mu: left out).
    The standardization is monotone, so a quantile forecast stays a quantile forecast; a quantile
    row's component is its level's place in the grid."""
    component = quantiles.component_sql("f.quantile_level") if quantile else "f.component"
    sigma = "CAST(NULL AS DOUBLE)" if quantile else "f.sigma"
    if space == "standardized":
        return (
            f"SELECT ?, f.firm_id, f.origin_q, f.item_id, f.horizon, {component}, f.mu, "
            f"{sigma} FROM {view} AS f"
        )
    return f"""
        SELECT ?, f.firm_id, f.origin_q, f.item_id, f.horizon, {component},
               panel.pf_standardize(f.mu, k.k, o.z, p.mu, p.sigma), {sigma}
        FROM {view} AS f
        LEFT JOIN panel.origins AS o ON o.firm_id = f.firm_id AND o.origin_q = f.origin_q
        LEFT JOIN panel.item_k AS k ON k.item_id = f.item_id
        LEFT JOIN panel.origin_params AS p ON p.item_id = f.item_id AND p.q = f.origin_q"""


@contextlib.contextmanager
def _spooled(reader: pa.RecordBatchReader) -> Iterator[pa.RecordBatchReader]:
    """The reader's batches written to an Arrow IPC file under the temp directory, here in
    the caller's thread, then read back. A model's batches are usually a lazy generator
    (the forward passes or fits happen as DuckDB pulls them); handed to DuckDB directly,
    its scan threads would run the model (each with its own thread pool and allocator:
    5 GB and --threads ignored for Forma on the demo) and hold the write transaction open
    for the whole run."""
    from proforma.app.store.settings import get_settings

    folder = get_settings().temp_directory
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="forecasts-", suffix=".arrows", dir=folder)
    os.close(fd)
    path = Path(tmp)
    try:
        with pa.OSFile(str(path), "wb") as f, pa.ipc.new_stream(f, reader.schema) as w:
            for batch in reader:
                w.write_batch(batch)
        with pa.OSFile(str(path), "rb") as src:
            yield pa.ipc.open_stream(src)
    finally:
        path.unlink(missing_ok=True)


def ingest_forecasts(
    wh: Warehouse,
    name: str,
    batches: Iterable[pa.RecordBatch] | pa.RecordBatchReader | pa.Table,
    *,
    family: str = DEFAULT_FAMILY,
    df: float | None = None,
    source: str = "model",
    metadata: dict | None = None,
    replace: bool | None = None,
    space: str = "standardized",
) -> int:
    """Store a model's forecasts (Arrow batches, docs/contracts.md "Forecasts").

    Same checks as uploads, on the integer keys; returns the submission_id. A model
    re-using a name replaces its earlier forecasts unless replace=False.
    space="dollars": `mu` is in reported units (a raw dollar forecast); it is
    standardized here exactly as the truth is (origin's z, k, mu, sigma; clipped at +-6,
    the SQL macro panel.pf_standardize), so models that forecast dollars (LLMs,
    Chronos-2 quantiles, reconciled statements) need no copy of the transform. Such
    forecasts carry no sigma (a dollar sd has no single standardized counterpart).
    family="quantile": batches in quantiles.QUANTILE_SCHEMA (quantile_level and mu, the
    quantile's value, one row per cell and level); the levels form the grid, which every
    cell must carry with values non-decreasing in the level (checked after
    standardization).
    """
    check_family(family, df)
    wh.require_panel("panel.firms")
    if space not in SPACES:
        raise UserError(f"Unknown forecast space {space!r}: use one of {', '.join(SPACES)}")
    replace = (source != "upload") if replace is None else replace
    hasher = BatchHasher()
    errors: list[ValidationError] = []
    quantile = family == quantiles.FAMILY
    levels: set[float] | None = set() if quantile else None
    # A quantile forecast must be known before the rows are stored, so its batches are always
    # spooled (their levels are collected on the way).
    in_memory = not quantile and isinstance(batches, (pa.Table, pa.RecordBatch, list, tuple))
    reader, has_sigma = _conform(batches, hasher, name, errors, levels)
    if space == "dollars" and has_sigma:
        raise UserError(
            "Forecasts in dollars carry no sigma: drop the column, or send "
            "standardized forecasts (space='standardized') with their sigma"
        )
    if space == "dollars":
        metadata = {**(metadata or {}), "forecast_space": "dollars"}
    view = "__forecasts_in"
    with contextlib.ExitStack() as stack:
        if not in_memory:
            reader = stack.enter_context(_spooled(reader))
        grid = None
        if levels is not None:
            grid = quantiles.grid_of(levels)
            found = quantiles.grid_problems(grid)
            if found:
                problems = [new_problem(text, 0) for text in found]
                raise ValidationError(rejection_summary(name, problems), problems)
            wh.set_params({"file_quantile_levels": grid})
        stack.enter_context(wh.registered(view, reader))
        with wh.transaction():
            claim_name(wh, name, replace)
            sid = new_submission(wh, name, source, family, df, has_sigma, "pending", metadata)
            try:
                wh.execute(
                    f"INSERT INTO eval.forecast_rows {_forecast_rows(view, space, quantile)}", [sid]
                )
            except (duckdb.Error, ValidationError):
                if errors:
                    raise errors[0] from None
                raise
            wh.execute(
                "UPDATE eval.submissions SET checksum = ? WHERE submission_id = ?",
                [hasher.hexdigest(), sid],
            )
            check_and_finish(wh, sid, name, [], grid)
    return sid
