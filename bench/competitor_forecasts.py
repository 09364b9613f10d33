"""Fingerprints of every competitor's forecasts on a tiny synthetic panel (not a test).

    .venv/bin/python bench/competitor_forecasts.py [--save FILE] [--compare FILE]

Fits each model of the suite (models/baselines/suite.py) at the `demo` preset on a
fixed panel in the contract's layout (4 items x 2 horizons for the per-cell models and
the chain; the FFNNs forecast every cell) and prints a SHA-256 of its forecast batches.
Used to show that a refactoring of the suite left every number as it was: `--save`
before, `--compare` after (exit 1 on any difference).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from proforma.app.flows.baselines import fit_model
from proforma.models.baselines import suite
from proforma.models.baselines.data import N_HORIZONS, TabularData, feature_columns, item_names
from proforma.models.baselines.fanout import FanOut, Tracker

ITEMS = ("niq", "revtq", "cogsq", "rectq")
HORIZONS = (1, 3)


def panel(n_per_q: int = 30, seed: int = 0) -> dict[str, TabularData]:
    quarters = {"train": range(7900, 7908), "val": range(8010, 8013), "test": range(8050, 8053)}
    rng = np.random.default_rng(seed)
    features, items = feature_columns(), item_names()
    p = len(features)
    load = rng.normal(size=(p, 3)) * 0.8
    beta = rng.normal(size=(3, len(items), N_HORIZONS))
    out, firm = {}, 0
    for split, qs in quarters.items():
        nq = n_per_q * len(qs)
        F = rng.normal(size=(nq, 3))
        X = (F @ load.T + 0.3 * rng.normal(size=(nq, p))).astype(np.float32)
        X[:, -48:] = 0.0
        X[np.arange(nq), p - 48 + rng.integers(0, 48, nq)] = 1.0
        noise = 0.3 * rng.normal(size=(nq, len(items), N_HORIZONS))
        Y = (np.einsum("nk,kih->nih", F, beta) + noise).astype(np.float32)
        Y[rng.random(Y.shape) < 0.1] = np.nan
        out[split] = TabularData(
            firm_id=np.arange(firm, firm + nq, dtype=np.int32),
            origin_q=np.repeat(np.asarray(list(qs), dtype=np.int32), n_per_q),
            split=np.full(nq, split, dtype=object),
            X=X,
            Y=Y,
            features=features,
            items=items,
        )
        firm += nq
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--save", type=Path)
    ap.add_argument("--compare", type=Path)
    args = ap.parse_args()
    data = panel()
    configs = suite.preset("demo")
    out: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as root:
        for name in suite.names():
            spec = suite.get(name)
            fc = fit_model(
                spec, data, configs[name], FanOut("serial"), Tracker(), root, ITEMS, HORIZONS
            )
            h = hashlib.sha256()
            for batch in fc.batches():
                for col in batch.columns:
                    h.update(np.asarray(col.to_numpy(zero_copy_only=False)).tobytes())
            out[name] = h.hexdigest()[:16]
            print(f"{name:12s} {out[name]}  {fc.cells():>8,} cells", flush=True)
    if args.save:
        args.save.write_text(json.dumps(out, indent=1))
    if args.compare:
        before = json.loads(args.compare.read_text())
        diff = sorted(k for k in before.keys() | out.keys() if before.get(k) != out.get(k))
        print("identical" if not diff else f"DIFFERENT: {', '.join(diff)}")
        return 1 if diff else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
