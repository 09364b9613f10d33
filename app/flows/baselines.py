"""The competitor suite's flow (docs/baselines.md): `proforma run baselines` and `run impute`.

It makes sure the factor-imputed tabular view is current (app/imputed.py), hands each
model numpy arrays built from the view's Arrow batches, writes the returned forecasts
through `proforma.app.scoring.ingest_forecasts` and scores them. Models never open the database.
Finished fits are kept under settings.models_dir/baselines, so an interrupted run
resumes where it stopped.
"""

from __future__ import annotations

import json
import time
from typing import Any, NotRequired, TypedDict

from proforma.app.settings import get_settings
from proforma.app.warehouse import Warehouse
from proforma.contracts.competitors import COMPETITORS, family_of
from proforma.contracts.errors import UserError
from proforma.contracts.panel import SPLITS
from proforma.contracts.provenance import utcnow
from proforma.models.baselines.data import TabularData, from_batches
from proforma.models.baselines.fanout import FanOut, Tracker
from proforma.models.baselines.presets import preset


def parse_which(which: str) -> list[str]:
    chosen = [w.strip() for w in which.split(",") if w.strip()]
    unknown = [w for w in chosen if w not in COMPETITORS]
    if unknown or not chosen:
        raise UserError(
            f"Unknown model(s) {', '.join(unknown) or '(none)'}; choose from {', '.join(COMPETITORS)}"
        )
    return list(dict.fromkeys(chosen))


def load_splits(wh: Warehouse, batch_size: int = 8192) -> dict[str, TabularData]:
    """The imputed tabular view's three splits as numpy arrays."""
    from proforma.app.views import tabular_reader

    data = {s: from_batches(tabular_reader(wh, s, batch_size, imputed=True)) for s in SPLITS}
    for s, d in data.items():
        if d.n == 0:
            raise UserError(
                f"The imputed tabular view has no {s} rows: run `proforma build` first."
            )
    return data


def fit_model(
    model: str,
    data: dict[str, TabularData],
    spec: dict[str, dict[str, Any]],
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
    train, val, test = data["train"], data["val"], data["test"]
    if model == "enet":
        from proforma.models.baselines import elastic_net

        return elastic_net.fit_predict(
            train,
            val,
            test,
            root,
            spec["enet"],
            fan=fan,
            tracker=tracker,
            items=items,
            horizons=horizons,
        )
    if model == "rf":
        from proforma.models.baselines import random_forest

        return random_forest.fit_predict(
            train,
            val,
            test,
            root,
            spec["rf"],
            fan=fan,
            tracker=tracker,
            items=items,
            horizons=horizons,
        )
    if model.startswith("ffnn-"):
        from proforma.models.baselines import ffnn

        return ffnn.fit_predict(
            train, val, test, root, model.removeprefix("ffnn-"), spec["ffnn"], tracker=tracker
        )
    from proforma.models.baselines import chained_gbm

    return chained_gbm.fit_predict(
        train,
        val,
        test,
        root,
        model.removeprefix("gbm-"),
        spec["gbm"],
        fan=fan,
        tracker=tracker,
        items=items,
        horizons=horizons,
    )


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
    from proforma.app.imputed import build_imputed, current_imputation

    tracker = tracker or Tracker()
    spec = preset(preset_name)
    fan = FanOut(engine, n_jobs, scheduler=scheduler)
    imputation_id = None if reimpute else current_imputation(wh)
    if imputation_id is None:
        imputation_id = build_imputed(wh, tracker=tracker)["imputation_id"]
    build_id = wh.scalar(
        "SELECT build_id FROM meta.imputations WHERE imputation_id = ?", [imputation_id]
    )
    data = load_splits(wh)
    root = get_settings().models_dir / "baselines"
    results: list[CompetitorRun] = []
    for model in which:
        t0 = time.perf_counter()
        forecast = fit_model(model, data, spec, fan, tracker, root, items, horizons)
        fit_s = time.perf_counter() - t0
        family_key = (
            "ffnn" if model.startswith("ffnn") else "gbm" if model.startswith("gbm") else model
        )
        metadata = {
            "model": model,
            "preset": preset_name,
            "config": spec[family_key],
            "imputation_id": imputation_id,
            "build_id": build_id,
            "fit_s": round(fit_s, 1),
            "registry_run": forecast.info.get("run"),
        }
        submission_id = _ingest(wh, model, preset_name, forecast, metadata)
        info = {k: v for k, v in forecast.info.items() if k != "run"}
        wh.execute(
            "INSERT INTO meta.baseline_runs (model, preset, build_id, imputation_id, registry_run, config, "
            "info, fit_s, submission_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                model,
                preset_name,
                build_id,
                imputation_id,
                forecast.info.get("run", ""),
                json.dumps(spec[family_key], default=str),
                json.dumps(info, default=str),
                fit_s,
                submission_id,
                utcnow(),
            ],
        )
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


def _ingest(wh: Warehouse, model: str, preset_name: str, forecast: Any, metadata: dict) -> int:
    from proforma.app import scoring

    name = model if preset_name == "paper" else f"{model} ({preset_name})"
    return scoring.ingest_forecasts(
        wh,
        name,
        forecast.batches(),
        family=family_of(model),
        source="model",
        metadata=metadata,
    )


def score_suite(wh: Warehouse) -> dict[str, int]:
    """Score every current submission on its footprints; returns {footprint: score_run_id}.

    The chained GBM forecasts only the 25 chained items, so it joins the `geert`
    footprint's run but not the `full` one (a common sample with it would shrink the
    full footprint to its items). The reference baselines are made first if missing.
    """
    from proforma.app.scoring import run_reference_baselines, score
    from proforma.app.scoring.submissions.registry import active_submissions

    run_reference_baselines(wh)
    ids = active_submissions(wh)
    names = dict(wh.fetchall("SELECT submission_id, name FROM eval.submissions"))
    full = [i for i in ids if not str(names.get(i, "")).startswith("gbm-")]
    runs = {}
    if full:
        runs["full"] = score(wh, "full", full, baselines=False)
    runs["geert"] = score(wh, "geert", ids, baselines=False)
    return runs
