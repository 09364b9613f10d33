"""The paper's exact configurations and the small `demo` preset.

`paper` is the paper's appendix verbatim (docs/baselines.md, "Models"). `demo` keeps every model's
structure (same features, same selection-then-refit protocol, all 78 items x 20
horizons, the same 14-step chain, a seed mixture with sigma) but shrinks grids, trees,
epochs, seeds and rows so all six models finish on the synthetic demo panel in
minutes on 2 cores. DEMO_CHANGES states each change; docs/baselines.md repeats it.
"""

from __future__ import annotations

from typing import Any

#: Every competitor's spec (suite.py) has one configuration per preset name.
PRESETS = ("paper", "demo")

ENET_PAPER: dict[str, Any] = {
    "alpha": [0.01, 0.1, 1, 10, 100, 1000],
    "l1_ratio": [0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99],
    "max_iter": 10_000,
    "tol": 1e-4,
    "max_rows": None,
}
ENET_DEMO: dict[str, Any] = {
    "alpha": [0.01, 0.1],
    "l1_ratio": [0.5, 0.99],
    "max_iter": 1_000,
    "tol": 1e-2,
    "max_rows": 2_000,
}

RF_PAPER: dict[str, Any] = {
    "n_estimators": [50, 100, 200],
    "max_depth": [5, 10, 20],
    "min_samples_split": [100, 200],
    "min_samples_leaf": 25,
    "max_samples": 0.5,
    "max_features": 1.0,
    "max_rows": None,
}
RF_DEMO: dict[str, Any] = {
    "n_estimators": [6],
    "max_depth": [4, 6],
    "min_samples_split": [100],
    "min_samples_leaf": 25,
    "max_samples": 0.5,
    "max_features": 0.1,
    "max_rows": 1_500,
}

FFNN_PAPER: dict[str, Any] = {
    "epochs": 6,
    "seeds": [60, 61, 62, 63, 64],
    "lr": 1e-4,
    "batch_size": 1024,
    "max_rows": None,
}
FFNN_DEMO: dict[str, Any] = {
    "epochs": 3,
    "seeds": [60, 61],
    "lr": 1e-3,
    "batch_size": 512,
    "max_rows": 10_000,
}

GBM_PAPER: dict[str, Any] = {
    "max_trees": 500,
    "early_stopping": 10,
    "leaves": [15, 31],
    "learning_rate": 0.1,
    "max_rows": None,
}
GBM_DEMO: dict[str, Any] = {
    "max_trees": 30,
    "early_stopping": 10,
    "leaves": [15],
    "learning_rate": 0.2,
    "max_rows": 1_500,
    "shared_bins": True,
    "lgb_params": {"max_bin": 31, "feature_fraction": 0.3, "bin_construct_sample_cnt": 5_000},
}

DEMO_CHANGES: dict[str, str] = {
    "enet": "grid alpha {0.01,0.1} x l1_ratio {0.5,0.99} (4 of 42 points); max_iter 1,000, tol 1e-2; "
    "each fit on at most 2,000 rows",
    "rf": "6 trees, depth {4,6}, min_samples_split 100 (2 of 18 points); max_features 0.1; "
    "each fit on at most 1,500 rows",
    "ffnn": "seeds 60-61 (2 of 5), 3 epochs, learning rate 1e-3, batch 512; at most 10,000 training rows",
    "gbm": "at most 30 trees at learning rate 0.2 (paper 500 at LightGBM's 0.1), leaves {15} only, "
    "max_bin 31 (LightGBM default 255), 30% of the columns per tree; bins built once per "
    "horizon from 5,000 training rows (shared_bins); each fit and each early-stopping set on "
    "at most 1,500 rows",
}
