"""The competitor suite's registry (models/baselines/suite.py): a toy model added through
exactly the path of docs/models.md, "Adding a model", is offered by the command line,
fit by the flow on the view it names, ingested under its family and joins only its
footprints."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from tiny_synthetic import build_tiny_synthetic
from typer.testing import CliRunner

from proforma.app.cli import app as cli_app
from proforma.app.flows.baselines import joins, parse_which
from proforma.contracts.errors import UserError
from proforma.models.baselines import suite
from proforma.models.baselines.base import Forecast


# -- the worked example of docs/models.md ---------------------------------------------------
def fit_train_mean(r: suite.FitRequest) -> Forecast:
    """Every test row gets each (item, horizon)'s mean and spread over train + val."""
    Y = np.concatenate([r.train.Y, r.val.Y])
    with np.errstate(all="ignore"):
        mu = np.nanmean(Y, axis=0) * r.config["shrink"]
        sigma = np.nanstd(Y, axis=0)
    cube = np.broadcast_to(mu, (r.test.n, *mu.shape)).astype(np.float32)
    spread = np.broadcast_to(sigma, cube.shape).astype(np.float32)
    return Forecast(r.test, [(cube, spread)], {"run": ""})


TRAIN_MEAN = suite.ModelSpec(
    name="train-mean",
    fit=fit_train_mean,
    presets={"paper": {"shrink": 1.0}, "demo": {"shrink": 0.5}},
    family="gaussian",
    footprints=("geert",),
    data="tabular",
)
# -------------------------------------------------------------------------------------------


@pytest.fixture
def toy() -> Iterator[suite.ModelSpec]:
    suite.register(TRAIN_MEAN)
    yield TRAIN_MEAN
    suite.unregister(TRAIN_MEAN.name)


def test_the_suite_names_each_competitor_once() -> None:
    assert suite.names() == ("enet", "rf", "ffnn-linear", "ffnn-large", "gbm-l1", "gbm-l2")
    assert suite.demo_names() == ("enet", "ffnn-linear", "ffnn-large")
    assert suite.get("gbm-l1").family == "laplace" and suite.get("gbm-l2").family == "gaussian"
    assert suite.model_of("gbm-l1 (demo)") is suite.get("gbm-l1")
    assert suite.model_of("Fade / AR(1)") is None
    # one key per competitor: a preset is {model: configuration}
    assert set(suite.preset("demo")) == set(suite.names())
    assert suite.preset("paper")["ffnn-large"] is suite.preset("paper")["ffnn-linear"]
    with pytest.raises(UserError, match="Unknown preset"):
        suite.preset("huge")
    with pytest.raises(UserError, match="Unknown model"):
        suite.get("xgboost")


def test_register_rejects_an_incomplete_spec(toy: suite.ModelSpec) -> None:
    with pytest.raises(ValueError, match="already"):
        suite.register(toy)
    bads: list[dict[str, Any]] = [
        {"presets": {"paper": {}}},
        {"data": "raw"},
        {"footprints": ("everything",)},
        {"footprints": ()},
    ]
    for bad in bads:
        with pytest.raises(ValueError):
            suite.register(suite.ModelSpec(**{**toy.__dict__, "name": "other", **bad}))
    assert "other" not in suite.SUITE


def test_a_toy_model_enters_through_its_spec(toy: suite.ModelSpec, wh, settings) -> None:
    assert parse_which("train-mean,enet") == ["train-mean", "enet"]
    build_tiny_synthetic(wh, firms=40, start=2000, end=2013, seed=5)
    wh.close()
    res = CliRunner().invoke(
        cli_app, ["run", "baselines", "--which", "train-mean", "--preset", "demo", "--no-score"]
    )
    assert res.exit_code == 0, res.output
    from proforma.app.store.warehouse import connect

    with connect(settings) as w:
        row = w.fetchone(
            "SELECT submission_id, name, family, metadata FROM eval.submissions "
            "WHERE source = 'model'"
        )
        assert row is not None
        sid, name, family, metadata = row
        assert (name, family) == ("train-mean (demo)", "gaussian")
        # it read the plain tabular view: no imputation was made for it
        assert w.scalar("SELECT count(*) FROM meta.imputations") == 0
        assert w.scalar("SELECT config FROM meta.baseline_runs") == '{"shrink": 0.5}'
        assert '"shrink": 0.5' in metadata
        # its spec's footprints decide which suite runs it joins
        assert joins(w, "geert", [sid]) == [sid]
        assert joins(w, "full", [sid]) == []
    suite.unregister("train-mean")
    res = CliRunner().invoke(cli_app, ["run", "baselines", "--which", "train-mean"])
    assert res.exit_code != 0 and "Unknown model" in str(res.exception or res.output)


def test_a_view_the_competitors_share_is_read_once(monkeypatch) -> None:
    """Every competitor reads the imputed tabular view: a run of three reads it once (it
    read it once per competitor, 11 s each at demo scale)."""
    from proforma.app.flows import baselines as flow
    from proforma.models.baselines import suite

    reads: list[str] = []

    def read(wh: Any, data: str) -> dict[str, Any]:
        reads.append(data)
        return {"x": data}

    monkeypatch.setattr(flow, "load_splits", read)
    specs = [suite.get(m) for m in ("enet", "ffnn-linear", "ffnn-large")]
    assert {s.data for s in specs} == {"tabular_imputed"}
    views: dict[str, Any] = flow.load_views(Any, specs)  # type: ignore[arg-type]
    assert reads == ["tabular_imputed"] and views == {"tabular_imputed": {"x": "tabular_imputed"}}
    two = [*specs, dataclasses.replace(specs[0], data="tabular")]
    reads.clear()
    assert list(flow.load_views(Any, two)) == ["tabular_imputed", "tabular"] == reads  # type: ignore[arg-type]
