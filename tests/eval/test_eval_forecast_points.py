"""Point files stored narrow (eval.forecast_points, V0095: no component and sigma columns):
the same rows, checks, problems and scores as when the same forecasts are stored in the
eight-column eval.forecast_rows (the path every upload took before, and a file with a
component column still takes)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scoring_fixtures import module_warehouse

from proforma.app import scoring
from proforma.app.scoring.cells import cell_score_rows
from proforma.app.store.migrations import MIGRATIONS_DIR, migrate
from proforma.app.store.warehouse import connect
from proforma.contracts.errors import ValidationError


@pytest.fixture(scope="module")
def wh(tmp_path_factory):
    w = module_warehouse(tmp_path_factory, "points")
    yield w
    w.close()


def _file(wh, path: Path, *, component: bool = False, mutate=None) -> Path:
    """The test truth's cells as a submission file (gvkey, item name, quarter-end date),
    predictions with noise, a few NaN, and some cells left out."""
    rng = np.random.default_rng(7)
    cells = wh.arrow(
        "SELECT f.gvkey AS firm, i.item AS target, qend(t.origin_q) AS origin, "
        "CAST(t.horizon AS BIGINT) AS horizon, t.actual FROM panel.truth t "
        "JOIN panel.firms f USING (firm_id) JOIN ref.items i USING (item_id) "
        "WHERE t.split = 'test' ORDER BY t.firm_id, t.origin_q, t.item_id, t.horizon"
    )
    n = cells.num_rows
    keep = rng.random(n) > 0.1
    actual = np.nan_to_num(cells["actual"].to_numpy(zero_copy_only=False), nan=0.0)
    pred = actual + rng.normal(0, 0.4, n)
    pred[rng.random(n) < 0.02] = np.nan
    cols = {
        c: cells[c].filter(pa.array(keep)).combine_chunks()
        for c in ("firm", "target", "origin", "horizon")
    }
    cols["prediction"] = pa.array(pred[keep])
    if component:
        cols["component"] = pa.array(np.zeros(int(keep.sum()), np.int64))
    if mutate:
        mutate(cols)
    pq.write_table(pa.table(cols), path, row_group_size=500)
    return path


def _stored(wh, sid: int) -> list[tuple]:
    from proforma.app.scoring.submissions.store import forecast_relation

    return wh.fetchall(
        "SELECT firm_id, origin_q, item_id, horizon, component, CAST(mu AS VARCHAR), sigma "
        f"FROM {forecast_relation(wh, sid)} "
        "WHERE submission_id = ? ORDER BY ALL",
        [sid],
    )


def test_a_point_file_is_stored_narrow_and_scores_as_when_stored_wide(wh, tmp_path):
    narrow = scoring.ingest_parquet(wh, _file(wh, tmp_path / "narrow.parquet"), "narrow")
    wide = scoring.ingest_parquet(wh, _file(wh, tmp_path / "wide.parquet", component=True), "wide")
    where = "SELECT count(*) FROM eval.{} WHERE submission_id = ?"
    # a point upload is kept in the upload store, no row of it in a table (issue 31)
    assert wh.scalar(where.format("submission_files"), [narrow]) == 1
    assert wh.scalar(where.format("forecast_points"), [narrow]) == 0
    assert wh.scalar(where.format("forecast_rows"), [narrow]) == 0
    assert wh.scalar(where.format("forecast_points"), [wide]) == 0
    # the same rows through eval.forecasts, the same record (warnings with their examples)
    assert _stored(wh, narrow) == _stored(wh, wide)
    record = (
        "SELECT rows, cells, n_components, has_sigma, family, warnings "
        "FROM eval.submissions WHERE submission_id = ?"
    )
    assert wh.fetchall(record, [narrow]) == wh.fetchall(record, [wide])
    assert "NaN" in wh.scalar(
        "SELECT warnings FROM eval.submissions WHERE submission_id = ?", [narrow]
    )

    # each scored alone (as `submit --score` does), then together: the same numbers
    runs = [scoring.score(wh, "full", [sid], coherence=False) for sid in (narrow, wide)]
    metrics = (
        "SELECT * EXCLUDE (score_run_id, submission_id) FROM eval.metrics "
        "WHERE score_run_id = ? ORDER BY ALL"
    )
    got, want = (wh.fetchall(metrics, [run]) for run in runs)
    assert len(got) == len(want) > 0
    for a, b in zip(got, want, strict=True):
        # equal up to the order of summation (DuckDB's parallel sums; 1e-15 relative)
        for x, y in zip(a, b, strict=True):
            if isinstance(y, float):
                assert x == pytest.approx(y, rel=1e-12, abs=1e-12, nan_ok=True)
            else:
                assert x == y
    # the cells and their residuals exactly: the stored upload's met by position (it
    # keeps no per-cell rows, issue 31), the table's from eval.cell_scores
    cells = "SELECT cell, r FROM eval.cell_scores WHERE submission_id = ? ORDER BY cell"
    assert wh.fetchall(cells, [narrow]) == []
    positional = cell_score_rows(wh, narrow).select(["cell", "r"]).to_pylist()
    assert [(r["cell"], r["r"]) for r in positional] == wh.fetchall(cells, [wide])
    both = scoring.score(wh, "full", [narrow, wide], coherence=False)
    pooled = wh.fetchall(
        "SELECT submission_id, r2, mse, mae, n FROM eval.metrics WHERE score_run_id = ? "
        "AND level = 'global' ORDER BY submission_id",
        [both],
    )
    assert len(pooled) == 2
    assert pooled[0][1:] == pytest.approx(pooled[1][1:], rel=1e-12)
    # coherence reads the stored file in place: the same as from the table
    from proforma.app.scoring.coherence import compute_coherence

    if compute_coherence(wh, narrow) + compute_coherence(wh, wide):
        rows = (
            "SELECT identity, n_instances, median_violation, mean_violation "
            "FROM eval.coherence WHERE submission_id = ? ORDER BY identity"
        )
        got, want = wh.fetchall(rows, [narrow]), wh.fetchall(rows, [wide])
        assert [r[:2] for r in got] == [r[:2] for r in want] and got
        for a, b in zip(got, want, strict=True):  # up to the order of summation
            assert a[2:] == pytest.approx(b[2:], rel=1e-12)


@pytest.mark.parametrize(
    ("mutate", "fragments"),
    [
        (
            lambda c: c.update(firm=pa.array(["999999"] + c["firm"].to_pylist()[1:])),
            ["unknown firm"],
        ),
        (
            lambda c: c.update(horizon=pa.array([21] + c["horizon"].to_pylist()[1:])),
            ["horizon outside 1..20"],
        ),
        (
            lambda c: c.update(target=pa.array(["nope"] + c["target"].to_pylist()[1:])),
            ["unknown target item"],
        ),
        (
            lambda c: c.update(
                origin=pa.array(
                    [c["origin"][0].as_py().replace(year=4200)] + c["origin"].to_pylist()[1:]
                )
            ),
            ["origin_q outside 0..16383"],
        ),
        (
            lambda c: c.update(prediction=pa.array([75.0] + c["prediction"].to_pylist()[1:])),
            ["|prediction| > 60"],
        ),
        # a repeated cell, far apart (another row group): named by firm, item, origin
        (
            lambda c: [c.update({k: pa.chunked_array([v, v[3:5]])}) for k, v in c.items()],
            ["duplicate key (firm, target, origin, horizon, component) (2 rows)", "firm="],
        ),
    ],
)
def test_bad_point_files_get_the_same_problems_as_wide_ones(wh, tmp_path, mutate, fragments):
    def problems(component: bool) -> list[dict]:
        path = _file(wh, tmp_path / f"bad{component}.parquet", component=component, mutate=mutate)
        before = wh.fetchall(
            "SELECT (SELECT count(*) FROM eval.submissions), (SELECT count(*) FROM eval.forecasts)"
        )
        with pytest.raises(ValidationError) as info:
            scoring.ingest_parquet(wh, path, "bad")
        after = wh.fetchall(
            "SELECT (SELECT count(*) FROM eval.submissions), (SELECT count(*) FROM eval.forecasts)"
        )
        assert after == before, "a rejected submission wrote something"
        return info.value.problems

    narrow = problems(False)
    text = " | ".join(f"{p['problem']} ({p['count']} rows) {p['examples']}" for p in narrow)
    for fragment in fragments:
        assert fragment in text, text
    # the wide file's examples show its component column; the problems are the same
    wide = problems(True)
    assert [(p["problem"], p["count"], p["severity"]) for p in narrow] == [
        (p["problem"], p["count"], p["severity"]) for p in wide
    ]


def test_forecasts_stored_before_v0095_stay_readable_and_writable(tmp_path, settings):
    """The migration renames the table that held every forecast and puts a view in its
    place: rows stored before read the same, and both tables take new rows."""
    before = tmp_path / "before"
    before.mkdir()
    for m in sorted(MIGRATIONS_DIR.glob("V*.sql")):
        if m.name < "V0095":
            shutil.copy(m, before / m.name)
    wh = connect(settings)
    try:
        migrate(wh, before)
        old = [(1, 7, 8040, 5, 3, 0, 0.25, None), (1, 7, 8040, 5, 4, 1, -0.5, 0.3)]
        wh.execute("INSERT INTO eval.forecasts VALUES (?, ?, ?, ?, ?, ?, ?, ?)", old[0])
        wh.execute("INSERT INTO eval.forecasts VALUES (?, ?, ?, ?, ?, ?, ?, ?)", old[1])
        assert next(m.version for m in migrate(wh)) == 95
        assert wh.fetchall("SELECT * FROM eval.forecasts ORDER BY ALL") == old
        wh.execute("INSERT INTO eval.forecast_points VALUES (2, 7, 8040, 5, 3, 0.75)")
        wh.execute("INSERT INTO eval.forecast_rows VALUES (3, 7, 8040, 5, 3, 2, 0.5, 0.1)")
        assert wh.fetchall("SELECT * FROM eval.forecasts WHERE submission_id > 1 ORDER BY ALL") == [
            (2, 7, 8040, 5, 3, 0, 0.75, None),
            (3, 7, 8040, 5, 3, 2, 0.5, 0.1),
        ]
    finally:
        wh.close()


def test_033_gives_the_row_030_gives_on_the_same_point_rows(wh, tmp_path):
    """033 (point rows only) against 030 (any rows, read through eval.forecasts) on good
    rows and on rows with every problem a point row can have."""
    from proforma.app.scoring.submissions.store import forecast_relation

    sid = scoring.ingest_parquet(wh, _file(wh, tmp_path / "good.parquet"), "good points")
    good = 900000  # its rows (kept in the upload store) in the table, as 021 stores them
    wh.execute(
        "INSERT INTO eval.forecast_points SELECT ?, firm_id, origin_q, item_id, horizon, mu "
        f"FROM {forecast_relation(wh, sid)} WHERE submission_id = ?",
        [good, sid],
    )
    sid = good
    bad = 900001
    wh.execute(
        "INSERT INTO eval.forecast_points SELECT ?, firm_id, origin_q, item_id, horizon, mu "
        "FROM eval.forecast_points WHERE submission_id = ?",
        [bad, sid],
    )
    wh.execute(
        "INSERT INTO eval.forecast_points VALUES "
        "(?, NULL, 8040, 5, 3, 0.1), (?, 1, NULL, 5, 3, 0.1), (?, 1, 8040, NULL, 3, 0.1), "
        "(?, 1, 8040, 5, NULL, 0.1), (?, 1, 20000, 5, 3, 0.1), (?, 1, -4, 5, 3, 0.1), "
        "(?, 2, 8041, 5, 3, 75.0), (?, 2, 8041, 5, 4, -80.0), (?, 2, 8041, 6, 4, 'NaN'), "
        "(?, 2, 8041, 6, 5, NULL)",
        [bad] * 10,
    )
    # repeated cells: three rows of submission sid again, one of them twice
    wh.execute(
        "INSERT INTO eval.forecast_points SELECT ?, firm_id, origin_q, item_id, horizon, mu "
        "FROM (SELECT * FROM eval.forecast_points WHERE submission_id = ? ORDER BY ALL LIMIT 3) "
        "CROSS JOIN range(2) r(n) WHERE n = 0 OR origin_q % 2 = 0",
        [bad, sid],
    )
    for s in (sid, bad):
        old = wh.query_step(
            "eval/030_forecast_checks",
            {"submission_id": s},
            identifiers={"forecasts": "eval.forecasts"},
        ).to_pylist()
        new = wh.query_step(
            "eval/033_point_forecast_checks",
            {"submission_id": s},
            identifiers={"points": "eval.forecast_points"},
        ).to_pylist()
        diff = {k: (new[0][k], v) for k, v in old[0].items() if new[0][k] != v}
        assert new == old, diff
    row = old[0]
    assert row["null_key_n"] == 4 and row["bad_origin_n"] == 2 and row["huge_prediction_n"] == 2
    assert row["duplicate_excess"] >= 3 and row["non_finite_prediction_n"] > 2
    wh.execute("DELETE FROM eval.forecast_points WHERE submission_id IN (?, ?)", [good, bad])
