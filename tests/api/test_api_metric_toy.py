"""A toy metric enters through exactly the path of docs/scoring.md ("Adding a metric"):
its definition in contracts/metrics.py (here added to the registry for the test) and a
migration giving its column to the stored metric rows. Nothing else changes, and it shows
in eval.metrics, the published snapshot, the API and the pages."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import numpy as np
import pytest
from fastapi.testclient import TestClient
from service_helpers import Api

from proforma.app import scoring
from proforma.app.flows import warehouse as flows_warehouse
from proforma.app.read.snapshot import publish
from proforma.app.server.main import create_app
from proforma.app.store.migrations import MIGRATIONS_DIR, discover, migrate
from proforma.app.store.settings import Settings
from proforma.contracts import metrics
from proforma.contracts.metrics import Better, Disclosure, Kind, Metric, Sum

# Step 1 of the walk-through: the sum it needs (from the cell column r) and the metric.
SUM_R = Sum("sum_r", "sum(r)", "DOUBLE", ("r",))
BIAS = Metric(
    name="bias",
    label="bias (mean r)",
    description="Mean residual (point - actual): 0 for an unbiased point forecast.",
    better=Better.target,
    target=0.0,
    kind=Kind.point,
    sums=("n", "sum_r"),
    finish="sum_r / n",
    digits=4,
    tracks=("squared",),
    disclosure=Disclosure.noise,
    sensitivity=1.0,  # d (mu - y) / dy
)
# Step 2: its migration (the next free number).
MIGRATION = """\
ALTER TABLE eval.metric_rows ADD COLUMN bias DOUBLE;
ALTER TABLE rounds.metrics ADD COLUMN bias DOUBLE;
"""


@pytest.fixture
def with_bias(panel: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setitem(metrics.SUMS, SUM_R.name, SUM_R)
    monkeypatch.setitem(metrics.METRICS, BIAS.name, BIAS)
    folder = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS_DIR, folder)
    version = max(m.version for m in discover()) + 1
    (folder / f"V{version:04d}__metric_bias.sql").write_text(MIGRATION)
    # the service migrates from this folder (the repository's migrations/ plus the new file)
    monkeypatch.setattr(flows_warehouse, "migrate", lambda wh: migrate(wh, folder))
    return panel


def test_a_toy_metric_reaches_the_metrics_the_api_and_the_pages(with_bias: Settings) -> None:
    with TestClient(create_app(with_bias)) as client:
        api = Api(client)
        wh = api.wh
        cells = wh.arrow(
            "SELECT firm_id, origin_q, item_id, horizon, actual FROM panel.truth "
            "WHERE split = 'test' ORDER BY ALL"
        )
        rng = np.random.default_rng(5)
        mu = cells["actual"].to_numpy() + rng.normal(0.2, 0.5, cells.num_rows)
        sid = scoring.ingest_forecasts(
            wh,
            "biased",
            cells.drop_columns(["actual"]).append_column("mu", [mu]),
        )
        footprint = "full"
        run = scoring.score(wh, footprint, [sid], coherence=False)

        # eval.metrics: the mean residual over the run's cells, at every level
        n, bias, mse = wh.fetchone(
            "SELECT n, bias, mse FROM eval.metrics WHERE score_run_id = ? AND submission_id = ? "
            "AND level = 'global'",
            [run, sid],
        )
        count, mean_r = wh.fetchone(
            "SELECT count(*), avg(r) FROM eval.cell_scores WHERE submission_id = ?", [sid]
        )
        assert n == count and bias == pytest.approx(mean_r, rel=1e-12, abs=1e-14)
        assert bias == pytest.approx(0.2, abs=0.1) and bias**2 <= mse
        per_horizon = wh.fetchall(
            "SELECT bias FROM eval.metrics WHERE score_run_id = ? AND level = 'horizon'", [run]
        )
        assert len(per_horizon) == 20 and all(v is not None for (v,) in per_horizon)

        # the published snapshot
        publish(wh, with_bias)
        pub = duckdb.connect(str(with_bias.public_snapshot), read_only=True)
        try:
            published = pub.execute(
                "SELECT bias FROM metrics WHERE submission_id = ? AND level = 'global'", [sid]
            ).fetchone()
            assert published is not None and published[0] == pytest.approx(bias)
            assert "bias" in [c[0] for c in pub.execute("SELECT * FROM leaderboard").description]
        finally:
            pub.close()

        # the API: the submission's scores and the squared track's leaderboard
        detail = client.get(f"/api/v1/submissions/{sid}").json()
        (scores,) = [s for s in detail["scores"] if s["footprint"] == footprint]
        assert scores["global"]["bias"] == pytest.approx(bias)
        assert len([r for r in scores["by_horizon"] if r["bias"] is not None]) == 20
        board = client.get(f"/api/v1/leaderboards/{footprint}?track=squared").json()
        assert board["rows"][0]["bias"] == pytest.approx(bias)
        density = client.get(f"/api/v1/leaderboards/{footprint}?track=density").json()
        assert all("bias" not in r for r in density["rows"])

        # the pages: its label as a column, its value with its digits
        page = client.get(f"/?footprint={footprint}&track=squared").text
        assert "bias (mean r)" in page and f"{bias:.4f}" in page
        sub_page = client.get(f"/submissions/{sid}").text
        assert "bias (mean r)" in sub_page and f"{bias:.4f}" in sub_page
