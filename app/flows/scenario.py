"""Scenario flows below the CLI (so the service and the report can run them too):
Forma's checkpoints that exist, a conditional statement forecast in dollars, and the
oracle experiment (the paper's "Scenario Analysis by Conditioning"; docs/report.md).

The model side is models/forma/scenario.py; this module opens nothing itself: callers
hand it the warehouse, and it hands the model Arrow windows (proforma.app.model_inputs.views.tuple_windows)
and the origin's standardization parameters as arrays. Dollars shown are expected
dollars by the closed form (models/dollars.py); interval bounds are the mixture's
quantiles carried through the monotone map.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from proforma.app.flows.forma import load_store, run_dir
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.errors import UserError

_SEED_FILE = re.compile(r"^seed(\d+)\.pt$")


def checkpoint_dir(preset: str, family: str) -> Path:
    """Where `proforma train forma --preset P --family F` writes seed<N>.pt."""
    return run_dir(preset, family)


def available_seeds(preset: str, family: str) -> list[int]:
    """Seeds with a checkpoint file for the preset and family, in order."""
    folder = checkpoint_dir(preset, family)
    if not folder.is_dir():
        return []
    return sorted(int(m.group(1)) for p in folder.iterdir() if (m := _SEED_FILE.match(p.name)))


def load_forma(
    preset: str, family: str, seeds: Sequence[int] | None, device: str = "cpu"
) -> tuple[list[Any], list[int], list[dict]]:
    """(models, seeds, checkpoint dicts) of the chosen seeds, or of every finished
    checkpoint of the preset when `seeds` is None (the demo trains one seed, the paper
    five: a scenario uses whichever exist)."""
    from proforma.models.forma.train import load_checkpoint

    folder = checkpoint_dir(preset, family)
    have = available_seeds(preset, family)
    if not have:
        raise UserError(
            f"No Forma checkpoint for preset {preset!r} ({family}) in {folder}: "
            f"train one with `proforma train forma --preset {preset} --family {family}`"
        )
    if seeds is not None:
        missing = [s for s in seeds if s not in have]
        if missing:
            raise UserError(
                f"No Forma checkpoint for seed(s) {', '.join(map(str, missing))} of preset "
                f"{preset!r} ({family}) in {folder}; trained: {', '.join(map(str, have))}. "
                f"Leave --seeds out to use every trained seed"
            )
    models, used, ckpts = [], [], []
    for s in seeds if seeds is not None else have:
        model, ck = load_checkpoint(folder / f"seed{s}.pt", device)
        if not ck.get("complete"):
            if seeds is not None:
                raise UserError(
                    f"{folder / f'seed{s}.pt'} stopped after epoch {ck.get('epoch')}; "
                    f"finish it with `proforma train forma --preset {preset} "
                    f"--seeds {s} --resume`"
                )
            continue  # still training: the finished seeds make the mixture
        models.append(model)
        used.append(s)
        ckpts.append(ck)
    if not models:
        raise UserError(
            f"No finished Forma checkpoint in {folder}: finish training with "
            f"`proforma train forma --preset {preset} --resume`"
        )
    return models, used, ckpts


def window_store(wh: Warehouse, split: str, future: bool, **filters: Any):
    """The tuple windows of a split (optionally one firm / origin quarter) for Forma."""
    return load_store(wh, [split], future=future, **filters)


def statement_classes(wh: Warehouse) -> dict[int, str]:
    """Item -> BS, IS or CF; a derived item takes the statement of its identities."""
    return dict(
        wh.fetchall(
            "SELECT i.item_id, CASE WHEN i.statement IN ('BS', 'IS', 'CF') THEN i.statement "
            "ELSE coalesce(min(d.statement), i.statement) END "
            "FROM ref.items i LEFT JOIN ref.identities d USING (item_id) "
            "WHERE i.item_id > 0 GROUP BY i.item_id, i.statement"
        )
    )


@dataclass
class Scenario:
    """A conditional forecast of one origin: `table` (one row per item and horizon,
    standardized and dollar columns, item names) and `check` (identities in dollars)."""

    firm: str
    origin_q: int
    pins: int
    table: pa.Table
    check: pa.Table


def origin_parameters(wh: Warehouse, origin_q: int, z: float):
    from proforma.models.forma.scenario import OriginParams

    k = dict(wh.fetchall("SELECT item_id, k FROM panel.item_k"))
    par = wh.fetchall("SELECT item_id, mu, sigma FROM panel.origin_params WHERE q = ?", [origin_q])
    return OriginParams(
        z=float(z),
        k={int(a): float(b) for a, b in k.items()},
        mu={int(a): float(b) for a, b, _ in par},
        sigma={int(a): float(c) for a, _, c in par},
    )


def conditional_statement(
    wh: Warehouse,
    models: Sequence[Any],
    firm: str,
    origin_q: int,
    pins: Sequence[tuple[str, list[int] | None, str, float]],
    *,
    family: str = "gaussian",
    device: str = "cpu",
) -> Scenario:
    """Pin future values (item, horizons or None for all, 'usd'|'std', value) and forecast
    the rest of the statement of `firm` at `origin_q`."""
    from proforma.models.forma.scenario import conditional_forecast, identity_check, to_dollars

    gvkey = firm.strip().zfill(6)
    row = wh.fetchone(
        "SELECT o.firm_id, o.split, o.z FROM panel.origins o JOIN panel.firms f USING (firm_id) "
        "WHERE f.gvkey = ? AND o.origin_q = ?",
        [gvkey, origin_q],
    )
    label = f"{origin_q // 4}Q{origin_q % 4 + 1}"
    if row is None:
        raise UserError(f"No origin {label} for firm {firm!r} in the panel")
    firm_id, split, z = row
    items = dict(wh.fetchall("SELECT item, item_id FROM ref.items WHERE item_id > 0"))
    names = {v: k for k, v in items.items()}
    params = origin_parameters(wh, origin_q, z)
    pinned: dict[tuple[int, int], float] = {}
    for item, horizons, unit, value in pins:
        if item not in items:
            raise UserError(f"Unknown item {item!r} in --pin")
        iid = items[item]
        for h in horizons or range(1, 21):
            if unit == "std":
                pinned[(iid, h)] = float(np.clip(value, -6, 6))
            elif iid not in params.k or iid not in params.mu:
                raise UserError(f"No standardization parameters for {item} at {label}")
            else:
                pinned[(iid, h)] = params.to_std(iid, value)
    store = window_store(wh, split, future=False, firm_id=firm_id, origin_q=origin_q)
    i = store.find(firm_id, origin_q)
    if i < 0:
        raise UserError(f"The tuple view holds no window for firm {firm} at {label}")
    ident = wh.arrow(
        "SELECT identity, item_id, sign FROM ref.identities ORDER BY identity, item_id"
    )
    table = to_dollars(
        conditional_forecast(models, store, i, pinned, device=device, family=family),
        params,
        family=family,
    )
    check = identity_check(
        table,
        ident.column("identity").to_pylist(),
        ident.column("item_id").to_pylist(),
        ident.column("sign").to_pylist(),
    )
    table = table.append_column(
        "item", pa.array([names.get(int(v), "?") for v in table.column("item_id").to_numpy()])
    )
    return Scenario(gvkey, origin_q, len(pinned), table, check)


def short_number(v: float) -> str:
    """Four significant digits with a k/M/B/T suffix: dollar cells stay narrow."""
    if not np.isfinite(v):
        return "inf" if v > 0 else "-inf" if v < 0 else "nan"
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= scale * 10:
            return f"{v / scale:.3g}{suffix}"
    return f"{v:.4g}"


def scenario_view(result: Scenario, horizons: Sequence[int], level: int):
    """A rich table: one row per item, the chosen horizons, expected dollars over their
    central interval (a pinned cell shows its pinned value and a *)."""
    from rich.table import Table

    t = result.table
    tag = f"{level:02d}"
    view = Table(
        title=f"{result.firm} {result.origin_q // 4}Q{result.origin_q % 4 + 1}: "
        f"conditional forecast in dollars (expected value over its {level}% "
        f"interval; * pinned)"
    )
    names = t.column("item").to_pylist()
    # the item names never wrap or shrink; the numbers fold onto two lines instead
    view.add_column("item", no_wrap=True, min_width=max(map(len, names), default=4))
    for h in horizons:
        view.add_column(f"h={h}", justify="right", overflow="fold")
    cells = {
        (int(a), int(b)): (float(e), float(lo), float(hi), bool(p))
        for a, b, e, lo, hi, p in zip(
            t.column("item_id").to_numpy(),
            t.column("horizon").to_numpy(),
            t.column("expected_usd").to_numpy(zero_copy_only=False),
            t.column(f"lo_{tag}_usd").to_numpy(zero_copy_only=False),
            t.column(f"hi_{tag}_usd").to_numpy(zero_copy_only=False),
            t.column("pinned").to_numpy(zero_copy_only=False),
        )
    }
    name_of = dict(zip(t.column("item_id").to_pylist(), names))
    for iid in sorted({a for a, _ in cells}):
        row = []
        for h in horizons:
            c = cells.get((iid, h))
            if c is None:
                row.append("")
            elif c[3]:
                row.append(f"{short_number(c[0])}*")
            else:
                row.append(f"{short_number(c[0])}\n[{short_number(c[1])}, {short_number(c[2])}]")
        view.add_row(name_of[iid], *row)
    return view


def oracle_experiment(
    wh: Warehouse,
    models: Sequence[Any],
    *,
    item: str = "revtq",
    origins: int = 768,
    sample_seed: int = 0,
    device: str = "cpu",
    progress: bool = True,
) -> tuple[pa.Table, pa.Table, int]:
    """Pin the realized path of `item` on a seeded sample of test origins and compare the
    other cells with the unconditional forecast: (summary by overall / horizon /
    statement, breakdown by statement x horizon: cells, MAE and R2 both ways and their
    changes; origins used). The cells are kept in the cache folder under a key of
    everything they depend on (_oracle_key), so the same experiment again only
    aggregates."""
    from proforma.models.forma.scenario import oracle_breakdown, oracle_summary

    item_id = wh.scalar("SELECT item_id FROM ref.items WHERE item = ? AND item_id > 0", [item])
    if item_id is None:
        raise UserError(f"Unknown item {item!r}")
    key = _oracle_key(wh, models, int(item_id), origins, sample_seed, device)
    cached = oracle_cache_dir() / f"{key}.npz"
    if cached.is_file():
        with np.load(cached) as saved:
            cells = {k: saved[k] for k in saved.files if k != "n_origins"}
            n_origins = int(saved["n_origins"])
    else:
        cells, n_origins = _oracle_cells(
            wh, models, int(item_id), origins, sample_seed, device, progress
        )
        cached.parent.mkdir(parents=True, exist_ok=True)
        partial = cached.with_suffix(".part.npz")
        arrays: dict[str, Any] = {"n_origins": np.asarray(n_origins), **cells}
        np.savez(partial, **arrays)
        partial.replace(cached)
    if not len(cells["actual"]):
        raise UserError(f"No sampled origin has a realized {item} path")
    classes = statement_classes(wh)
    return oracle_summary(cells, classes), oracle_breakdown(cells, classes), n_origins


def oracle_cache_dir() -> Path:
    """Where oracle experiments are kept (the cache folder): `make demo` runs its
    report's experiment beside Forma's forecasts, and the report finds it there."""
    from proforma.app.store.settings import get_settings

    return get_settings().cache_dir / "oracle_experiment"


def _oracle_cells(
    wh: Warehouse,
    models: Sequence[Any],
    item_id: int,
    origins: int,
    sample_seed: int,
    device: str,
    progress: bool,
) -> tuple[dict[str, np.ndarray], int]:
    from proforma.models.forma.scenario import oracle_cells

    store = window_store(wh, "test", future=True)
    if not len(store):
        raise UserError("No test origins in the panel")
    if origins and origins < len(store):
        pick = np.sort(
            np.random.default_rng(sample_seed).choice(len(store), origins, replace=False)
        )
        store = store.take(pick)
    return oracle_cells(models, store, item_id, device=device, progress=progress), len(store)


def _oracle_key(
    wh: Warehouse,
    models: Sequence[Any],
    item_id: int,
    origins: int,
    sample_seed: int,
    device: str,
) -> str:
    """What an oracle experiment's cells depend on: the networks' weights and settings,
    the panel (this warehouse's latest build), the pinned item, the origin sample and
    the device with its batch size (float32 rounding)."""
    import hashlib
    import json

    from proforma.app.scoring.provenance import current_build
    from proforma.models.forma.predict import default_batch_size

    digest = hashlib.sha256()
    for model in models:
        for name, tensor in sorted(model.state_dict().items()):
            digest.update(name.encode())
            digest.update(tensor.detach().cpu().numpy().tobytes())
        # the model's own settings (lookback, anchor, precision...); not its train/eval mode
        flags = {
            k: v
            for k, v in vars(model).items()
            if isinstance(v, (bool, int, float, str)) and k != "training"
        }
        digest.update(json.dumps(flags, sort_keys=True).encode())
    build = current_build(wh) or {}
    digest.update(
        json.dumps(
            {
                "warehouse": str(wh.path),
                "build": [build.get("build_id"), str(build.get("finished_at"))],
                "item_id": item_id,
                "origins": origins,
                "sample_seed": sample_seed,
                "device": device,
                "batch_size": default_batch_size(device),
            },
            sort_keys=True,
        ).encode()
    )
    return digest.hexdigest()[:24]
