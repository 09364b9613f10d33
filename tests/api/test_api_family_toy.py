"""A toy density family enters through exactly the path of docs/models.md ("Adding a density
family"): one `Family` in contracts/families.py (here added to the registry for the test),
its SQL terms with it. Nothing else changes: the upload form offers it, the door takes a
file of it, the checks validate it, and its cells score by its terms (NLL, CRPS, PIT and
the coverage flags against scipy and a numerical CRPS integral; the mixture view's too),
rolled up into the metrics like every family's."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from fastapi.testclient import TestClient
from scipy import integrate, stats
from service_helpers import Api, submission_bytes

from proforma.app import scoring
from proforma.app.scoring.cells import cell_score_rows
from proforma.app.server.main import create_app
from proforma.app.store.settings import Settings
from proforma.contracts import families
from proforma.contracts.families import Family, MixtureTerms, SingleTerms
from proforma.contracts.metrics import COVERAGE_LEVELS, coverage_bounds

# The one declaration: the logistic distribution of location mu and scale s = sigma,
# f = exp(-w) / (s (1 + exp(-w))^2), F = 1 / (1 + exp(-w)), w = (y - mu) / s, and its
# closed-form CRPS s (w - 2 ln F(w) - 1), symmetric in w (written in |w| to stay finite).
LOGISTIC = Family(
    name="logistic",
    label="Logistic",
    description="sigma the scale s (sd s pi / sqrt 3)",
    single=SingleTerms(
        nll="ln(s) + aw + 2 * ln(1 + exp(-aw))",
        cdf="1 / (1 + exp(-w))",
        crps="s * (aw + 2 * ln(1 + exp(-aw)) - 1)",
    ),
    mixture=MixtureTerms(
        log_density="-ln(s) - aw - 2 * ln(1 + exp(-aw))",
        cdf="1 / (1 + exp(-w))",
    ),
)


@pytest.fixture
def with_logistic(panel: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setitem(families.FAMILIES, LOGISTIC.name, LOGISTIC)
    return panel


def _crps_integral(y: float, mu: float, s: float) -> float:
    """CRPS = integral of (F(x) - 1{x >= y})^2 dx, numerically."""
    dist = stats.logistic(loc=mu, scale=s)
    below, _ = integrate.quad(lambda x: dist.cdf(x) ** 2, mu - 60 * s, y, limit=200)
    above, _ = integrate.quad(lambda x: dist.sf(x) ** 2, y, mu + 60 * s, limit=200)
    return below + above


def test_a_toy_family_is_uploaded_validated_and_scored(with_logistic: Settings) -> None:
    with TestClient(create_app(with_logistic)) as client:
        api = Api(client)
        # the forms offer it, the help of the door lists it
        assert '<option value="logistic">Logistic</option>' in client.get("/upload").text

        # a file of it comes in by the door, is validated and scored
        sigma = 0.8  # submission_bytes' constant sigma (0.5 + noise)
        job = api.wait(api.upload(submission_bytes(api.wh), family="logistic").json()["job_id"])
        assert job["status"] == "done", job
        sid = job["submission_id"]
        wh = api.wh
        assert wh.fetchone(
            "SELECT family, df, has_sigma FROM eval.submissions WHERE submission_id = ?", [sid]
        ) == ("logistic", None, True)

        # every cell's terms against scipy: w = -r / s
        cells = cell_score_rows(wh, sid)
        r = cells["r"].to_numpy()
        w = -r / sigma
        dist = stats.logistic(scale=sigma)
        nll = cells["nll"].to_numpy()
        u = cells["u"].to_numpy()
        crps = cells["crps"].to_numpy()
        assert cells.num_rows > 100 and np.isfinite(nll).all()
        np.testing.assert_allclose(nll, -dist.logpdf(w * sigma), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(u, dist.cdf(w * sigma), rtol=1e-12, atol=1e-14)
        for i in np.linspace(0, cells.num_rows - 1, 7).astype(int):
            assert crps[i] == pytest.approx(_crps_integral(w[i] * sigma, 0.0, sigma), rel=1e-7)
        for p in COVERAGE_LEVELS:
            lo, hi = coverage_bounds(p)
            inside = (dist.cdf(w * sigma) >= lo) & (dist.cdf(w * sigma) <= hi)
            assert cells[f"in{p}"].to_pylist() == inside.tolist()

        # the metrics roll the cells up as any family's
        run = scoring.score(wh, "full", [sid], coherence=False)
        g = wh.arrow(
            "SELECT * FROM eval.metrics WHERE score_run_id = ? AND submission_id = ? "
            "AND level = 'global'",
            [run, sid],
        ).to_pylist()[0]
        assert g["nll"] == pytest.approx(nll.mean(), rel=1e-12)
        assert g["crps"] == pytest.approx(crps.mean(), rel=1e-12)
        assert g["cov90"] == pytest.approx(((u >= 0.05) & (u <= 0.95)).mean(), rel=1e-12)

        # a mixture of it: its log density and CDF through sql/eval/054 (no mixture CRPS)
        truth = wh.arrow(
            "SELECT firm_id, origin_q, item_id, horizon, actual FROM panel.truth "
            "WHERE split = 'test' ORDER BY ALL"
        )
        y = truth["actual"].to_numpy()
        n = truth.num_rows
        keys = truth.drop_columns(["actual"])
        parts = [
            keys.append_column("component", pa.array(np.full(n, k), pa.int16()))
            .append_column("mu", pa.array(y + shift))
            .append_column("sigma", pa.array(np.full(n, scale)))
            for k, (shift, scale) in enumerate(((-0.2, 0.5), (0.3, 0.9)))
        ]
        mix = scoring.ingest_forecasts(
            wh, "logistic mixture", pa.concat_tables(parts), family="logistic"
        )
        rows = cell_score_rows(wh, mix)
        density = 0.5 * (
            stats.logistic(loc=-0.2, scale=0.5).pdf(0.0)
            + stats.logistic(loc=0.3, scale=0.9).pdf(0.0)
        )
        cdf = 0.5 * (
            stats.logistic(loc=-0.2, scale=0.5).cdf(0.0)
            + stats.logistic(loc=0.3, scale=0.9).cdf(0.0)
        )
        np.testing.assert_allclose(rows["nll"].to_numpy(), -np.log(density), rtol=1e-12)
        np.testing.assert_allclose(rows["u"].to_numpy(), cdf, rtol=1e-12)
        assert rows["crps"].null_count == rows.num_rows


def test_a_toy_family_is_checked_at_every_door(with_logistic: Settings) -> None:
    """The registry's checks: the family is known, takes no df; an unknown one is refused."""
    with TestClient(create_app(with_logistic)) as client:
        api = Api(client)
        data = submission_bytes(api.wh, limit=40)
        refused = api.upload(data, family="logistic", df="5")
        assert refused.status_code == 422
        assert "df applies only to family student_t, not logistic" in refused.text
        unknown = api.upload(data, family="cauchy")
        assert unknown.status_code == 422 and "logistic" in unknown.text
