"""Upload rules: a submission none of whose cells can be scored is refused, raw units are
an error that says so, and every warning carries example cells. Files and model batches
go through the same checks; a refusal writes nothing."""

from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scoring_fixtures import forecasts_from, module_warehouse, truth_cells

from proforma.app import scoring
from proforma.contracts.errors import ValidationError


@pytest.fixture(scope="module")
def wh(tmp_path_factory):
    w = module_warehouse(tmp_path_factory, "upload-rules")
    yield w
    w.close()


def _file(tmp_path, prediction: list, origin: dt.date = dt.date(2010, 3, 31)) -> str:
    n = len(prediction)
    path = tmp_path / "sub.parquet"
    pq.write_table(
        pa.table(
            {
                "firm": [f"{1001 + i // 20:06d}" for i in range(n)],  # (firm, horizon) unique
                "target": ["revtq" if i % 2 else "niq" for i in range(n)],
                "origin": [origin] * n,
                "horizon": [i % 20 + 1 for i in range(n)],
                "prediction": pa.array(prediction, pa.float64()),
            }
        ),
        path,
    )
    return path


def _counts(wh) -> tuple[int, int, int]:
    return (
        wh.scalar("SELECT count(*) FROM eval.submissions"),
        wh.scalar("SELECT count(*) FROM eval.forecasts"),
        wh.scalar("SELECT count(*) FROM eval.submission_files"),
    )


def _refused(wh, call, fragment: str) -> dict:
    before = _counts(wh)
    with pytest.raises(ValidationError) as info:
        call()
    assert _counts(wh) == before, "a refused submission wrote something"
    errors = [p for p in info.value.problems if p["severity"] == "error"]
    assert any(fragment in p["problem"] for p in errors), info.value.problems
    assert fragment in str(info.value)
    return next(p for p in errors if fragment in p["problem"])


@pytest.mark.parametrize(
    "values",
    [
        [None] * 30,
        [float("nan")] * 30,
        [float("inf"), float("-inf")] * 15,
        [None, float("nan"), float("inf")] * 10,
    ],
    ids=["null", "nan", "infinite", "mixed"],
)
def test_a_file_without_one_finite_prediction_is_refused(wh, tmp_path, values) -> None:
    problem = _refused(
        wh,
        lambda: scoring.ingest_parquet(wh, _file(tmp_path, values), "void"),
        "no usable forecast: every prediction is null, NaN or infinite",
    )
    assert problem["count"] == 30
    assert problem["examples"]  # which cells, not just how many


@pytest.mark.parametrize(
    "origin,span",
    [
        (dt.date(1999, 6, 30), "1999Q2..1999Q2"),  # training period
        (dt.date(2005, 3, 31), "2005Q1..2005Q1"),  # validation period
    ],
)
def test_a_file_with_no_cell_in_the_test_split_is_refused(wh, tmp_path, origin, span) -> None:
    problem = _refused(
        wh,
        lambda: scoring.ingest_parquet(wh, _file(tmp_path, [0.1] * 30, origin), "early"),
        "no cell in the test split",
    )
    assert span in problem["problem"] and "test 2010Q1..2014Q4" in problem["problem"]


def test_cells_for_no_eligible_origin_are_refused(wh, tmp_path) -> None:
    # Firm 001001 is no eligible origin in 2010Q1 here: its cells have no truth to score.
    wh.execute(
        "CREATE TEMP TABLE kept AS SELECT * FROM panel.origins "
        "WHERE firm_id = 1 AND origin_q = 8040"
    )
    wh.execute("DELETE FROM panel.origins WHERE firm_id = 1 AND origin_q = 8040")
    try:
        path = tmp_path / "one-firm.parquet"
        pq.write_table(
            pa.table(
                {
                    "firm": ["001001"] * 20,
                    "target": ["revtq"] * 20,
                    "origin": ["2010Q1"] * 20,
                    "horizon": list(range(1, 21)),
                    "prediction": [0.2] * 20,
                }
            ),
            path,
        )
        problem = _refused(
            wh, lambda: scoring.ingest_parquet(wh, path, "ineligible"), "no usable cell"
        )
        assert problem["count"] == 20
        assert "firm=001001 target=revtq origin=2010Q1" in problem["examples"][0]
    finally:
        wh.execute("INSERT INTO panel.origins SELECT * FROM kept")
        wh.execute("DROP TABLE kept")


def test_raw_units_are_an_error_naming_the_likely_cause(wh, tmp_path) -> None:
    values = [0.1] * 30
    values[3] = 5_000_000.0
    values[4] = -75.0
    problem = _refused(
        wh,
        lambda: scoring.ingest_parquet(wh, _file(tmp_path, values), "dollars"),
        "|prediction| > 60",
    )
    assert "raw reported units" in problem["problem"] and "docs/scoring.md" in problem["problem"]
    assert problem["count"] == 2
    assert "row 3" in problem["examples"][0] and "prediction=5000000" in problem["examples"][0]


def test_at_the_bound_is_still_a_forecast(wh, tmp_path) -> None:
    values = [0.1] * 30
    values[0], values[1] = 60.0, -60.0
    sid = scoring.ingest_parquet(wh, _file(tmp_path, values), "edge")
    assert (
        json.loads(
            wh.scalar("SELECT warnings FROM eval.submissions WHERE submission_id = ?", [sid])
        )
        == []
    )


def test_a_partly_usable_file_is_stored_with_example_cells_in_its_warning(wh, tmp_path) -> None:
    values = [0.1] * 30
    values[5] = float("nan")
    sid = scoring.ingest_parquet(wh, _file(tmp_path, values), "partly")
    (warning,) = json.loads(
        wh.scalar("SELECT warnings FROM eval.submissions WHERE submission_id = ?", [sid])
    )
    assert warning["severity"] == "warning" and warning["count"] == 1
    assert warning["examples"] == ["firm=001001 target=revtq origin=2010Q1 horizon=6 component=0"]


def test_model_forecasts_pass_the_same_rules(wh) -> None:
    cells = truth_cells(wh).slice(0, 40)
    _refused(
        wh,
        lambda: scoring.ingest_forecasts(
            wh, "void model", forecasts_from(cells, [float("nan")] * 40)
        ),
        "no usable forecast",
    )
    _refused(
        wh,
        lambda: scoring.ingest_forecasts(wh, "dollar model", forecasts_from(cells, [1.5e6] * 40)),
        "raw reported units",
    )
    train = truth_cells(wh, "train").slice(0, 40)
    _refused(
        wh,
        lambda: scoring.ingest_forecasts(wh, "train model", forecasts_from(train, [0.1] * 40)),
        "no cell in the test split",
    )
    # In dollars, the same raw values are standardized in SQL and accepted.
    assert scoring.ingest_forecasts(
        wh,
        "dollars done right",
        forecasts_from(cells, [1.5e6] * 40).drop_columns(["sigma"]),
        space="dollars",
    )


def test_a_footprint_on_another_split_makes_that_split_scored(wh, tmp_path) -> None:
    wh.execute(
        "INSERT INTO eval.footprints (footprint_id, name, version, kind, split, created_at) "
        "VALUES (9999, 'validation', 1, 'predicate', 'val', now()::TIMESTAMP)"
    )
    try:
        assert scoring.ingest_parquet(
            wh, _file(tmp_path, [0.1] * 30, dt.date(2005, 3, 31)), "val only"
        )
    finally:
        wh.execute("DELETE FROM eval.footprints WHERE footprint_id = 9999")
