"""`proforma run llm`: the LLM panel's flow, below the CLI so the service can call it.

Reads the `llm` footprint's origins (sql/llm/010) and their reported histories
(proforma.app.model_inputs.views.raw_windows), has proforma.models.llm forecast them, writes one submission per
(model, arm, draw) through `ingest_forecasts(..., space="dollars")` (the warehouse
standardizes them exactly like the truth), records every call in llm.calls, summarizes
the decoding noise of repeated draws (sql/llm/020) into llm.noise, and scores the main
draw on the `llm` footprint with every other current submission.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from proforma.app.scoring.footprints.llm import LLM_FOOTPRINT, LLM_SEED
from proforma.app.scoring.footprints.store import Footprint, footprint_definition
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.errors import UserError
from proforma.contracts.provenance import utcnow
from proforma.models.llm.cache import ResponseCache
from proforma.models.llm.calls import Provider
from proforma.models.llm.prices import PriceTable, load_prices
from proforma.models.llm.prompts import ARMS, OriginHistory, system_prompt
from proforma.models.llm.runner import CallRecord, LlmForecaster, OriginForecast, forecast_table

#: The paper's decoding-noise subset: 200 origins of the main sample.
NOISE_ORIGINS = 200


@dataclass
class DrawSummary:
    draw: int
    name: str
    submission_id: int
    origins: int
    forecast_origins: int
    rows: int
    calls: int
    cached: int
    incomplete: int
    failed: int
    cost_usd: float | None
    new_cost_usd: float | None
    input_tokens: int
    output_tokens: int


@dataclass
class LlmRunSummary:
    provider: str
    model: str
    arm: str
    draws: list[DrawSummary] = field(default_factory=list)
    noise: list[dict[str, Any]] = field(default_factory=list)
    score_run_id: int | None = None
    prices_as_of: str | None = None

    def cost(self, new_only: bool = False) -> float | None:
        return _total([d.new_cost_usd if new_only else d.cost_usd for d in self.draws])


def _total(costs: Sequence[float | None]) -> float | None:
    """The sum of costs, or None when any is unknown (a model without a price)."""
    known = [c for c in costs if c is not None]
    return sum(known) if len(known) == len(costs) else None


def submission_name(model: str, arm: str, draw: int = 1) -> str:
    """llm-<model>-<arm> for the main run, with -draw<k> for repeated draws."""
    return f"llm-{model}-{arm}" + (f"-draw{draw}" if draw > 1 else "")


def run_origins(
    wh: Warehouse, *, limit: int | None = None, noise_origins: int = NOISE_ORIGINS
) -> tuple[pa.Table, Footprint]:
    """(origins of the run in sampler order, the footprint record); makes `llm` if missing."""
    from proforma.app.scoring import ensure_standard_footprints, get_footprint

    wh.require_panel("panel.truth")
    ensure_standard_footprints(wh)
    fp = get_footprint(wh, LLM_FOOTPRINT)
    definition = footprint_definition(fp)
    origins = wh.query_step(
        "llm/010_run_origins",
        {
            "footprint_id": fp["footprint_id"],
            "seed": int(definition.get("seed", LLM_SEED)),
            "max_origins": limit,
            "noise_origins": noise_origins,
        },
    )
    if origins.num_rows == 0:
        raise UserError(
            f"The {LLM_FOOTPRINT} footprint has no origins in this panel "
            "(no test origin with four quarters of history and a future quarter)"
        )
    return origins, fp


def origin_histories(wh: Warehouse, origins: pa.Table) -> list[OriginHistory]:
    """Each origin's reported 12-quarter history (proforma.app.model_inputs.views.raw_windows), in `origins` order."""
    from proforma.app.model_inputs.views import raw_windows

    names = dict(wh.fetchall("SELECT item_id, item FROM ref.items"))
    industry = {
        (r["firm_id"], r["origin_q"]): r["industry"]
        for r in origins.select(["firm_id", "origin_q", "industry"]).to_pylist()
    }
    found: dict[tuple[int, int], OriginHistory] = {}
    for batch in raw_windows(wh, "test", origins=origins.select(["firm_id", "origin_q"])):
        for row in batch.to_pylist():
            values: dict[str, dict[int, float]] = {}
            for rel, item_id, v in zip(row["rel_q"], row["item_id"], row["v"], strict=True):
                values.setdefault(names[item_id], {})[rel] = v
            key = (row["firm_id"], row["origin_q"])
            found[key] = OriginHistory(key[0], key[1], industry[key], values)
    return [found[k] for k in industry if k in found]


def _ingest(
    wh: Warehouse,
    name: str,
    results: list[OriginForecast],
    item_ids: dict[str, int],
    metadata: dict[str, Any],
) -> tuple[int, int]:
    from proforma.app import scoring

    table = forecast_table(results, item_ids)
    if table.num_rows == 0:
        failed = [c.reason for r in results for c in r.calls if c.reason]
        raise UserError(
            f"No usable forecast for {name}: {len(failed)} call(s) failed or were "
            f"unusable{': ' + failed[0] if failed else ''}"
        )
    sid = scoring.ingest_forecasts(
        wh, name, table, family="gaussian", source="model", metadata=metadata, space="dollars"
    )
    return sid, table.num_rows


def _write_calls(
    wh: Warehouse,
    provider: Provider,
    arm: str,
    sid: int,
    records: list[CallRecord],
    gvkeys: dict[tuple[int, int], str],
) -> None:
    settings = json.dumps(provider.settings(), sort_keys=True)
    rows = [
        {
            **asdict(c),
            "submission_id": sid,
            "provider": provider.name,
            "model": provider.model,
            "arm": arm,
            "settings": settings,
            "gvkey": gvkeys[(c.firm_id, c.origin_q)],
            "called_at": dt.datetime.fromisoformat(c.called_at),
        }
        for c in records
    ]
    if rows:
        wh.write_arrow("llm.calls", pa.Table.from_pylist(rows))


def _draw_summary(
    draw: int, name: str, sid: int, rows: int, results: list[OriginForecast]
) -> DrawSummary:
    calls = [c for r in results for c in r.calls]
    costs = [c.cost_usd for c in calls if c.status != "error"]
    new_costs = [c.cost_usd for c in calls if c.status != "error" and not c.cached]
    return DrawSummary(
        draw,
        name,
        sid,
        origins=len(results),
        forecast_origins=sum(r.statements is not None for r in results),
        rows=rows,
        calls=len(calls),
        cached=sum(c.cached for c in calls),
        incomplete=sum(c.status == "incomplete" and c.used for c in calls),
        failed=sum(r.statements is None for r in results),
        cost_usd=_total(costs),
        new_cost_usd=_total(new_costs),
        input_tokens=sum(c.input_tokens or 0 for c in calls),
        output_tokens=sum(c.output_tokens or 0 for c in calls),
    )


def run_llm(
    wh: Warehouse,
    provider: Provider,
    arm: str,
    *,
    draws: int = 1,
    limit: int | None = None,
    noise_origins: int = NOISE_ORIGINS,
    concurrency: int = 4,
    score: bool = True,
    cache_dir: Path | None = None,
    prices: PriceTable | None = None,
    progress: Callable[[str, int], Callable[[OriginForecast], None]] | None = None,
) -> LlmRunSummary:
    """Forecast the `llm` footprint's origins (the first `limit`), write and score them.

    draws > 1 adds draws 2..K on the decoding-noise subset (`noise_origins` of the run's
    origins; draw 1 is the main run there) and their cross-draw summary. `progress(label,
    total)` returns a per-origin callback (e.g. a progress bar's advance).
    """
    from proforma.app.store.settings import get_settings

    if arm not in ARMS:
        raise UserError(f"Unknown prompt arm {arm!r}: use one of {', '.join(ARMS)}")
    if draws < 1 or (limit is not None and limit < 1) or noise_origins < 1 or concurrency < 1:
        raise UserError("--samples, --limit, --noise-origins and --concurrency must be positive")
    origins, fp = run_origins(wh, limit=limit, noise_origins=noise_origins)
    histories = origin_histories(wh, origins)
    in_noise = {(r["firm_id"], r["origin_q"]) for r in origins.to_pylist() if r["in_noise_subset"]}
    gvkeys = {(r["firm_id"], r["origin_q"]): r["gvkey"] for r in origins.to_pylist()}
    item_ids = {i: int(n) for n, i in wh.fetchall("SELECT item_id, item FROM ref.items")}
    cache = ResponseCache((cache_dir or get_settings().cache_dir) / "llm")
    prices = prices or load_prices(get_settings().llm_prices)
    forecaster = LlmForecaster(provider, arm, cache, prices)
    summary = LlmRunSummary(
        provider.name,
        provider.model,
        arm,
        prices_as_of=forecaster.price.as_of if forecaster.price else None,
    )
    base = {
        "model": "llm",
        "provider": provider.name,
        "llm_model": provider.model,
        "arm": arm,
        "settings": provider.settings(),
        "footprint": LLM_FOOTPRINT,
        "footprint_id": fp["footprint_id"],
        "footprint_version": fp["version"],
        "system_prompt_chars": len(system_prompt(arm)),
        "prices_as_of": summary.prices_as_of,
    }
    for draw in range(1, draws + 1):
        chosen = (
            histories
            if draw == 1
            else [h for h in histories if (h.firm_id, h.origin_q) in in_noise]
        )
        label = f"{provider.model} {arm}" + (f" draw {draw}" if draw > 1 else "")
        tick = progress(label, len(chosen)) if progress else None
        results = forecaster.forecast_many(chosen, draw, concurrency=concurrency, on_done=tick)
        name = submission_name(provider.model, arm, draw)
        meta = {**base, "llm_draw": draw, "origins": len(chosen)}
        sid, rows = _ingest(wh, name, results, item_ids, meta)
        with wh.transaction():
            _write_calls(wh, provider, arm, sid, [c for r in results for c in r.calls], gvkeys)
        summary.draws.append(_draw_summary(draw, name, sid, rows, results))
    if draws > 1:
        summary.noise = noise_summary(wh, provider, arm, [d.submission_id for d in summary.draws])
    if score:
        summary.score_run_id = score_llm_footprint(wh)
    return summary


def noise_summary(
    wh: Warehouse, provider: Provider, arm: str, submission_ids: list[int]
) -> list[dict[str, Any]]:
    """Cross-draw sd of the standardized forecasts by horizon (stored in llm.noise)."""
    rows = wh.query_step("llm/020_noise_summary", {"submission_ids": submission_ids}).to_pylist()
    created = utcnow()
    with wh.transaction():
        for r in rows:
            wh.execute(
                "INSERT INTO llm.noise VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    provider.name,
                    provider.model,
                    arm,
                    len(submission_ids),
                    submission_ids,
                    r["horizon"],
                    r["n_origins"],
                    r["n_cells"],
                    r["mean_sd"],
                    created,
                ],
            )
    return rows


def score_llm_footprint(wh: Warehouse) -> int:
    """Score every current submission on `llm` except repeated LLM draws (they would
    restrict the common sample to the noise subset) and the competitors whose spec leaves
    `llm` out (the chained GBMs: 25 items only, as on the full footprint)."""
    from proforma.app.flows.baselines import joins
    from proforma.app.scoring import run_reference_baselines, score
    from proforma.app.scoring.submissions.current import active_submissions

    run_reference_baselines(wh)
    repeated = dict(
        wh.fetchall(
            "SELECT submission_id, coalesce(TRY_CAST(json_extract_string(metadata, '$.llm_draw') "
            "AS INTEGER), 1) > 1 FROM eval.submissions"
        )
    )
    ids = [i for i in active_submissions(wh) if not repeated.get(i)]
    return score(wh, LLM_FOOTPRINT, joins(wh, LLM_FOOTPRINT, ids), baselines=False, board=True)
