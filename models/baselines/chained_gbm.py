"""Chained GBM (Geertsema et al.) under the common protocol, LightGBM, L1 and L2 arms.

Per horizon h the 14-step chain (docs/baselines.md, "Models") runs revenue first, then costs and
working capital, through the capital-structure and tax blocks. At each step every
item of the step gets its own LightGBM regressor whose features are the 985 tabular
features plus the horizon-h values of all items of EARLIER steps:

- training (and early stopping on validation): the realized upstream values
  (teacher forcing), unreported ones entering as 0;
- inference on the test split: the upstream items' predicted values (the cascade).

Per item: up to 500 trees, early stopping with patience 10 on the validation split,
num_leaves in {15, 31} chosen by validation loss (L1 for the L1 arm, L2 for the L2
arm), then a refit on train + validation with the selected number of trees. Items of
the original specification outside the 78-item universe (neiq, dvpq, dvcq) have no
column in the tabular view and are left out: 25 chained items remain (the Geert.
footprint). Horizons are independent chains and fan out (fanout.FanOut).

`spec["shared_bins"]` (the demo preset) builds LightGBM's binned datasets once per
horizon instead of once per fit: the training split with the 985 features plus the
realized values of all chained items (teacher forcing) is binned once, the validation
and train+validation matrices reuse its bin boundaries, and every fit takes its rows as
a cheap subset. Each item still sees only the 985 features and the items of earlier
steps: the later items' columns are excluded from splitting by a single interaction
constraint listing the allowed columns (a feature mask; on the same bins the trees equal
those grown on a matrix without those columns). What differs from the per-fit datasets
of the paper preset is only where bin boundaries come from: the whole training split
rather than each fit's own rows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from proforma.models.baselines.base import Forecast
from proforma.models.baselines.data import N_HORIZONS, TabularData, item_names
from proforma.models.baselines.fanout import FanOut, Tracker
from proforma.models.baselines.fit_cache import FitCache
from proforma.models.baselines.grid import data_fingerprint as _fingerprint
from proforma.models.baselines.presets import GBM_PAPER

#: The paper's chain, verbatim ("(+x)" items included; those outside the 78 drop out).
CHAIN_SPEC: tuple[tuple[str, ...], ...] = (
    ("revtq",),
    ("cogsq", "rectq"),
    ("invtq", "apq"),
    ("xsgaq",),
    ("acoq", "lcoq"),
    ("ppentq", "intanq"),
    ("dpq",),
    ("dlcq", "dlttq", "loq"),
    ("xintq",),
    ("aoq", "mibtq", "neiq"),
    ("nopiq", "spiq", "xidoq"),
    ("txtq", "txpq", "txditcq"),
    ("miiq", "dvpq", "dvcq"),
    ("acomincq",),
)
ARMS = ("l1", "l2")


def chain_steps(items: tuple[str, ...] | None = None) -> list[list[str]]:
    """The 14 steps restricted to items of the universe (25 items), or to `items`."""
    universe = set(items or item_names())
    return [[it for it in step if it in universe] for step in CHAIN_SPEC]


def chain_items(items: tuple[str, ...] | None = None) -> list[str]:
    return [it for step in chain_steps(items) for it in step]


def design(X: np.ndarray, upstream: np.ndarray) -> np.ndarray:
    """Features plus upstream values; unreported upstream values (NaN) enter as 0."""
    return np.hstack([X, np.nan_to_num(upstream, nan=0.0).astype(np.float32)])


def _params(arm: str, leaves: int, spec: dict[str, Any], seed: int) -> dict[str, Any]:
    params = {
        "objective": "l1" if arm == "l1" else "l2",
        "metric": "l1" if arm == "l1" else "l2",
        "num_leaves": leaves,
        "learning_rate": spec["learning_rate"],
        "verbosity": -1,
        "num_threads": 1,
        "seed": seed,
        "deterministic": True,
        "force_col_wise": True,
    }
    # LightGBM defaults otherwise; the demo preset may pass speed knobs (max_bin, ...).
    params.update(spec.get("lgb_params", {}))
    return params


def _rows(y: np.ndarray, max_rows: int | None, seed: int) -> np.ndarray:
    rows = np.nonzero(np.isfinite(y))[0]
    if max_rows is not None and rows.size > max_rows:
        rows = np.sort(np.random.default_rng(seed).choice(rows, size=max_rows, replace=False))
    return rows


def chain_task(
    task: tuple[int, str, dict[str, Any], list[list[int]], int],
    *,
    X_tr: np.ndarray,
    Y_tr: np.ndarray,
    X_va: np.ndarray,
    Y_va: np.ndarray,
    X_test: np.ndarray,
) -> dict[str, Any]:
    """Train the whole chain at horizon h and cascade it over the test rows."""
    import lightgbm as lgb

    h, arm, spec, steps, seed = task
    if spec.get("shared_bins"):
        return _chain_shared_bins(h, arm, spec, steps, seed, X_tr, Y_tr, X_va, Y_va, X_test)
    hi = h - 1
    X_fit = np.vstack([X_tr, X_va])
    Y_fit = np.concatenate([Y_tr[:, :, hi], Y_va[:, :, hi]])
    n_items = Y_tr.shape[1]
    pred = np.full((X_test.shape[0], n_items), np.nan, dtype=np.float32)
    chosen: dict[int, dict[str, Any]] = {}
    upstream: list[int] = []
    for step in steps:
        for i in step:
            s = seed + 997 * h + i
            tr = _rows(Y_tr[:, i, hi], spec["max_rows"], s)
            va = _rows(Y_va[:, i, hi], spec["max_rows"], s + 2)
            if tr.size < 2:
                continue
            D_tr = design(X_tr[tr], Y_tr[tr][:, upstream, hi])
            D_va = design(X_va[va], Y_va[va][:, upstream, hi]) if va.size else None

            def datasets(D_tr=D_tr, D_va=D_va, tr=tr, va=va, i=i):
                dtrain = lgb.Dataset(D_tr, Y_tr[tr, i, hi], free_raw_data=True)
                dval = (
                    None if D_va is None else lgb.Dataset(D_va, Y_va[va, i, hi], reference=dtrain)
                )
                return dtrain, dval

            best = _select_leaves(arm, spec, s, datasets)
            fit = _rows(Y_fit[:, i], spec["max_rows"], s + 1)
            D_fit = design(X_fit[fit], Y_fit[fit][:, upstream])
            booster = lgb.train(
                _params(arm, best["leaves"], spec, s),
                lgb.Dataset(D_fit, Y_fit[fit, i]),
                num_boost_round=best["trees"],
            )
            # The cascade: upstream columns hold this chain's own test predictions.
            pred[:, i] = np.asarray(booster.predict(design(X_test, pred[:, upstream])), np.float32)
            chosen[i] = {**best, "n_fit": int(fit.size), "model": booster.model_to_string()}
        upstream = upstream + step
    return {"h": h, "arm": arm, "pred": pred, "chosen": chosen}


def _reused(dtrain: Any, dval: Any) -> Callable[[], tuple[Any, Any]]:
    """`datasets` for _select_leaves that hands out the same (shared-bins) subsets."""
    return lambda: (dtrain, dval)


def _select_leaves(
    arm: str,
    spec: dict[str, Any],
    seed: int,
    datasets: Callable[[], tuple[Any, Any]],
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The leaves grid point with the lowest early-stopped validation loss, and its trees.

    `datasets()` gives (train, validation or None) for each grid point: the per-fit path
    builds fresh ones (LightGBM consumes them), the shared-bins path reuses subsets.
    """
    import lightgbm as lgb

    best = None
    for leaves in spec["leaves"]:
        params = _params(arm, leaves, spec, seed) | (extra or {})
        dtrain, dval = datasets()
        if dval is not None:
            booster = lgb.train(
                params,
                dtrain,
                num_boost_round=spec["max_trees"],
                valid_sets=[dval],
                callbacks=[lgb.early_stopping(spec["early_stopping"], verbose=False)],
            )
            score = float(booster.best_score["valid_0"][params["metric"]])
            trees = int(booster.best_iteration or spec["max_trees"])
        else:  # no validation rows for this cell: no selection possible
            score, trees = float("inf"), spec["max_trees"]
        if best is None or score < best["val_loss"]:
            best = {"leaves": leaves, "trees": trees, "val_loss": score}
    if best is None:
        raise ValueError("the GBM spec's leaves grid is empty")
    return best


def _subset(parent: Any, rows: np.ndarray, label: np.ndarray) -> Any:
    """Rows of a constructed, binned dataset with their own label (no re-binning)."""
    d = parent.subset(rows)
    d.set_label(label)  # checked (Python side) by construct() ...
    d.construct()
    d.set_label(label)  # ... and only reaches LightGBM once the subset exists
    return d


def _chain_shared_bins(
    h: int,
    arm: str,
    spec: dict[str, Any],
    steps: list[list[int]],
    seed: int,
    X_tr: np.ndarray,
    Y_tr: np.ndarray,
    X_va: np.ndarray,
    Y_va: np.ndarray,
    X_test: np.ndarray,
) -> dict[str, Any]:
    """chain_task with the binned datasets built once per horizon (module docstring)."""
    import lightgbm as lgb

    hi = h - 1
    order = [i for step in steps for i in step]  # upstream columns in chain order
    p = X_tr.shape[1]
    n_items = Y_tr.shape[1]
    ds_params = _params(arm, spec["leaves"][0], spec, seed)
    # Teacher forcing: every fit's upstream columns hold realized values (unreported: 0).
    D_tr = design(X_tr, Y_tr[:, order, hi])
    D_va = design(X_va, Y_va[:, order, hi])
    base = lgb.Dataset(D_tr, params=ds_params, free_raw_data=False).construct()
    val_base = lgb.Dataset(D_va, reference=base, params=ds_params, free_raw_data=False).construct()
    fit_base = lgb.Dataset(
        np.vstack([D_tr, D_va]), reference=base, params=ds_params, free_raw_data=False
    ).construct()
    Y_fit = np.concatenate([Y_tr[:, :, hi], Y_va[:, :, hi]])
    # The cascade: upstream columns are filled with the chain's test predictions as they come.
    D_test = design(X_test, np.zeros((X_test.shape[0], len(order)), np.float32))
    pred = np.full((X_test.shape[0], n_items), np.nan, dtype=np.float32)
    chosen: dict[int, dict[str, Any]] = {}
    n_up = 0
    for step in steps:
        allowed = {"interaction_constraints": [list(range(p + n_up))]}
        for i in step:
            s = seed + 997 * h + i
            tr = _rows(Y_tr[:, i, hi], spec["max_rows"], s)
            va = _rows(Y_va[:, i, hi], spec["max_rows"], s + 2)
            if tr.size < 2:
                continue
            dtrain = _subset(base, tr, Y_tr[tr, i, hi])
            dval = _subset(val_base, va, Y_va[va, i, hi]) if va.size else None
            best = _select_leaves(arm, spec, s, _reused(dtrain, dval), allowed)
            fit = _rows(Y_fit[:, i], spec["max_rows"], s + 1)
            booster = lgb.train(
                _params(arm, best["leaves"], spec, s) | allowed,
                _subset(fit_base, fit, Y_fit[fit, i]),
                num_boost_round=best["trees"],
            )
            pred[:, i] = np.asarray(booster.predict(D_test), np.float32)
            chosen[i] = {**best, "n_fit": int(fit.size), "model": booster.model_to_string()}
        for i in step:  # the next steps see this step's predictions (NaN: not fit -> 0)
            D_test[:, p + order.index(i)] = np.nan_to_num(pred[:, i], nan=0.0)
        n_up += len(step)
    return {"h": h, "arm": arm, "pred": pred, "chosen": chosen}


def fit_predict(
    train: TabularData,
    val: TabularData,
    test: TabularData,
    cache_root: Any,
    arm: str = "l1",
    spec: dict[str, Any] | None = None,
    *,
    horizons: tuple[int, ...] | None = None,
    items: tuple[str, ...] | None = None,
    fan: FanOut | None = None,
    tracker: Tracker | None = None,
    seed: int = 0,
) -> Forecast:
    """Train the L1 or L2 arm's chain per horizon and forecast the test split (25 items).

    `items` restricts the chain to a subset (steps keep their order; tests use it).
    """
    if arm not in ARMS:
        raise ValueError(f"arm must be one of {ARMS}")
    spec = spec or GBM_PAPER
    fan = fan or FanOut("serial")
    tracker = tracker or Tracker()
    horizons = tuple(horizons or range(1, N_HORIZONS + 1))
    universe = tuple(it for it in train.items if items is None or it in items)
    steps = [[train.items.index(it) for it in step] for step in chain_steps(universe)]
    steps = [s for s in steps if s]
    config = {"arm": arm, "spec": spec, "steps": steps, "horizons": list(horizons), "seed": seed}
    model = f"gbm-{arm}"
    fits = FitCache(cache_root, model, config, _fingerprint(train, val, test))
    todo = [(h, arm, spec, steps, seed) for h in horizons if not fits.has("chain", f"h{h}")]
    advance = tracker.stage(f"{model}: chains", len(horizons))
    advance(len(horizons) - len(todo))
    fan.map(
        chain_task,
        todo,
        {"X_tr": train.X, "Y_tr": train.Y, "X_va": val.X, "Y_va": val.Y, "X_test": test.X},
        on_result=lambda t, r: fits.save("chain", f"h{t[0]}", r),
        progress=advance,
    )
    mu = np.full((test.n, len(train.items), N_HORIZONS), np.nan, dtype=np.float32)
    chosen = {}
    for h in horizons:
        r = fits.load("chain", f"h{h}")
        mu[:, :, h - 1] = r["pred"]
        chosen[h] = {
            train.items[i]: {k: v for k, v in c.items() if k != "model"}
            for i, c in r["chosen"].items()
        }
    return Forecast(test, [(mu, None)], {"chosen": chosen, "run": str(fits.dir)})
