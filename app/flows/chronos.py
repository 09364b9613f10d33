"""The Chronos-2 zero-shot run below `proforma run chronos` (the CLI only parses and prints).

1. The origin plan: every test origin, or an origin-sample footprint's (e.g. `llm`), from
   sql/models/chronos_origins.sql, in (origin_q, firm_id) order, cut into chunks.
2. Per chunk not yet in the cache: the origins' raw windows (proforma.app.model_inputs.views.raw_windows),
   their contexts and Chronos-2 quantiles (proforma.models.chronos), the realized cells kept
   (sql/models/chronos_realized_cells.sql), spooled to
   settings.cache_dir/chronos/<run key>/ so an interrupted run continues where it stopped.
3. ONE quantile submission from the spooled chunks through the common forecast path
   (`proforma.app.scoring.ingest_forecasts(..., family="quantile", space="dollars")`: the
   warehouse maps every quantile with the origin-frozen transform, exactly like the
   truth), then scored. docs/baselines.md, "Chronos-2".
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from proforma.app.store.settings import get_settings
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.errors import UserError
from proforma.models.chronos import HISTORY, HORIZONS, QUANTILE_LEVELS
from proforma.models.chronos import forecast as chronos_forecast
from proforma.models.chronos.cache import ChunkCache, run_key
from proforma.models.chronos.context import OriginContext, contexts_from_batch
from proforma.models.chronos.loading import PUBLIC_CHECKPOINT

if TYPE_CHECKING:
    from proforma.app.scoring.footprints.store import Footprint

#: Bump when the arm computes different numbers for the same model, panel and plan, so
#: the cache of an older version is not resumed.
ARM_VERSION = 1
NAME = "chronos-2"


@dataclass
class ChronosOptions:
    """What `proforma run chronos` takes (docs/baselines.md)."""

    model: str = PUBLIC_CHECKPOINT
    device: str = "cpu"
    dtype: str = "float32"
    batch_size: int = 256  # series (items) per forward pass
    chunk_origins: int = 256  # origins per cached chunk
    footprint: str | None = None
    name: str | None = None
    score: bool = True


def origin_plan(wh: Warehouse, footprint: str | None) -> tuple[pa.Table, Footprint | None]:
    """(firm_id, origin_q) of the origins to forecast, and the footprint record if any."""
    wh.require_panel("panel.truth_cells")
    fp: Footprint | None = None
    if footprint:
        from proforma.app.scoring import ensure_standard_footprints, get_footprint

        ensure_standard_footprints(wh)
        fp = get_footprint(wh, footprint)
        if fp["kind"] != "origins" or fp["split"] != "test":
            raise UserError(
                f"Footprint {footprint!r} is not a test-split origin sample "
                f"(kind {fp['kind']}); use one like `llm`, or none for every test origin"
            )
    plan = wh.query_step(
        "models/chronos_origins", {"footprint_id": int(fp["footprint_id"]) if fp else 0}
    )
    if plan.num_rows == 0:
        where = f"footprint {footprint!r}" if footprint else "the test split"
        raise UserError(
            f"No origins to forecast in {where}: the panel has no test-split "
            "origin (2010-2024) there"
        )
    return plan, fp


def panel_signature(wh: Warehouse) -> dict[str, Any]:
    """What makes the panel: the same fields that decide whether a submission is stale."""
    from proforma.app.scoring.provenance import current_build

    build = current_build(wh) or {}
    keys = ("sql_checksum", "parameters", "reg_stats", "reg_stats_checksum", "raw_ingest_id")
    return {k: str(build.get(k)) for k in keys}


def _plan_digest(plan: pa.Table) -> str:
    h = hashlib.sha256()
    for name in ("firm_id", "origin_q"):
        h.update(np.ascontiguousarray(plan.column(name).to_numpy()).tobytes())
    return h.hexdigest()[:20]


def _versions() -> dict[str, str]:
    out = {}
    for pkg in ("chronos-forecasting", "transformers", "torch"):
        try:
            out[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            out[pkg] = "missing"
    return out


def _origin_keys(firm_id: np.ndarray, origin_q: np.ndarray) -> np.ndarray:
    return (origin_q.astype(np.int64) << 32) | firm_id.astype(np.int64)


def _forecast_chunks(
    wh: Warehouse,
    pipeline: Any,
    plan: pa.Table,
    cache: ChunkCache,
    options: ChronosOptions,
    show_progress: bool,
) -> dict[str, Any]:
    """Forecast every chunk of the plan that the cache lacks; returns timing figures."""
    from proforma.app.model_inputs.views import raw_windows
    from proforma.models.progress import progress_bar

    size = options.chunk_origins
    n_chunks = -(-plan.num_rows // size)
    pending = sorted(set(range(n_chunks)) - cache.done())
    chunk_of = np.arange(plan.num_rows) // size
    pending_rows = np.isin(chunk_of, pending)
    quarters = plan.column("origin_q").to_numpy()
    keys = _origin_keys(plan.column("firm_id").to_numpy(), quarters)
    bar = progress_bar(
        total=plan.num_rows,
        initial=int((~pending_rows).sum()),
        unit="origin",
        desc="chronos-2",
        disable=not show_progress,
    )
    figures = {"computed_origins": 0, "forecast_s": 0.0}

    def flush(index: int, contexts: list[OriginContext]) -> None:
        # The plan is in origin_q order: a chunk's quarters run from its first to its last row.
        lo, hi = (
            int(quarters[index * size]),
            int(quarters[min((index + 1) * size, plan.num_rows) - 1]),
        )
        kept, stats, seconds = _forecast_realized(wh, pipeline, contexts, options, lo, hi)
        figures["forecast_s"] += seconds
        cache.write(index, kept, stats.as_dict())
        n = int((chunk_of == index).sum())
        figures["computed_origins"] += n
        bar.update(n)

    try:
        if pending:
            windows = raw_windows(
                wh, "test", batch_size=size, origins=plan.filter(pa.array(pending_rows))
            )
            for index, contexts in _contexts_by_chunk(windows, keys, chunk_of, pending[0]):
                flush(index, contexts)
            # Chunks whose origins reported nothing in their windows never appeared.
            for index in sorted(set(pending) - cache.done()):
                flush(index, [])
    finally:
        bar.close()
    return figures


def _forecast_realized(
    wh: Warehouse,
    pipeline: Any,
    contexts: list[OriginContext],
    options: ChronosOptions,
    lo: int,
    hi: int,
) -> tuple[Any, Any, float]:
    """Forecast the origins' contexts and keep the forecasts that fall on realized truth
    cells of origins `lo`..`hi`: the kept rows, the forecast's statistics and its seconds."""
    t0 = time.perf_counter()
    table, stats = chronos_forecast.forecast_origins(
        pipeline, contexts, batch_size=options.batch_size
    )
    seconds = time.perf_counter() - t0
    with wh.registered("__chronos_forecasts", table) as view:
        kept = wh.query_step(
            "models/chronos_realized_cells",
            {"lo_q": lo, "hi_q": hi},
            identifiers={"forecasts": view},
        )
    return kept, stats, seconds


def _contexts_by_chunk(
    windows: Iterable[pa.RecordBatch], keys: np.ndarray, chunk_of: np.ndarray, first: int
) -> Iterator[tuple[int, list[OriginContext]]]:
    """The windows' origin contexts grouped by their chunk of the plan, chunk by chunk in
    the windows' (the plan's) order; the first chunk, `first`, comes even when none of its
    origins has a window."""
    contexts: list[OriginContext] = []
    current = first
    for batch in windows:
        at = np.searchsorted(
            keys,
            _origin_keys(batch.column("firm_id").to_numpy(), batch.column("origin_q").to_numpy()),
        )
        for ctx, index in zip(contexts_from_batch(batch), chunk_of[at].tolist(), strict=True):
            if index != current:
                yield current, contexts
                current, contexts = index, []
            contexts.append(ctx)
    yield current, contexts


def run_chronos(
    wh: Warehouse, options: ChronosOptions, *, show_progress: bool = True
) -> dict[str, Any]:
    """Forecast, spool, ingest one quantile submission and score it; a summary dict."""
    from proforma.models.chronos.loading import load_pipeline, model_signature

    if options.batch_size < 1 or options.chunk_origins < 1:
        raise UserError("--batch-size and --chunk-origins must be at least 1")
    t0 = time.perf_counter()
    plan, fp = origin_plan(wh, options.footprint)
    pipeline = load_pipeline(options.model, options.device, options.dtype)
    signature = model_signature(pipeline)
    key, cache = _run_cache(wh, options, pipeline, signature, plan)
    cached_before = len(cache.done())
    figures = _forecast_chunks(wh, pipeline, plan, cache, options, show_progress)
    stats = cache.stats()
    cells = cache.cells()
    if cells == 0:
        raise UserError("No Chronos-2 forecast falls on a realized truth cell: nothing to write")
    name = options.name or (f"{NAME} ({fp['name']})" if fp else NAME)
    metadata = _submission_metadata(options, pipeline, signature, fp, key, stats)
    from proforma.app import scoring

    submission_id = scoring.ingest_forecasts(
        wh,
        name,
        cache.reader(),
        family="quantile",
        source="model",
        metadata=metadata,
        space="dollars",
    )
    result = {
        "name": name,
        "submission_id": submission_id,
        "origins": plan.num_rows,
        "cached_chunks": cached_before,
        "cache": str(cache.folder),
        **figures,
        **stats,
        "cells_written": cells,
        "rows": cells * len(QUANTILE_LEVELS),
        "elapsed_s": time.perf_counter() - t0,
    }
    if options.score:
        from proforma.app.flows.baselines import score_suite

        runs = score_suite(wh)
        if fp:
            runs[fp["name"]] = scoring.score(wh, fp["name"], baselines=False)
        result["score_runs"] = runs
    return result


def _run_cache(
    wh: Warehouse, options: ChronosOptions, pipeline: Any, signature: str, plan: pa.Table
) -> tuple[str, ChunkCache]:
    """The run's key (everything that changes its forecasts: the arm's version, the model,
    the panel, the plan, the chunking, the dtype, the levels, history and horizons) and
    the chunk cache under it."""
    key_parts = {
        "arm": ARM_VERSION,
        "model": signature,
        "panel": panel_signature(wh),
        "plan": _plan_digest(plan),
        "chunk_origins": options.chunk_origins,
        "dtype": str(pipeline.model.dtype),
        "levels": QUANTILE_LEVELS,
        "history": HISTORY,
        "horizons": HORIZONS,
    }
    key = run_key(key_parts)
    cache = ChunkCache(
        get_settings().cache_dir / "chronos",
        key,
        manifest={**key_parts, "checkpoint": options.model},
    )
    return key, cache


def _submission_metadata(
    options: ChronosOptions,
    pipeline: Any,
    signature: str,
    fp: Footprint | None,
    key: str,
    stats: dict[str, Any],
) -> dict[str, Any]:
    """The submission's metadata: the model and its checkpoint, how its context is made,
    the run's key and statistics, the packages and the device."""
    from proforma.models.chronos.loading import describe

    return {
        "model": NAME,
        "checkpoint": options.model,
        "model_signature": signature,
        **{k: v for k, v in describe(pipeline).items() if k != "device"},
        "zero_shot": True,
        "context": f"reported values, up to {HISTORY} quarters through the "
        "origin on a contiguous grid, gaps missing, one multivariate group per origin",
        "targets": "items reported at the origin",
        "quantile_levels": list(QUANTILE_LEVELS),
        "horizons": HORIZONS,
        "footprint": fp["name"] if fp else None,
        "run_key": key,
        "arm_version": ARM_VERSION,
        "stats": stats,
        "packages": _versions(),
        "device": options.device,
    }
