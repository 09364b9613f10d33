"""`proforma.app.flows.reconcile` on the tiny panel: derived submissions, exact identities, resuming."""

from __future__ import annotations

import numpy as np
import pytest
from scoring_fixtures import forecasts_from, module_warehouse, truth_cells

import proforma.app.flows.reconcile as rec
from proforma.app import scoring
from proforma.contracts.errors import UserError

# dollar statements of the tiny panel's identities, from a submission's stored forecasts
VIOLATIONS = """
WITH pts AS (
    SELECT f.firm_id, f.origin_q, f.item_id, f.horizon, avg(f.mu) AS x
    FROM eval.forecasts f WHERE f.submission_id = ? GROUP BY ALL
), dollars AS (
    SELECT p.*, panel.pf_destandardize(p.x, k.k, o.z, op.mu, op.sigma) AS v
    FROM pts p JOIN panel.origins o USING (firm_id, origin_q)
    JOIN panel.origin_params op ON op.item_id = p.item_id AND op.q = p.origin_q
    JOIN panel.item_k k ON k.item_id = p.item_id
    WHERE abs(p.x) < 6
), inst AS (
    SELECT d.firm_id, d.origin_q, d.horizon, i.identity, count(*) AS n,
           abs(sum(i.sign * d.v)) / sum(abs(d.v)) AS share
    FROM dollars d JOIN ref.identities i USING (item_id) GROUP BY ALL
)
SELECT i.identity, count(*), max(share), median(share) FROM inst i
JOIN (SELECT identity, count(*) AS m FROM ref.identities GROUP BY 1) USING (identity)
WHERE n = m GROUP BY ALL ORDER BY 1
"""


@pytest.fixture(scope="module")
def panel(tmp_path_factory):
    wh = module_warehouse(tmp_path_factory, "reconcile")
    cells = truth_cells(wh)
    rng = np.random.default_rng(7)
    actual = cells["actual"].to_numpy()
    mu = actual + rng.normal(0, 0.05, len(actual))
    sigma = np.exp(rng.normal(-2, 0.5, len(actual)))
    wh.sid = scoring.ingest_forecasts(wh, "noisy", forecasts_from(cells, mu, sigma))
    # a 2-component mixture and a point forecast without sigma
    mix = pa_concat(
        [forecasts_from(cells, mu + 0.01, sigma, 0), forecasts_from(cells, mu - 0.02, sigma, 1)]
    )
    wh.mix = scoring.ingest_forecasts(wh, "mixture", mix)
    wh.point = scoring.ingest_forecasts(wh, "point", forecasts_from(cells, mu))
    yield wh
    wh.close()


def pa_concat(tables):
    import pyarrow as pa

    return pa.concat_tables(tables)


def stored(wh, sid):
    return wh.arrow(
        "SELECT firm_id, origin_q, item_id, horizon, avg(mu) AS mu FROM eval.forecasts "
        "WHERE submission_id = ? GROUP BY ALL ORDER BY ALL",
        [sid],
    ).to_pydict()


@pytest.mark.parametrize("weights", ["variance", "equal"])
def test_reconciled_statements_add_up_and_untouched_cells_pass_through(panel, weights):
    wh = panel
    before = {r[0]: r for r in wh.fetchall(VIOLATIONS, [wh.mix])}
    assert before["BS13"][2] > 1e-3 and before["IS14"][2] > 1e-3  # noisy statements
    res = rec.reconcile(wh, "mixture", weights, progress=False)
    after = {r[0]: r for r in wh.fetchall(VIOLATIONS, [res.submission_id])}
    assert set(after) == {"BS13", "IS14"}  # the panel's enforceable identities
    for ident, row in after.items():
        assert row[1] == before[ident][1]  # the same statements
        assert row[2] < 1e-9, (ident, row)  # every one holds to 1e-9 relative
    assert res.max_residual is not None and res.max_residual < 1e-9
    # niq is in no enforceable identity: its cells are the parent's point, bit for bit
    niq = wh.scalar("SELECT item_id FROM ref.items WHERE item = 'niq'")
    parent, child = stored(wh, wh.mix), stored(wh, res.submission_id)
    assert len(parent["mu"]) == len(child["mu"])
    keep = np.asarray(parent["item_id"]) == niq
    assert keep.any() and np.array_equal(
        np.asarray(parent["mu"])[keep], np.asarray(child["mu"])[keep]
    )
    changed = ~np.isclose(np.asarray(parent["mu"]), np.asarray(child["mu"]), rtol=0, atol=1e-12)
    assert changed.sum() == res.cells_changed > 0
    meta = wh.fetchone(
        "SELECT metadata->>'parent_id', metadata->>'method', has_sigma, n_components "
        "FROM eval.submissions WHERE submission_id = ?",
        [res.submission_id],
    )
    assert meta == (str(wh.mix), f"reconcile/{weights}", False, 1)
    assert wh.scalar("SELECT count(*) FROM eval.reconcile_cells") == 0  # staging emptied


def test_variance_weights_without_sigma_are_a_clear_error_and_write_nothing(panel):
    wh = panel
    jobs = wh.scalar("SELECT count(*) FROM eval.reconciliations")
    subs = wh.scalar("SELECT count(*) FROM eval.submissions")
    with pytest.raises(UserError, match="no sigma.*--weights equal"):
        rec.reconcile(wh, "point", "variance", progress=False)
    with pytest.raises(UserError, match="Unknown weights"):
        rec.reconcile(wh, "noisy", "ols", progress=False)
    with pytest.raises(UserError, match="No submission"):
        rec.reconcile(wh, "no-such-model", "equal", progress=False)
    assert wh.scalar("SELECT count(*) FROM eval.reconciliations") == jobs
    assert wh.scalar("SELECT count(*) FROM eval.submissions") == subs


def test_an_interrupted_job_resumes_and_matches_an_uninterrupted_one(panel, monkeypatch):
    wh = panel
    real, calls = rec.reconcile_quarter, []

    def flaky(*args, **kwargs):
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(rec, "reconcile_quarter", flaky)
    with pytest.raises(KeyboardInterrupt):
        rec.reconcile(wh, "noisy", "variance", name="resumed", progress=False)
    assert (
        wh.scalar(
            "SELECT count(*) FROM eval.reconcile_quarters q JOIN eval.reconciliations r "
            "USING (reconcile_id) WHERE r.name = 'resumed'"
        )
        == 3
    )
    assert wh.scalar("SELECT count(*) FROM eval.submissions WHERE name = 'resumed'") == 0
    monkeypatch.setattr(rec, "reconcile_quarter", real)
    resumed = rec.reconcile(wh, "noisy", "variance", name="resumed", progress=False)
    assert resumed.quarters_resumed == 3 and resumed.quarters == wh.scalar(
        "SELECT count(DISTINCT origin_q) FROM eval.forecasts WHERE submission_id = ?", [wh.sid]
    )
    fresh = rec.reconcile(wh, "noisy", "variance", name="fresh", progress=False)
    assert stored(wh, resumed.submission_id) == stored(wh, fresh.submission_id)


def _upload_of(wh, sid: int, path, sigma: bool):
    """A submission's forecasts written back as an upload file (gvkey, item, quarter end)."""
    import pyarrow.parquet as pq

    table = wh.arrow(
        "SELECT p.gvkey AS firm, i.item AS target, qend(f.origin_q) AS origin, "
        "CAST(f.horizon AS BIGINT) AS horizon, f.mu AS prediction"
        + (", f.sigma" if sigma else "")
        + " FROM eval.forecasts f JOIN panel.firms p USING (firm_id) "
        "JOIN ref.items i USING (item_id) WHERE f.submission_id = ? ORDER BY ALL",
        [sid],
    )
    pq.write_table(table, path)
    return path


@pytest.mark.parametrize(("parent", "weights"), [("noisy", "variance"), ("point", "equal")])
def test_an_upload_kept_in_the_store_is_a_parent_like_the_same_rows_in_a_table(
    panel, tmp_path, parent, weights
):
    """Issue 31: an upload kept as a file in the upload store (a point file, or a density
    file with its sigma) reconciles from that file, to exactly what the same forecasts
    stored in eval.forecasts give."""
    wh = panel
    table_id = wh.sid if parent == "noisy" else wh.point
    upload = scoring.ingest_parquet(
        wh, _upload_of(wh, table_id, tmp_path / "up.parquet", parent == "noisy"), f"{parent} up"
    )
    assert wh.scalar(
        "SELECT count(*) FROM eval.submission_files WHERE submission_id = ?", [upload]
    ), "the upload is not kept in the store"
    assert not wh.scalar("SELECT count(*) FROM eval.forecasts WHERE submission_id = ?", [upload])
    from_file = rec.reconcile(wh, f"{parent} up", weights, progress=False)
    from_table = rec.reconcile(wh, parent, weights, name=f"{parent} again", progress=False)
    assert from_file.cells_changed == from_table.cells_changed > 0
    assert from_file.statements == from_table.statements
    assert stored(wh, from_file.submission_id) == stored(wh, from_table.submission_id)
