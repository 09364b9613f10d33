"""Fit time of each competitor on a demo-sized tabular panel (not a test; prints numbers).

    .venv/bin/python bench/baselines_demo.py [--rows 50000] [--preset demo] [--jobs 2]
        [--which enet,rf,ffnn-linear,ffnn-large,gbm-l1,gbm-l2] [--impute]

The panel is synthetic in the contract's column layout (985 features, 78 x 20
targets), split by years like the benchmark (train 1971-2001, val 2002-2009, test
2010-2024) and without missing features (as after imputation); --impute also times the
factor imputation of a copy with 20% of its feature cells missing.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from proforma.models.baselines import suite
from proforma.models.baselines.data import N_HORIZONS, TabularData, feature_columns, item_names
from proforma.models.baselines.fanout import FanOut, Tracker
from proforma.models.baselines.imputation import impute_by_quarter

YEARS = {"train": (1971, 2001), "val": (2002, 2009), "test": (2010, 2024)}


def synthetic(rows: int, seed: int = 0) -> dict[str, TabularData]:
    rng = np.random.default_rng(seed)
    features, items = feature_columns(), item_names()
    p = len(features)
    load = rng.normal(size=(p, 8)) * 0.5
    beta = rng.normal(size=(8, len(items), N_HORIZONS)) * 0.4
    n_years = sum(b - a + 1 for a, b in YEARS.values())
    out, firm = {}, 0
    for split, (a, b) in YEARS.items():
        n = rows * (b - a + 1) // n_years
        q = rng.integers(a * 4, b * 4 + 4, n).astype(np.int32)
        order = np.argsort(q, kind="stable")
        F = rng.normal(size=(n, 8)).astype(np.float32)
        X = (F @ load.T.astype(np.float32)) + 0.5 * rng.normal(size=(n, p)).astype(np.float32)
        X[:, -48:] = 0
        X[np.arange(n), p - 48 + rng.integers(0, 48, n)] = 1
        Y = np.einsum("nk,kih->nih", F, beta.astype(np.float32))
        Y += 0.5 * rng.normal(size=Y.shape).astype(np.float32)
        Y[rng.random(Y.shape) < 0.4] = np.nan
        out[split] = TabularData(
            np.arange(firm, firm + n, dtype=np.int32),
            q[order],
            np.full(n, split, dtype=object),
            X[order],
            Y[order],
            features,
            items,
        )
        firm += n
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=50_000)
    ap.add_argument("--preset", default="demo")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--which", default=",".join(suite.names()))
    ap.add_argument("--impute", action="store_true")
    args = ap.parse_args()
    data = synthetic(args.rows)
    print({k: v.n for k, v in data.items()})
    configs = suite.preset(args.preset)
    fan = FanOut("joblib", args.jobs)
    if args.impute:
        d = data["train"]
        X = d.X.copy()
        X[:, :-48][np.random.default_rng(1).random((d.n, X.shape[1] - 48)) < 0.2] = np.nan
        t0 = time.perf_counter()
        impute_by_quarter(X, d.origin_q)
        print(
            f"impute train ({d.n} rows, {len(np.unique(d.origin_q))} quarters): "
            f"{time.perf_counter() - t0:.1f}s"
        )
    tr, va, te = data["train"], data["val"], data["test"]
    with tempfile.TemporaryDirectory() as root:
        for model in args.which.split(","):
            t0 = time.perf_counter()
            request = suite.FitRequest(tr, va, te, configs[model], Path(root), fan, Tracker())
            fc = suite.get(model).fit(request)
            fit_s = time.perf_counter() - t0
            mu = fc.components[0][0]
            ok = np.isfinite(te.Y) & np.isfinite(mu)
            r2 = 1 - np.mean((te.Y[ok] - mu[ok]) ** 2) / np.var(te.Y[ok])
            print(
                f"{model:12s} fit {fit_s:7.1f}s  test cells {int(ok.sum()):>10,}  pooled R2 {r2:.3f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
