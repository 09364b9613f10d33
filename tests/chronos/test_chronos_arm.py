"""The Chronos-2 arm on a tiny built panel with a tiny random-weight Chronos-2 of the real
class: contexts against the panel, forecast shapes, the spooled quantile batches (grid,
order before and after the origin-frozen transform, exactly the truth's cells), resume
after an interruption, origin samples, and the written submission."""

from __future__ import annotations

import numpy as np
import pyarrow.compute as pc
import pytest

from proforma.app import scoring
from proforma.app.flows.chronos import ChronosOptions, origin_plan, run_chronos
from proforma.app.model_inputs.views import raw_windows
from proforma.app.store.settings import get_settings
from proforma.contracts.errors import UserError
from proforma.models.chronos import CELL_SCHEMA, HORIZONS, QUANTILE_LEVELS, QUANTILE_SCHEMA
from proforma.models.chronos import forecast as chronos_forecast
from proforma.models.chronos.context import contexts_from_batch
from proforma.models.chronos.loading import load_pipeline

N_Q = len(QUANTILE_LEVELS)


@pytest.fixture
def captured(monkeypatch) -> list[dict]:
    """What run_chronos hands to the common forecast path (read in full), per call."""
    calls: list[dict] = []

    def ingest(wh, name, batches, **kwargs):
        calls.append({"name": name, "table": batches.read_all(), **kwargs})
        return 1000 + len(calls)

    monkeypatch.setattr(scoring, "ingest_forecasts", ingest)
    return calls


def _counting(monkeypatch, fail_on: int | None = None) -> list[int]:
    """Count forecast_origins calls (one per chunk); raise on call `fail_on`."""
    calls: list[int] = []
    real = chronos_forecast.forecast_origins

    def wrapper(pipeline, contexts, **kwargs):
        calls.append(len(contexts))
        if fail_on is not None and len(calls) == fail_on:
            raise RuntimeError("simulated crash")
        return real(pipeline, contexts, **kwargs)

    monkeypatch.setattr(chronos_forecast, "forecast_origins", wrapper)
    return calls


def _submissions(wh) -> int:
    return wh.scalar("SELECT count(*) FROM eval.submissions")


def test_contexts_hold_the_reported_values_and_the_truths_items(panel_wh) -> None:
    windows = raw_windows(panel_wh, "test", 16).read_all()
    values = {
        (f, q, i): v
        for f, q, i, v in panel_wh.fetchall(
            "SELECT firm_id, q, item_id, v FROM panel.values WHERE item_id > 0"
        )
    }
    truth_items: dict[tuple[int, int], set[int]] = {}
    for f, q, i in panel_wh.fetchall(
        "SELECT DISTINCT firm_id, origin_q, item_id FROM panel.truth_cells"
    ):
        truth_items.setdefault((f, q), set()).add(i)
    contexts = contexts_from_batch(windows.to_batches()[0])
    assert contexts
    for ctx in contexts:
        n_items, n_q = ctx.values.shape
        assert n_q <= 12 and n_items == len(set(ctx.item_ids.tolist()))
        for row, item in enumerate(ctx.item_ids):
            for col in range(n_q):
                got = values.get((ctx.firm_id, ctx.origin_q + ctx.first_rel_q + col, int(item)))
                assert (
                    np.isnan(ctx.values[row, col]) if got is None else ctx.values[row, col] == got
                )
        targets = set(ctx.item_ids[: ctx.n_targets].tolist())
        assert all(np.isfinite(ctx.values[: ctx.n_targets, -1]))
        assert truth_items.get((ctx.firm_id, ctx.origin_q), set()) <= targets


def test_tiny_model_forecasts_every_target_cell_in_order(panel_wh, tiny_model) -> None:
    pipeline = load_pipeline(str(tiny_model))
    contexts = contexts_from_batch(next(iter(raw_windows(panel_wh, "test", 5))))
    cells, stats = chronos_forecast.forecast_origins(pipeline, contexts, batch_size=64)
    assert cells.schema == CELL_SCHEMA
    assert stats.origins == 5 and stats.cells == sum(c.n_targets for c in contexts) * HORIZONS
    table = chronos_forecast.long_form(cells)
    assert table.schema == QUANTILE_SCHEMA and table.num_rows == stats.cells * N_Q
    mu = table.column("mu").to_numpy().reshape(-1, N_Q)
    assert np.isfinite(mu).all() and (np.diff(mu, axis=1) >= 0).all()
    first = contexts[0]
    mine = table.filter(pc.equal(table.column("firm_id"), first.firm_id))
    assert set(mine.column("item_id").to_pylist()) == set(
        first.item_ids[: first.n_targets].tolist()
    )


def test_run_spools_the_truths_cells_and_resumes_after_a_crash(
    panel_wh, tiny_model, captured, monkeypatch, settings
) -> None:
    options = ChronosOptions(model=str(tiny_model), chunk_origins=8, batch_size=128, score=False)
    n_origins = origin_plan(panel_wh, None)[0].num_rows
    n_chunks = -(-n_origins // 8)
    assert n_chunks >= 4

    calls = _counting(monkeypatch, fail_on=3)
    with pytest.raises(RuntimeError, match="simulated crash"):
        run_chronos(panel_wh, options, show_progress=False)
    folder = next((settings.cache_dir / "chronos").iterdir())
    assert len(list(folder.glob("chunk-*.arrow"))) == 2
    assert captured == [] and _submissions(panel_wh) == 0

    calls = _counting(monkeypatch)
    result = run_chronos(panel_wh, options, show_progress=False)
    assert len(calls) == n_chunks - 2 and result["cached_chunks"] == 2
    assert result["computed_origins"] == n_origins - 16 and result["submission_id"] == 1001
    [call] = captured
    assert call["family"] == "quantile" and call["space"] == "dollars" and call["source"] == "model"
    assert call["name"] == "chronos-2" and call["metadata"]["quantile_levels"] == list(
        QUANTILE_LEVELS
    )
    table = call["table"]
    assert table.schema == QUANTILE_SCHEMA

    # Every cell: the 21 levels in order, finite values, non-decreasing.
    levels = table.column("quantile_level").to_numpy().reshape(-1, N_Q)
    mu = table.column("mu").to_numpy().reshape(-1, N_Q)
    assert (levels == np.asarray(QUANTILE_LEVELS)).all()
    assert np.isfinite(mu).all() and (np.diff(mu, axis=1) >= 0).all()
    keys = table.select(["firm_id", "origin_q", "item_id", "horizon"]).to_pylist()[::N_Q]
    assert len({tuple(k.values()) for k in keys}) == len(keys) == result["cells_written"]
    assert result["rows"] == table.num_rows

    # Exactly the test split's truth cells: items reported at the origin, realized.
    truth = {
        tuple(r)
        for r in panel_wh.fetchall(
            "SELECT firm_id, origin_q, item_id, horizon FROM panel.truth WHERE split = 'test'"
        )
    }
    assert {tuple(k.values()) for k in keys} == truth

    # Mapped into benchmark space with the origin-frozen transform: still ordered, in +-6.
    panel_wh.con.register("chronos_rows", table)
    x = panel_wh.arrow(
        """SELECT panel.pf_standardize(f.mu, k.k, o.z, p.mu, p.sigma) AS x
           FROM chronos_rows AS f
           JOIN panel.origins AS o USING (firm_id, origin_q)
           JOIN panel.item_k AS k USING (item_id)
           JOIN panel.origin_params AS p ON p.item_id = f.item_id AND p.q = f.origin_q
           ORDER BY f.origin_q, f.firm_id, f.item_id, f.horizon, f.quantile_level"""
    )
    x = x.column("x").to_numpy().reshape(-1, N_Q)
    assert x.shape == mu.shape and np.isfinite(x).all() and (np.abs(x) <= 6).all()
    assert (np.diff(x, axis=1) >= 0).all()

    # The resumed run equals a run that was never interrupted.
    monkeypatch.setenv("PROFORMA_CACHE_DIR", str(settings.cache_dir.parent / "fresh-cache"))
    get_settings.cache_clear()
    run_chronos(panel_wh, options, show_progress=False)
    assert captured[1]["table"].equals(table)


def test_an_origin_sample_footprint_restricts_the_origins(
    panel_wh, tiny_model, captured, settings
) -> None:
    scoring.create_footprint(panel_wh, "tenor", n_origins=10)
    options = ChronosOptions(model=str(tiny_model), footprint="tenor", score=False)
    result = run_chronos(panel_wh, options, show_progress=False)
    sample = {
        tuple(r)
        for r in panel_wh.fetchall(
            "SELECT f.firm_id, s.origin_q FROM eval.footprint_origins AS s "
            "JOIN panel.firms AS f USING (gvkey) JOIN eval.footprints AS p USING (footprint_id) "
            "WHERE p.name = 'tenor'"
        )
    }
    assert result["origins"] == len(sample) == 10
    table = captured[0]["table"]
    origins = {
        (r["firm_id"], r["origin_q"]) for r in table.select(["firm_id", "origin_q"]).to_pylist()
    }
    assert origins and origins <= sample
    assert captured[0]["name"] == "chronos-2 (tenor)"


def test_a_footprint_that_is_no_origin_sample_is_refused_and_nothing_written(
    panel_wh, tiny_model, captured, settings
) -> None:
    with pytest.raises(UserError, match="not a test-split origin sample"):
        run_chronos(
            panel_wh, ChronosOptions(model=str(tiny_model), footprint="geert"), show_progress=False
        )
    with pytest.raises(UserError, match="No footprint 'nosuch'"):
        run_chronos(
            panel_wh, ChronosOptions(model=str(tiny_model), footprint="nosuch"), show_progress=False
        )
    assert captured == [] and _submissions(panel_wh) == 0
    assert not (settings.cache_dir / "chronos").exists()


def test_no_test_origins_or_no_realized_cell_writes_nothing(panel_wh, tiny_model, captured) -> None:
    options = ChronosOptions(model=str(tiny_model), score=False)
    panel_wh.execute("DELETE FROM panel.truth_cells")
    with pytest.raises(UserError, match="No Chronos-2 forecast falls on a realized truth cell"):
        run_chronos(panel_wh, options, show_progress=False)
    panel_wh.execute("DELETE FROM panel.origins WHERE split = 'test'")
    with pytest.raises(UserError, match="No origins to forecast in the test split"):
        run_chronos(panel_wh, options, show_progress=False)
    assert captured == [] and _submissions(panel_wh) == 0
