"""Per-(item, horizon) models with one hyperparameter grid selected per horizon.

The protocol of the elastic net and the random forest (the paper's appendix "Competitor
specifications"; docs/baselines.md, "Models"):

1. selection: for each horizon h and grid point g, fit on the train split for the
   reference item (net income, `niq`) and score the validation-split MSE; the grid
   point with the lowest validation MSE at h is used for EVERY item at h;
2. refit: for each (item, h), fit on train + validation with h's selected point and
   predict the test split.

Rows with a missing target or any missing feature are dropped per fit. Both stages
fan out (fanout.FanOut) and every finished fit lands in the fit cache (fit_cache.py), so a rerun
skips it. Builders are plain module-level functions `build(params) -> estimator`
(picklable for joblib and Dask).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from proforma.models.baselines.data import N_HORIZONS, TabularData
from proforma.models.baselines.fanout import FanOut, Tracker
from proforma.models.baselines.fit_cache import FitCache

Builder = Callable[[dict[str, Any]], Any]
GridPoints = Callable[[dict[str, Any], str], list[dict[str, Any]]]


@dataclass
class PairwiseConfig:
    grid: list[dict[str, Any]]
    selection_item: str = "niq"
    items: tuple[str, ...] | None = None  # None: all 78
    horizons: tuple[int, ...] = tuple(range(1, N_HORIZONS + 1))
    max_rows: int | None = None  # subsample each fit to at most this many rows (demo)
    seed: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        return {
            "grid": self.grid,
            "selection_item": self.selection_item,
            "items": self.items,
            "horizons": list(self.horizons),
            "max_rows": self.max_rows,
            "seed": self.seed,
            **self.extra,
        }


def usable_rows(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Rows with a realized target and no missing feature."""
    return np.isfinite(y) & np.isfinite(X).all(axis=1)


def _complete(X: np.ndarray, complete: np.ndarray | None) -> np.ndarray:
    """Rows of X without a missing feature; `complete` is that mask precomputed once per
    stage (recomputing it per fit cost as much as a small elastic-net fit)."""
    return np.isfinite(X).all(axis=1) if complete is None else complete


def _fit_rows(
    X: np.ndarray,
    y: np.ndarray,
    max_rows: int | None,
    seed: int,
    complete: np.ndarray | None = None,
) -> np.ndarray:
    rows = np.nonzero(np.isfinite(y) & _complete(X, complete))[0]
    if max_rows is not None and rows.size > max_rows:
        rows = np.sort(np.random.default_rng(seed).choice(rows, size=max_rows, replace=False))
    return rows


def select_task(
    task: tuple[int, int, dict[str, Any], int, Builder, int | None, int],
    *,
    X_fit: np.ndarray,
    Y_fit: np.ndarray,
    X_val: np.ndarray,
    Y_val: np.ndarray,
    fit_complete: np.ndarray | None = None,
    val_complete: np.ndarray | None = None,
) -> dict:
    """Fit grid point g on train for the reference item at h; return its validation MSE."""
    h, g, params, ref, build, max_rows, seed = task
    y = Y_fit[:, ref, h - 1]
    rows = _fit_rows(X_fit, y, max_rows, seed + 1000 * h, fit_complete)
    yv = Y_val[:, ref, h - 1]
    vrows = np.nonzero(np.isfinite(yv) & _complete(X_val, val_complete))[0]
    if rows.size < 2 or vrows.size == 0:
        return {
            "h": h,
            "g": g,
            "mse": float("inf"),
            "n_fit": int(rows.size),
            "n_val": int(vrows.size),
        }
    est = build(params)
    est.fit(X_fit[rows], y[rows])
    pred = est.predict(X_val[vrows])
    mse = float(np.mean((pred - yv[vrows]) ** 2))
    return {"h": h, "g": g, "mse": mse, "n_fit": int(rows.size), "n_val": int(vrows.size)}


def refit_task(
    task: tuple[int, int, dict[str, Any], Builder, Callable | None, int | None, int],
    *,
    X_fit: np.ndarray,
    Y_fit: np.ndarray,
    X_test: np.ndarray,
    fit_complete: np.ndarray | None = None,
    test_complete: np.ndarray | None = None,
) -> dict:
    """Fit (item, h) on train+val with h's selected point; predict every test row."""
    i, h, params, build, keep_state, max_rows, seed = task
    y = Y_fit[:, i, h - 1]
    rows = _fit_rows(X_fit, y, max_rows, seed + 1000 * h + i, fit_complete)
    pred = np.full(X_test.shape[0], np.nan, dtype=np.float32)
    state = None
    if rows.size >= 2:
        est = build(params)
        est.fit(X_fit[rows], y[rows])
        ok = _complete(X_test, test_complete)
        if ok.all():  # the usual case after imputation: no 40 MB copy of the test split
            pred[:] = est.predict(X_test).astype(np.float32)
        elif ok.any():
            pred[ok] = est.predict(X_test[ok]).astype(np.float32)
        state = keep_state(est) if keep_state else None
    return {"item": i, "h": h, "pred": pred, "n_fit": int(rows.size), "state": state}


def select_chunk(tasks: list, **shared: np.ndarray) -> list[dict]:
    """Several selection fits in one dispatch (amortizes per-task scheduling overhead)."""
    return [select_task(t, **shared) for t in tasks]


def refit_chunk(tasks: list, **shared: np.ndarray) -> list[dict]:
    return [refit_task(t, **shared) for t in tasks]


def chunk_size(n_tasks: int, fan: FanOut) -> int:
    """About 8 chunks per worker: few enough dispatches, enough to balance load."""
    return max(1, n_tasks // (8 * max(fan.n_jobs, 1)))


def _run_chunked(
    fan: FanOut,
    fn: Callable,
    tasks: list,
    shared: dict,
    save: Callable,
    advance: Callable[[int], None],
) -> None:
    size = chunk_size(len(tasks), fan)
    chunks = [tasks[i : i + size] for i in range(0, len(tasks), size)]

    def on_result(chunk: list, results: list) -> None:
        for t, r in zip(chunk, results, strict=True):
            save(t, r)
        advance(len(chunk))

    fan.map(fn, chunks, shared, on_result=on_result)


def select_per_horizon(scores: list[dict], grid: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Per horizon, the grid point with the lowest validation MSE (ties: first in the grid)."""
    best: dict[int, tuple[float, int]] = {}
    for s in scores:
        cur = best.get(s["h"])
        if cur is None or s["mse"] < cur[0] or (s["mse"] == cur[0] and s["g"] < cur[1]):
            best[s["h"]] = (s["mse"], s["g"])
    return {h: {"g": g, "params": grid[g], "val_mse": mse} for h, (mse, g) in best.items()}


def run_pairwise(
    model: str,
    build: Builder,
    cfg: PairwiseConfig,
    train: TabularData,
    val: TabularData,
    test: TabularData,
    fits: FitCache,
    fan: FanOut | None = None,
    tracker: Tracker | None = None,
    keep_state: Callable[[Any], Any] | None = None,
) -> tuple[np.ndarray, dict[int, dict[str, Any]]]:
    """Select per horizon on validation, refit on train+val, predict test.

    Returns (mu, selection): mu[test_row, item_index, h-1] (NaN where not fit) and the
    selected grid point per horizon.
    """
    fan = fan or FanOut("serial")
    tracker = tracker or Tracker()
    items = cfg.items or train.items
    item_index = [train.items.index(it) for it in items]
    ref = train.items.index(cfg.selection_item)

    # 1. selection on the reference item
    sel_tasks = [
        (h, g, params, ref, build, cfg.max_rows, cfg.seed)
        for h in cfg.horizons
        for g, params in enumerate(cfg.grid)
        if not fits.has("select", f"h{h}_g{g}")
    ]
    advance = tracker.stage(f"{model}: select", len(cfg.horizons) * len(cfg.grid))
    advance(len(cfg.horizons) * len(cfg.grid) - len(sel_tasks))
    _run_chunked(
        fan,
        select_chunk,
        sel_tasks,
        {
            "X_fit": train.X,
            "Y_fit": train.Y,
            "X_val": val.X,
            "Y_val": val.Y,
            "fit_complete": _complete(train.X, None),
            "val_complete": _complete(val.X, None),
        },
        lambda t, r: fits.save("select", f"h{t[0]}_g{t[1]}", r),
        advance,
    )
    scores = [fits.load("select", f"h{h}_g{g}") for h in cfg.horizons for g in range(len(cfg.grid))]
    selection = select_per_horizon(scores, cfg.grid)

    # 2. refit on train + validation, predict test
    fit = TabularData.concat(train, val)
    fit_tasks = [
        (i, h, selection[h]["params"], build, keep_state, cfg.max_rows, cfg.seed)
        for i in item_index
        for h in cfg.horizons
        if not fits.has("fit", f"{train.items[i]}_h{h}")
    ]
    total = len(item_index) * len(cfg.horizons)
    advance = tracker.stage(f"{model}: refit", total)
    advance(total - len(fit_tasks))
    _run_chunked(
        fan,
        refit_chunk,
        fit_tasks,
        {
            "X_fit": fit.X,
            "Y_fit": fit.Y,
            "X_test": test.X,
            "fit_complete": _complete(fit.X, None),
            "test_complete": _complete(test.X, None),
        },
        lambda t, r: fits.save("fit", f"{train.items[t[0]]}_h{t[1]}", r),
        advance,
    )
    mu = np.full((test.n, len(train.items), N_HORIZONS), np.nan, dtype=np.float32)
    for i in item_index:
        for h in cfg.horizons:
            mu[:, i, h - 1] = fits.load("fit", f"{train.items[i]}_h{h}")["pred"]
    return mu, selection


def data_fingerprint(*parts: TabularData) -> str:
    """Identifies the data a fit cache run was fit on (a rebuilt panel starts a new run)."""
    return "-".join(p.fingerprint() for p in parts)


def select_refit_forecast(
    model: str,
    build: Builder,
    grid: list[dict[str, Any]],
    spec: dict[str, Any],
    train: TabularData,
    val: TabularData,
    test: TabularData,
    cache_root: Any,
    *,
    items: tuple[str, ...] | None = None,
    horizons: tuple[int, ...] | None = None,
    fan: FanOut | None = None,
    tracker: Tracker | None = None,
    keep_state: Callable[[Any], Any] | None = None,
) -> Any:
    """The per-(item, horizon) protocol shared by the elastic net and the random forest:
    select on validation, refit on train+val, forecast the test split."""
    from proforma.models.baselines.base import Forecast

    cfg = PairwiseConfig(grid=grid, items=items, max_rows=spec.get("max_rows"))
    if horizons:
        cfg.horizons = tuple(horizons)
    fits = FitCache(cache_root, model, cfg.describe(), data_fingerprint(train, val, test))
    mu, selection = run_pairwise(
        model, build, cfg, train, val, test, fits, fan, tracker, keep_state
    )
    return Forecast(test, [(mu, None)], {"selection": selection, "run": str(fits.dir)})


def cuml_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("cuml") is not None


@dataclass
class GridModel:
    """A per-(item, horizon) model under this protocol: its name (its fit cache folder),
    the builder of one grid point's estimator, the grid a spec spans, the paper's spec
    (used when none is given) and what of a fitted estimator is kept on disk."""

    name: str
    build: Builder
    grid_points: GridPoints
    paper: dict[str, Any]
    keep_state: Callable[[Any], Any] | None = None

    def fit_predict(
        self,
        train: TabularData,
        val: TabularData,
        test: TabularData,
        cache_root: Any,
        spec: dict[str, Any] | None = None,
        *,
        items: tuple[str, ...] | None = None,
        horizons: tuple[int, ...] | None = None,
        fan: FanOut | None = None,
        tracker: Tracker | None = None,
        backend: str | None = None,
    ) -> Any:
        """Select on validation, refit on train+val, forecast the test split (cuML when
        installed, else scikit-learn)."""
        spec = spec or self.paper
        backend = backend or ("cuml" if cuml_available() else "sklearn")
        return select_refit_forecast(
            self.name,
            self.build,
            self.grid_points(spec, backend),
            spec,
            train,
            val,
            test,
            cache_root,
            items=items,
            horizons=horizons,
            fan=fan,
            tracker=tracker,
            keep_state=self.keep_state,
        )
