"""Tiny grown synthetic panels for the rounds tests: ingest a panel through a quarter of
the same design window (same seed, same firms) and build it."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import numpy as np

from proforma.app.flows.build import BuildParams, run_build
from proforma.app.rounds import open_round
from proforma.app.rounds.entries import enter_entries
from proforma.app.sources import ingest
from proforma.app.sources.synthetic import SyntheticConfig, SyntheticSource
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.quarters import parse_quarter
from proforma.contracts.rules import RuleSet
from proforma.models.baselines import suite
from proforma.models.baselines.base import Forecast

#: 40 firms from 1996 (a training window for k), design window ending 2010
PANEL: dict[str, Any] = {
    "firms": 40,
    "start": 1996,
    "end": 2010,
    "seed": 7,
    "oracle_origins": 6,
    "oracle_paths": 4,
}


def config(through: str, **overrides: Any) -> SyntheticConfig:
    values = {**PANEL, **overrides}
    return SyntheticConfig.for_scale("demo", through=parse_quarter(through), **values)


def grow(wh: Warehouse, through: str, rules: str = "published", **overrides: Any) -> None:
    """Ingest the panel through `through` and build it."""
    ingest(wh, SyntheticSource(config(through, **overrides)))
    run_build(wh, params=BuildParams(rules=RuleSet.parse(rules)))


def open_tiny_round(
    wh: Warehouse, root: Path, rules: str = "published", now: dt.datetime | None = None
) -> dict[str, Any]:
    """The panel through 2010Q4, built, a round open at 2010Q4 with its entries."""
    grow(wh, "2010Q4", rules)
    rnd = open_round(wh, root, days=1, now=now)
    enter_entries(wh, rnd["name"])
    return rnd


SEEN: list[dict[str, Any]] = []


def probe_fit(r: suite.FitRequest) -> Forecast:
    """Records the data it is given; forecasts each (item, horizon) by its train + val
    mean plus the row's firm id / 1000, with the spread as sigma."""
    SEEN.append({"train": r.train, "val": r.val, "test": r.test})
    Y = np.concatenate([r.train.Y, r.val.Y])
    with np.errstate(all="ignore"):
        mu = np.nan_to_num(np.nanmean(Y, axis=0))
        sigma = np.nan_to_num(np.nanstd(Y, axis=0), nan=1.0) + 0.1
    # each row's own offset (its firm id / 1000), so that rows cannot be mixed up
    offset = (r.test.firm_id / 1000.0)[:, None, None]
    cube = (np.broadcast_to(mu, (r.test.n, *mu.shape)) + offset).astype(np.float32)
    spread = np.broadcast_to(sigma, cube.shape).astype(np.float32)
    return Forecast(r.test, [(cube, spread)], {"run": ""})


def static_by_board(
    wh: Warehouse, board: dict[str, Any], ids: dict[str, int], tracks: tuple[str, ...]
) -> dict[str, dict[str, dict[str, Any]]]:
    """The static scorer's numbers for a round's board, sample by sample as the board
    takes them: one score run over the entries on its common sample (footprint
    round_cells, their static copies `ids`), one per entry ranked on its own cells.
    Returns {track: {model: leaderboard row}}."""
    from proforma.app import scoring

    common = [m["name"] for m in board["models"] if m["common_sample"]]
    groups = ([common] if common else []) + [
        [m["name"]] for m in board["models"] if not m["common_sample"]
    ]
    out: dict[str, dict[str, dict[str, Any]]] = {t: {} for t in tracks}
    for group in groups:
        run = scoring.score(
            wh,
            "round_cells",
            submissions=[ids[n] for n in group],
            coherence=False,
            baselines=False,
        )
        for track in tracks:
            out[track].update(
                {
                    r["model"].removeprefix("static_"): r
                    for r in scoring.leaderboard(
                        wh, "round_cells", track=track, score_run_id=run
                    ).to_pylist()
                }
            )
    return out
