"""`proforma report` on a tiny synthetic build: every exhibit, its files and its numbers."""

from __future__ import annotations

import csv
import json

import numpy as np
import pyarrow as pa
import pytest
from tiny_synthetic import build_tiny_synthetic
from typer.testing import CliRunner

from proforma.app import scoring
from proforma.app.cli import app as cli_app
from proforma.app.flows.reconcile import reconcile
from proforma.app.flows.warehouse import prepare
from proforma.app.store.settings import get_settings
from proforma.app.store.warehouse import connect

EXHIBIT_FILES = [
    "table1_headline.csv",
    "table1_headline.md",
    "table1_headline.tex",
    "figure1_r2_by_horizon.png",
    "figure1_r2_by_horizon.svg",
    "figure1_r2_by_horizon.csv",
    "figure2_oracle_scenario.png",
    "figure2_oracle_scenario.svg",
    "figure2_oracle_scenario.csv",
    "table2_coherence.csv",
    "table2_coherence.md",
    "table2_coherence.tex",
    "tableA1_waterfall.csv",
    "tableA2_items.csv",
    "tableA3_joint_availability.csv",
    "tableA4_forma_hyperparameters.csv",
    "calibration.png",
    "calibration.svg",
    "calibration.csv",
    "index.html",
    "manifest.json",
]


def forecasts(cells: pa.Table, mu: np.ndarray, sigma: np.ndarray | None = None) -> pa.Table:
    cols = {
        "firm_id": cells["firm_id"],
        "origin_q": cells["origin_q"],
        "item_id": cells["item_id"],
        "horizon": cells["horizon"],
        "mu": pa.array(mu),
    }
    if sigma is not None:
        cols["sigma"] = pa.array(sigma)
    return pa.table(cols)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A tiny synthetic build with a Forma-like density submission (its checkpoint, random
    weights, on disk), a competitor, both reconciliations, scored on `full`."""
    import os

    from report_helpers import save_checkpoint

    from proforma.app.flows.scenario import checkpoint_dir

    folder = tmp_path_factory.mktemp("report")
    env = {
        "PROFORMA_WAREHOUSE": folder / "wh.duckdb",
        "PROFORMA_TEMP_DIRECTORY": folder / "tmp",
        "PROFORMA_CACHE_DIR": folder / "cache",
        "PROFORMA_MODELS_DIR": folder / "models",
        "PROFORMA_REPORT_DIR": folder / "report",
        "PROFORMA_THREADS": "2",
        "PROFORMA_MEMORY_LIMIT": "1GB",
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update({k: str(v) for k, v in env.items()})
    get_settings.cache_clear()
    wh = connect()
    prepare(wh)
    build_tiny_synthetic(wh, firms=24, start=1998, end=2013, seed=3)
    cells = wh.arrow(
        "SELECT firm_id, origin_q, item_id, horizon, actual FROM panel.truth "
        "WHERE split = 'test' ORDER BY ALL"
    )
    a = cells["actual"].to_numpy().astype(float)
    rng = np.random.default_rng(0)
    save_checkpoint(60)
    from proforma.models.forma.presets import preset

    meta = {
        "model": "forma",
        "preset": "small",
        "family": "gaussian",
        "seeds": [60],
        "parameters": 1234,
        "config": preset("small").to_dict(),
        "checkpoints": {"60": "abc"},
    }
    scoring.ingest_forecasts(
        wh,
        "forma-small-gaussian",
        forecasts(cells, 0.8 * a + rng.normal(0, 0.3, a.size), np.full(a.size, 0.4)),
        metadata=meta,
    )
    scoring.ingest_forecasts(
        wh, "rf", forecasts(cells, 0.7 * a + rng.normal(0, 0.4, a.size)), metadata={"model": "rf"}
    )
    for w in ("variance", "equal"):
        reconcile(wh, "forma-small-gaussian", w, progress=False)
    scoring.score(wh, "full")
    wh.close()
    assert checkpoint_dir("small", "gaussian").exists()
    yield get_settings()
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    get_settings.cache_clear()


def rows(path) -> list[dict]:
    with path.open() as f:
        return list(csv.DictReader(f))


def test_report_writes_every_exhibit(built):
    res = CliRunner().invoke(cli_app, ["report", "--oracle-origins", "6", "--threads", "1"])
    assert res.exit_code == 0, res.output
    out = built.report_dir
    for name in EXHIBIT_FILES:
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    assert "done: report: 9 exhibits" in res.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["skipped"] == []
    assert set(manifest["files"]) >= set(EXHIBIT_FILES) - {"manifest.json"}
    index = (out / "index.html").read_text()
    assert all(f'href="{name}"' in index for name in manifest["files"] if name != "index.html")
    # Table 2: raw, variance- and equal-weighted rows; the projections add up
    t2 = {r["variant"]: r for r in rows(out / "table2_coherence.csv")}
    raw, var, eq = (
        t2["Transformer-only (raw)"],
        t2["+ variance-weighted reconciliation"],
        t2["+ equal-weighted reconciliation"],
    )
    assert float(raw["median_identity_violation"]) > 0.01
    for r in (var, eq):
        assert float(r["median_identity_violation"]) < 1e-9
        assert float(r["max_identity_violation"]) < 1e-9
        assert float(r["max_projection_residual"]) < 1e-9
        assert r["identity_instances"] == raw["identity_instances"]
    # variance weights keep the values inside the standardized space; equal weights push
    # small items past the clip, where the stored forecasts no longer add up
    assert float(var["median_violation_after_clip"]) < 1e-9
    assert float(eq["median_violation_after_clip"]) > float(var["median_violation_after_clip"])
    tex = (out / "table1_headline.tex").read_text()
    assert r"\begin{tabular}" in tex and r"\textbf{forma-small-gaussian}" in tex
    # A1: the filters only remove rows; A2: the 78 items; A3: full and test samples
    steps = [int(r["n"]) for r in rows(out / "tableA1_waterfall.csv") if r["kind"] == "filter"]
    assert steps == sorted(steps, reverse=True) and steps[-1] > 0
    assert len(rows(out / "tableA2_items.csv")) == 78
    assert [r["sample"] for r in rows(out / "tableA3_joint_availability.csv")] == ["full", "test"]
    fig2 = rows(out / "figure2_oracle_scenario.csv")
    assert {r["statement"] for r in fig2} >= {"all", "BS", "IS"}


def test_report_leaves_out_what_it_cannot_make_and_says_why(built, tmp_path):
    out = tmp_path / "r"
    res = CliRunner().invoke(
        cli_app, ["report", "--out", str(out), "--no-figure2", "--against", "rf"]
    )
    assert res.exit_code == 0, res.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["skipped"] == ["Figure 2 (oracle scenario): --no-figure2"]
    assert not (out / "figure2_oracle_scenario.png").exists()
    assert manifest["provenance"]["dm_reference"]["full"] == "rf"
    res = CliRunner().invoke(
        cli_app, ["report", "--against", "nobody", "--out", str(tmp_path / "x")]
    )
    assert res.exit_code != 0 and "No submission 'nobody'" in str(res.exception)


def test_reconcile_command_refuses_variance_weights_without_sigma(built):
    from proforma.contracts.errors import UserError

    with connect(read_only=True) as wh:
        before = wh.fetchall("SELECT count(*) FROM eval.submissions")
    res = CliRunner().invoke(cli_app, ["reconcile", "rf", "--weights", "variance"])
    assert isinstance(res.exception, UserError) and "has no sigma" in str(res.exception)
    with connect(read_only=True) as wh:
        assert wh.fetchall("SELECT count(*) FROM eval.submissions") == before


def test_the_oracle_command_runs_the_scenario_flow(built, tmp_path, monkeypatch):
    """`proforma forma oracle-experiment` and the report's Figure 2 are one experiment:
    the command calls app/flows/scenario.py and prints and writes what it returns."""
    import pyarrow.parquet as pq

    from proforma.app.flows import scenario

    asked: list[dict] = []
    returned: list[pa.Table] = []
    real = scenario.oracle_experiment

    def spy(wh, models, **kwargs):
        asked.append(kwargs)
        returned.append(real(wh, models, **kwargs)[0])
        return returned[-1], None, kwargs["origins"]

    monkeypatch.setattr(scenario, "oracle_experiment", spy)
    out = tmp_path / "oracle.parquet"
    res = CliRunner().invoke(
        cli_app,
        ["forma", "oracle-experiment", "--seeds", "60", "--origins", "5", "--device", "cpu"]
        + ["--sample-seed", "2", "--out", str(out)],
    )
    assert res.exit_code == 0, res.output
    assert asked == [{"item": "revtq", "origins": 5, "sample_seed": 2, "device": "cpu"}]
    assert pq.read_table(out).equals(returned[0])
    assert "oracle revtq: 5 origins" in res.output


def test_an_oracle_experiment_is_kept_and_found_again(built, monkeypatch):
    """The demo runs its report's oracle experiment beside Forma's forecasts: the same
    experiment again (the report's Figure 2) reads the kept cells, the same tables; another
    sample, other weights or another build computes afresh."""
    import torch

    from proforma.app.flows import scenario
    from proforma.models.forma import scenario as model_scenario

    computed: list[int] = []
    real = model_scenario.oracle_cells

    def counted(*args, **kwargs):
        computed.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(model_scenario, "oracle_cells", counted)
    models, _, _ = scenario.load_forma("small", "gaussian", [60])
    kept = built.cache_dir / "oracle_experiment"
    before = set(kept.glob("*.npz"))  # the module's other tests ran experiments too
    with connect(read_only=True) as wh:
        first = scenario.oracle_experiment(wh, models, origins=6, sample_seed=4, progress=False)
        again = scenario.oracle_experiment(wh, models, origins=6, sample_seed=4, progress=False)
        assert len(computed) == 1
        assert again[0].equals(first[0]) and again[1].equals(first[1]) and again[2] == first[2]
        scenario.oracle_experiment(wh, models, origins=6, sample_seed=5, progress=False)
        assert len(computed) == 2
        with torch.no_grad():
            next(models[0].parameters()).add_(1e-3)
        scenario.oracle_experiment(wh, models, origins=6, sample_seed=4, progress=False)
        assert len(computed) == 3
    assert len(set(kept.glob("*.npz")) - before) == 3
