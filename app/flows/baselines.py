"""The competitor suite's flow (docs/baselines.md): `proforma run baselines` and `run impute`.

Every competitor is a spec of the suite (models/baselines/suite.py, docs/models.md). It
makes sure the factor-imputed tabular view is current when a chosen model reads it
(app/model_inputs/imputed.py), hands each model numpy arrays built from its view's Arrow batches, writes the returned forecasts
through `proforma.app.scoring.ingest_forecasts` and scores them. Models never open the database.
Finished fits are kept under settings.models_dir/baselines, so an interrupted run
resumes where it stopped.
"""

from __future__ import annotations

import json
import time
from typing import Any, NotRequired, TypedDict

from proforma.app.store.settings import get_settings
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.errors import UserError
from proforma.contracts.panel import SPLITS
from proforma.contracts.provenance import utcnow
from proforma.models.baselines import suite
from proforma.models.baselines.data import TabularData, from_batches
from proforma.models.baselines.fanout import FanOut, Tracker


def parse_which(which: str) -> list[str]:
    chosen = [w.strip() for w in which.split(",") if w.strip()]
    unknown = [w for w in chosen if w not in suite.SUITE]
    if unknown or not chosen:
        raise UserError(
            f"Unknown model(s) {', '.join(unknown) or '(none)'}; "
            f"choose from {', '.join(suite.names())}"
        )
    return list(dict.fromkeys(chosen))


def load_splits(
    wh: Warehouse, data: str = "tabular_imputed", batch_size: int = 8192
) -> dict[str, TabularData]:
    """A view's three splits as numpy arrays (`data`: one of suite.DATA)."""
    from proforma.app.model_inputs.views import tabular_reader

    imputed = {"tabular_imputed": True, "tabular": False}[data]
    name = "imputed tabular view" if imputed else "tabular view"
    out = {s: from_batches(tabular_reader(wh, s, batch_size, imputed=imputed)) for s in SPLITS}
    for s, d in out.items():
        if d.n == 0:
            raise UserError(f"The {name} has no {s} rows: run `proforma build` first.")
    return out


def load_views(wh: Warehouse, specs: list) -> dict[str, dict[str, TabularData]]:
    """The splits of each view the competitors read, each view read once however many
    competitors share it (every competitor of the suite reads the imputed tabular view)."""
    return {data: load_splits(wh, data) for data in dict.fromkeys(s.data for s in specs)}


def fit_model(
    spec: suite.ModelSpec,
    data: dict[str, TabularData],
    config: dict[str, Any],
    fan: FanOut,
    tracker: Tracker,
    root: Any,
    items: tuple[str, ...] | None = None,
    horizons: tuple[int, ...] | None = None,
) -> Any:
    """Fit one competitor and return its models.baselines.base.Forecast for the test split.

    `items` / `horizons` restrict the per-(item, horizon) models and the GBM chain (for
    quick checks); the FFNNs always forecast every cell.
    """
    request = suite.FitRequest(
        data["train"], data["val"], data["test"], config, root, fan, tracker, items, horizons
    )
    return spec.fit(request)


class CompetitorRun(TypedDict):
    """What run_baselines reports per competitor."""

    model: str
    fit_s: float
    cells: int  # test cells with a finite forecast
    submission_id: int
    score_runs: NotRequired[dict[str, int]]  # {footprint: score_run_id}, when scored


def run_baselines(
    wh: Warehouse,
    which: list[str],
    preset_name: str = "paper",
    *,
    engine: str = "joblib",
    n_jobs: int = 1,
    scheduler: str | None = None,
    score: bool = True,
    reimpute: bool = False,
    tracker: Tracker | None = None,
    items: tuple[str, ...] | None = None,
    horizons: tuple[int, ...] | None = None,
) -> list[CompetitorRun]:
    """Fit the chosen competitors, ingest their forecasts and score them; one record per model."""
    tracker = tracker or Tracker()
    specs = [suite.get(m) for m in which]
    configs = suite.preset(preset_name)
    fan = FanOut(engine, n_jobs, scheduler=scheduler)
    imputation_id, build_id = _inputs_of(wh, specs, reimpute, tracker)
    views = load_views(wh, specs)
    root = get_settings().models_dir / "baselines"
    results: list[CompetitorRun] = []
    for spec in specs:
        model, config = spec.name, configs[spec.name]
        t0 = time.perf_counter()
        forecast = fit_model(spec, views[spec.data], config, fan, tracker, root, items, horizons)
        fit_s = time.perf_counter() - t0
        metadata = {
            "model": model,
            "preset": preset_name,
            "config": config,
            "imputation_id": imputation_id,
            "build_id": build_id,
            "fit_s": round(fit_s, 1),
            "registry_run": forecast.info.get("run"),
        }
        submission_id = _ingest(wh, spec, preset_name, forecast, metadata)
        _record_run(wh, forecast, metadata, fit_s, submission_id)
        row: CompetitorRun = {
            "model": model,
            "fit_s": fit_s,
            "cells": forecast.cells(),
            "submission_id": submission_id,
        }
        tracker.note(
            f"{model}: fit {fit_s:.1f}s, {row['cells']:,} test cells, submission {submission_id}"
        )
        results.append(row)
    if score and results:
        runs = score_suite(wh)
        for r in results:
            r["score_runs"] = runs
    return results


def _inputs_of(
    wh: Warehouse, specs: list, reimpute: bool, tracker: Tracker
) -> tuple[int | None, int | None]:
    """The imputation the competitors read, if any reads one (made when there is none, or
    anew with `reimpute`), and the build their inputs come from."""
    from proforma.app.model_inputs.imputed import build_imputed, current_imputation
    from proforma.app.scoring.provenance import current_build_id

    imputation_id = None
    if any(s.data == "tabular_imputed" for s in specs):
        imputation_id = None if reimpute else current_imputation(wh)
        if imputation_id is None:
            imputation_id = build_imputed(wh, tracker=tracker)["imputation_id"]
        build_id = wh.scalar(
            "SELECT build_id FROM meta.imputations WHERE imputation_id = ?", [imputation_id]
        )
    else:
        build_id = current_build_id(wh)
    return imputation_id, build_id


def _record_run(
    wh: Warehouse, forecast: Any, metadata: dict[str, Any], fit_s: float, submission_id: int
) -> None:
    """Record a competitor's run in meta.baseline_runs (`metadata`: its submission's)."""
    info = {k: v for k, v in forecast.info.items() if k != "run"}
    wh.execute(
        "INSERT INTO meta.baseline_runs (model, preset, build_id, imputation_id, registry_run, config, "
        "info, fit_s, submission_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            metadata["model"],
            metadata["preset"],
            metadata["build_id"],
            metadata["imputation_id"],
            forecast.info.get("run", ""),
            json.dumps(metadata["config"], default=str),
            json.dumps(info, default=str),
            fit_s,
            submission_id,
            utcnow(),
        ],
    )


def _ingest(
    wh: Warehouse, spec: suite.ModelSpec, preset_name: str, forecast: Any, metadata: dict
) -> int:
    from proforma.app import scoring

    name = suite.submission_name(spec.name, preset_name)
    return scoring.ingest_forecasts(
        wh,
        name,
        forecast.batches(),
        family=spec.family,
        source="model",
        metadata=metadata,
    )


def joins(wh: Warehouse, footprint: str, ids: list[int]) -> list[int]:
    """The submissions among `ids` that take part in `footprint`'s score run: all but the
    suite's models whose spec leaves that footprint out (suite.ModelSpec.footprints)."""
    names = dict(wh.fetchall("SELECT submission_id, name FROM eval.submissions"))
    out = []
    for i in ids:
        spec = suite.model_of(str(names.get(i, "")))
        if spec is None or footprint in spec.footprints:
            out.append(i)
    return out


def score_suite(wh: Warehouse) -> dict[str, int]:
    """Score every current submission on its footprints; returns {footprint: score_run_id}.

    Each competitor joins the runs of its spec's footprints (the chained GBM, 25 items
    only, joins `geert` but not `full`). The reference baselines are made first if missing.
    """
    from proforma.app.scoring import run_reference_baselines, score
    from proforma.app.scoring.submissions.current import active_submissions

    run_reference_baselines(wh)
    ids = active_submissions(wh)
    runs = {}
    for footprint in ("full", "geert"):
        chosen = joins(wh, footprint, ids)
        if chosen:
            runs[footprint] = score(wh, footprint, chosen, baselines=False, board=True)
    return runs
