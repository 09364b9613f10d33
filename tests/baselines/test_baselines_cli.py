"""End to end on a tiny synthetic panel: impute, fit, ingest, score; and the error paths."""

from __future__ import annotations

import numpy as np
import pytest
from tiny_synthetic import build_tiny_synthetic
from typer.testing import CliRunner

from proforma.app.cli import app as cli_app
from proforma.app.flows.baselines import parse_which, run_baselines
from proforma.app.model_inputs.imputed import build_imputed, current_imputation
from proforma.app.model_inputs.views import feature_matrices, tabular_reader
from proforma.contracts.errors import UserError
from proforma.models.baselines.data import from_batches


def test_parse_which_rejects_unknown_models() -> None:
    assert parse_which("rf, enet,rf") == ["rf", "enet"]
    with pytest.raises(UserError, match="Unknown model"):
        parse_which("enet,xgboost")
    with pytest.raises(UserError):
        parse_which(" , ")


def test_cli_errors_are_one_line(settings) -> None:
    runner = CliRunner()
    res = runner.invoke(cli_app, ["run", "baselines", "--which", "lasso"])
    assert res.exit_code != 0 and "Unknown model" in str(res.exception or res.output)
    res = runner.invoke(cli_app, ["run", "baselines", "--which", "enet", "--preset", "huge"])
    assert res.exit_code != 0 and "Unknown preset" in str(res.exception or res.output)


def test_threads_option_reaches_pytorch_for_the_ffnns(settings, monkeypatch) -> None:
    import torch

    import proforma.app.cli.baselines as cli_baselines

    calls: list[int] = []
    monkeypatch.setattr(torch, "set_num_threads", calls.append)
    monkeypatch.setattr(cli_baselines, "run_baselines", lambda *a, **k: [])
    runner = CliRunner()
    res = runner.invoke(
        cli_app, ["run", "baselines", "--which", "enet", "--threads", "1", "--no-score"]
    )
    assert res.exit_code == 0, res.output
    assert calls == []  # no PyTorch model asked for
    res = runner.invoke(
        cli_app, ["run", "baselines", "--which", "ffnn-large", "--threads", "1", "--no-score"]
    )
    assert res.exit_code == 0, res.output
    assert calls == [1]


def test_impute_needs_a_built_panel(wh) -> None:
    with pytest.raises(UserError, match="build"):
        build_imputed(wh)
    assert not wh.table_exists("panel.tabular_imputed")


def test_end_to_end_on_tiny_synthetic_panel(wh, settings) -> None:
    build_tiny_synthetic(wh, firms=60, start=1996, end=2013, seed=3)

    # The imputed view: same rows and columns, observed cells and targets unchanged.
    info = build_imputed(wh)
    assert current_imputation(wh) == info["imputation_id"]
    raw = from_batches(tabular_reader(wh, "val", 4096))
    imp = from_batches(tabular_reader(wh, "val", 4096, imputed=True))
    assert raw.n == imp.n > 0 and np.array_equal(raw.firm_id, imp.firm_id)
    obs = np.isfinite(raw.X)
    assert (~obs).any() and np.array_equal(raw.X[obs], imp.X[obs])
    assert np.array_equal(raw.Y, imp.Y, equal_nan=True)
    # The imputation reads the same features as dense matrices (small chunks: several).
    for imputed, data in ((False, raw), (True, imp)):
        blocks = list(feature_matrices(wh, "val", chunk_origins=64, imputed=imputed))
        assert len(blocks) > 1
        assert np.array_equal(np.vstack([f for _, f in blocks]), data.X, equal_nan=True)
    # Quarters with at least 11 firms have no gap left in the imputed columns (the industry
    # dummies are never missing); smaller quarters keep theirs (the local-XS rule).
    quarters, sizes = np.unique(raw.origin_q, return_counts=True)
    big = np.isin(raw.origin_q, quarters[sizes >= 11])
    assert big.any()
    assert np.isfinite(imp.X[big]).all()
    assert np.array_equal(np.isfinite(imp.X[~big]), obs[~big])

    results = run_baselines(
        wh,
        ["enet", "gbm-l2", "ffnn-linear"],
        "demo",
        engine="serial",
        items=("niq", "revtq", "cogsq"),
        horizons=(1, 4),
    )
    assert [r["model"] for r in results] == ["enet", "gbm-l2", "ffnn-linear"]
    subs = dict(
        wh.fetchall("SELECT name, n_components FROM eval.submissions WHERE source = 'model'")
    )
    assert subs == {"enet (demo)": 1, "gbm-l2 (demo)": 1, "ffnn-linear (demo)": 2}
    # The imputation is reused (not recomputed per model) and every run is recorded.
    assert wh.scalar("SELECT count(*) FROM meta.imputations") == 1
    assert wh.scalar("SELECT count(DISTINCT model) FROM meta.baseline_runs") == 3
    runs = results[0]["score_runs"]
    assert set(runs) == {"full", "geert"}
    in_full = wh.scalar(
        "SELECT submission_ids FROM eval.score_runs WHERE score_run_id = ?", [runs["full"]]
    )
    gbm_id = results[1]["submission_id"]
    assert gbm_id not in in_full and results[0]["submission_id"] in in_full
    # enet forecasts exactly the requested items and horizons, on realized cells only.
    cells = wh.fetchall(
        "SELECT DISTINCT i.item, f.horizon FROM eval.forecasts f JOIN ref.items i USING (item_id) "
        "WHERE submission_id = ? ORDER BY 1, 2",
        [results[0]["submission_id"]],
    )
    assert cells == [(it, h) for it in ("cogsq", "niq", "revtq") for h in (1, 4)]

    # A rerun resumes: every fit is found on disk, the submissions are replaced.
    again = run_baselines(
        wh,
        ["enet"],
        "demo",
        engine="serial",
        items=("niq", "revtq", "cogsq"),
        horizons=(1, 4),
        score=False,
    )
    assert again[0]["cells"] == results[0]["cells"]
