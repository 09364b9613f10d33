"""Submission ingest: the format, its aliases, and every hostile file (nothing written)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scoring_fixtures import forecasts_from, good_columns, module_warehouse, truth_cells

from proforma.app import scoring
from proforma.app.scoring.submissions.checks import BAD_SIGMA
from proforma.app.scoring.submissions.store import forecast_relation
from proforma.contracts.errors import UserError, ValidationError


@pytest.fixture(scope="module")
def wh(tmp_path_factory):
    w = module_warehouse(tmp_path_factory, "ingest")
    yield w
    w.close()


def _write(tmp_path: Path, cols: dict, name: str = "sub.parquet", **kw) -> Path:
    path = tmp_path / name
    pq.write_table(pa.table(cols), path, **kw)
    return path


def _counts(wh):
    return (
        wh.scalar("SELECT count(*) FROM eval.submissions"),
        wh.scalar("SELECT count(*) FROM eval.forecasts"),
        wh.scalar("SELECT count(*) FROM eval.submission_files"),
    )


def _rejected(wh, path, *fragments, name="bad", **kw):
    before = _counts(wh)
    with pytest.raises(ValidationError) as info:
        scoring.ingest_parquet(wh, path, name, **kw)
    assert _counts(wh) == before, "a rejected submission wrote something"
    text = " | ".join(p["problem"] for p in info.value.problems)
    for f in fragments:
        assert f in text, text
    for p in info.value.problems:
        assert set(p) >= {"problem", "count", "examples"}
    return info.value.problems


def test_good_file_with_aliases_and_quarter_strings(wh, tmp_path):
    cols = good_columns()
    cols["firm_id"] = cols.pop("firm")
    cols["quarter"] = [f"{o.year}Q{(o.month - 1) // 3 + 1}" for o in cols.pop("origin")]
    cols["forecast_horizon"] = cols.pop("horizon")
    cols["sigma"] = [0.5] * 40
    sid = scoring.ingest_parquet(wh, _write(tmp_path, cols), "aliases")
    rows = wh.fetchall(  # (a density file too is kept in the upload store)
        f"SELECT DISTINCT origin_q FROM {forecast_relation(wh, sid)} WHERE submission_id = ? "
        "ORDER BY 1",
        [sid],
    )
    assert [r[0] for r in rows] == [8040, 8041]
    sub = wh.fetchone(
        "SELECT rows, has_sigma, family, checksum FROM eval.submissions WHERE submission_id = ?",
        [sid],
    )
    assert sub[0] == 40 and sub[1] is True and sub[2] == "gaussian" and len(sub[3]) == 64


def test_any_instant_in_the_quarter_means_that_quarter(wh, tmp_path):
    cols = good_columns(20)
    cols["origin"] = pa.array([dt.datetime(2010, 2, 14, 13, 5)] * 20, pa.timestamp("us", "UTC"))
    sid = scoring.ingest_parquet(wh, _write(tmp_path, cols), "timestamps")
    assert (
        wh.scalar(
            f"SELECT max(origin_q) FROM {forecast_relation(wh, sid)} WHERE submission_id = ?",
            [sid],
        )
        == 8040
    )


def test_nan_and_inf_predictions_are_warnings_with_examples(wh, tmp_path):
    cols = good_columns()
    cols["prediction"][0] = float("nan")
    cols["prediction"][1] = float("inf")
    sid = scoring.ingest_parquet(wh, _write(tmp_path, cols), "warned")
    import json

    warnings = json.loads(
        wh.scalar("SELECT warnings FROM eval.submissions WHERE submission_id = ?", [sid])
    )
    assert [w["problem"].split(" ")[0] for w in warnings] == ["prediction"]
    assert warnings[0]["count"] == 2 and len(warnings[0]["examples"]) == 2
    assert "firm=001001 target=niq origin=2010Q1 horizon=1" in warnings[0]["examples"][0]


def test_missing_columns(wh, tmp_path):
    cols = good_columns()
    del cols["horizon"], cols["prediction"]
    _rejected(wh, _write(tmp_path, cols), "missing column(s): horizon, prediction")


@pytest.mark.parametrize(
    "column,values,fragment",
    [
        ("firm", list(range(40)), "column 'firm' is int64"),
        ("horizon", ["1"] * 40, "column 'horizon' is string"),
        ("prediction", ["0.5"] * 40, "column 'prediction' is string"),
        ("origin", list(range(40)), "column 'origin' is int64"),
        ("sigma", [True] * 40, "column 'sigma' is bool"),
    ],
)
def test_wrong_types(wh, tmp_path, column, values, fragment):
    cols = good_columns()
    cols[column] = values
    _rejected(wh, _write(tmp_path, cols), fragment)


def test_bad_values_are_all_reported_with_examples(wh, tmp_path):
    cols = good_columns()
    cols["horizon"] = [float(h) for h in cols["horizon"]]
    cols["horizon"][0] = 0.0
    cols["horizon"][1] = 21.0
    cols["horizon"][2] = 1.5
    cols["target"][3] = "no_such_item"
    cols["firm"][4] = "999999"
    cols["firm"][5] = None
    cols["origin"][6] = None
    cols["sigma"] = [0.5] * 40
    cols["sigma"][7] = 0.0
    cols["sigma"][8] = -1.0
    cols["sigma"][9] = 1e39  # finite and > 0, but no 32-bit float holds it
    cols["sigma"][10] = 1e-40  # a 32-bit float makes it 0
    problems = _rejected(
        wh,
        _write(tmp_path, cols),
        "horizon outside 1..20",
        "horizon is not an integer",
        "unknown target item",
        "unknown firm",
        "null key",
        "sigma missing, not finite, or outside [1.2e-38, 3.4e38]",
    )
    by = {p["problem"]: p for p in problems}
    assert by["horizon outside 1..20 "[:-1]]["count"] == 2
    assert by["horizon is not an integer"]["examples"][0].startswith("row 2:")
    assert by[BAD_SIGMA]["count"] == 4
    assert "no_such_item" in by["unknown target item (not one of the 78 items)"]["examples"][0]


def test_duplicate_keys_in_different_row_groups(wh, tmp_path):
    cols = good_columns()
    for k in cols:
        cols[k] = cols[k] + cols[k][:3]  # rows 40..42 repeat rows 0..2
    problems = _rejected(wh, _write(tmp_path, cols, row_group_size=20), "duplicate key")
    dup = next(p for p in problems if p["problem"].startswith("duplicate"))
    assert dup["count"] == 3
    assert "firm=001001" in dup["examples"][0]


def test_empty_zero_byte_corrupt_and_foreign_files(wh, tmp_path):
    empty = {k: pa.array(v[:0]) for k, v in good_columns().items()}
    _rejected(wh, _write(tmp_path, empty, "empty.parquet"), "no rows")
    zero = tmp_path / "zero.parquet"
    zero.write_bytes(b"")
    _rejected(wh, zero, "0 bytes")
    good = _write(tmp_path, good_columns(), "good.parquet").read_bytes()
    corrupt = tmp_path / "corrupt.parquet"
    corrupt.write_bytes(
        good[:8]
        + bytes(np.random.default_rng(0).integers(0, 255, 400, dtype=np.uint8))
        + good[-300:]
    )
    _rejected(wh, corrupt, "not a readable parquet file")
    csv = tmp_path / "forecasts.parquet"
    csv.write_text("firm,target,origin,horizon,prediction\n001001,revtq,2010Q1,1,0.5\n")
    _rejected(wh, csv, "not a readable parquet file")


def test_huge_strings(wh, tmp_path):
    cols = good_columns()
    cols["firm"][0] = "9" * 2_000_000
    cols["target"][1] = "x" * 100_000
    problems = _rejected(wh, _write(tmp_path, cols), "longer than 64")
    huge = next(p for p in problems if "64" in p["problem"])
    assert huge["count"] == 2
    assert all(len(e) < 400 for e in huge["examples"])


def test_family_and_names(wh, tmp_path):
    path = _write(tmp_path, good_columns())
    with pytest.raises(UserError, match="needs --df"):
        scoring.ingest_parquet(wh, path, "t", family="student_t")
    with pytest.raises(UserError, match="Unknown family"):
        scoring.ingest_parquet(wh, path, "t", family="cauchy")
    scoring.ingest_parquet(wh, path, "twice")
    with pytest.raises(UserError, match="exists"):
        scoring.ingest_parquet(wh, path, "twice")
    new = scoring.ingest_parquet(wh, path, "twice", replace=True)
    assert wh.fetchall(
        "SELECT submission_id FROM eval.submissions WHERE name = 'twice' AND retired_at IS NULL"
    ) == [(new,)]


def _batch(n=30, **over):
    cols = {
        "firm_id": pa.array([1 + i % 3 for i in range(n)], pa.int32()),
        "origin_q": pa.array([8040] * n, pa.int32()),
        "item_id": pa.array([1 + i // 20 for i in range(n)], pa.int16()),
        "horizon": pa.array([i % 20 + 1 for i in range(n)], pa.int8()),
        "mu": pa.array([0.1] * n, pa.float64()),
    }
    cols.update(over)
    return pa.RecordBatch.from_pydict(cols)


def test_model_batches_are_checked_on_integer_keys(wh):
    before = _counts(wh)
    for bad, fragment in [
        ({"firm_id": pa.array([999] * 30, pa.int32())}, "unknown firm_id"),
        ({"horizon": pa.array([21] * 30, pa.int8())}, "horizon outside"),
        ({"item_id": pa.array([500] * 30, pa.int16())}, "unknown item_id"),
        ({"sigma": pa.array([-1.0] * 30)}, "sigma missing, not finite"),
        ({"sigma": pa.array([0.5] * 29 + [1e39])}, "outside [1.2e-38, 3.4e38]"),
        ({"mu": pa.array(["a"] * 30)}, "wrong type or value in column mu"),
    ]:
        with pytest.raises(ValidationError) as info:
            scoring.ingest_forecasts(wh, "bad model", [_batch(**bad)])
        assert fragment in str(info.value.problems)
    # Duplicates across batches.
    with pytest.raises(ValidationError, match="duplicate key"):
        scoring.ingest_forecasts(wh, "dup model", [_batch(), _batch()])
    assert _counts(wh) == before
    sid = scoring.ingest_forecasts(wh, "ok model", iter([_batch(), _batch().slice(0, 0)]))
    assert wh.scalar("SELECT rows FROM eval.submissions WHERE submission_id = ?", [sid]) == 30


def test_lazy_model_batches_run_in_the_callers_thread_and_a_late_error_writes_nothing(wh):
    import threading

    ran_in: set[str] = set()

    def lazy(bad_last: bool):
        for i in range(3):
            ran_in.add(threading.current_thread().name)  # the model's work happens here
            if bad_last and i == 2:
                yield _batch(mu=pa.array(["x"] * 30)).slice(0, 30)
            else:
                yield _batch(origin_q=pa.array([8040 + i] * 30, pa.int32()))

    before = _counts(wh)
    with pytest.raises(ValidationError, match="wrong type or value in column mu"):
        scoring.ingest_forecasts(wh, "lazy bad", lazy(bad_last=True))
    assert _counts(wh) == before  # two good batches came first; nothing was kept
    sid = scoring.ingest_forecasts(wh, "lazy good", lazy(bad_last=False))
    assert wh.scalar("SELECT rows FROM eval.submissions WHERE submission_id = ?", [sid]) == 90
    assert ran_in == {threading.main_thread().name}
    from proforma.app.store.settings import get_settings

    assert not list(get_settings().temp_directory.glob("forecasts-*.arrows"))


def test_dollar_forecasts_are_standardized_like_the_truth(wh):
    """A model forecasting in dollars (space='dollars') that names the realized value gets
    exactly the truth's standardized level, clip included; a non-origin gets no value."""
    cells = wh.arrow(
        "SELECT t.firm_id, t.origin_q, t.item_id, t.horizon, t.actual, v.v AS dollars "
        "FROM panel.truth AS t JOIN panel.values AS v ON v.firm_id = t.firm_id "
        "AND v.q = t.origin_q + t.horizon AND v.item_id = t.item_id WHERE t.split = 'test' "
        "ORDER BY ALL LIMIT 400"
    )
    batch = forecasts_from(cells, cells["dollars"]).drop_columns(["sigma"])
    stray = pa.table(
        {
            "firm_id": pa.array([1], pa.int32()),
            "origin_q": pa.array([7000], pa.int32()),
            "item_id": cells["item_id"].slice(0, 1),
            "horizon": pa.array([1], pa.int8()),
            "component": pa.array([0], pa.int16()),
            "mu": pa.array([1.0]),
        }
    )
    sid = scoring.ingest_forecasts(
        wh, "in dollars", pa.concat_tables([batch, stray]), space="dollars"
    )
    got = wh.arrow(
        "SELECT firm_id, origin_q, item_id, horizon, mu FROM eval.forecasts "
        "WHERE submission_id = ? ORDER BY ALL",
        [sid],
    ).to_pylist()
    assert len(got) == cells.num_rows + 1
    stored = {(r["firm_id"], r["origin_q"], r["item_id"], r["horizon"]): r["mu"] for r in got}
    assert stored[(1, 7000, cells["item_id"][0].as_py(), 1)] is None
    for c in cells.to_pylist():
        key = (c["firm_id"], c["origin_q"], c["item_id"], c["horizon"])
        assert stored[key] == pytest.approx(c["actual"], abs=1e-9)
    meta = wh.scalar("SELECT metadata FROM eval.submissions WHERE submission_id = ?", [sid])
    assert "dollars" in meta


def test_dollar_forecasts_with_sigma_or_unknown_space_are_refused(wh):
    cells = truth_cells(wh).slice(0, 5)
    before = _counts(wh)
    with pytest.raises(UserError, match="carry no sigma"):
        scoring.ingest_forecasts(
            wh, "bad dollars", forecasts_from(cells, cells["actual"], [1.0] * 5), space="dollars"
        )
    with pytest.raises(UserError, match="Unknown forecast space"):
        scoring.ingest_forecasts(
            wh, "bad space", forecasts_from(cells, cells["actual"]), space="euros"
        )
    assert _counts(wh) == before


def test_published_package_files_as_written(wh, tmp_path, monkeypatch):
    """A submission as the published package writes it: dictionary-encoded firm and target,
    origin at the quarter's last nanosecond, int64 horizon, float32 prediction and sigma,
    its family in a {stem}.nll.json sidecar (read by `proforma submit` without --family)."""
    from typer.testing import CliRunner

    from proforma.app.cli import app as cli_app
    from proforma.app.scoring.submissions.uploads import family_sidecar

    cols = good_columns(40)
    table = pa.table(
        {
            "firm": pa.array(cols["firm"]).dictionary_encode(),
            "target": pa.array(cols["target"]).dictionary_encode(),
            "origin": pa.array(
                [dt.datetime(d.year, d.month, d.day, 23, 59, 59, 999999) for d in cols["origin"]],
                pa.timestamp("ns"),
            ),
            "horizon": pa.array(cols["horizon"], pa.int64()),
            "prediction": pa.array(cols["prediction"], pa.float32()),
            "sigma": pa.array([0.7] * 40, pa.float32()),
        }
    )
    path = tmp_path / "mine__predictions.parquet"
    pq.write_table(table, path)
    assert family_sidecar(path) is None
    (tmp_path / "mine__predictions.nll.json").write_text('{"family": "student_t", "df": 5.0}')
    assert family_sidecar(path) == ("student_t", 5.0)
    sid = scoring.ingest_parquet(wh, path, "package file", family="student_t", df=5.0)
    got = wh.fetchall(
        f"SELECT DISTINCT origin_q FROM {forecast_relation(wh, sid)} WHERE submission_id = ? "
        "ORDER BY 1",
        [sid],
    )
    assert [r[0] for r in got] == [8040, 8041]
    # the CLI reads the sidecar itself
    monkeypatch.setattr("proforma.app.cli.score.writer", lambda: _Borrowed(wh))
    res = CliRunner().invoke(cli_app, ["submit", str(path), "--name", "package file via cli"])
    assert res.exit_code == 0, res.output
    assert wh.fetchone(
        "SELECT family, df FROM eval.submissions WHERE name = 'package file via cli'"
    ) == ("student_t", 5.0)
    (tmp_path / "mine__predictions.nll.json").write_text('{"family": "cauchy"}')
    with pytest.raises(UserError, match="Unknown family"):
        family_sidecar(path)
    (tmp_path / "mine__predictions.nll.json").write_text("{not json")
    with pytest.raises(UserError, match="Cannot read the family sidecar"):
        family_sidecar(path)


class _Borrowed:
    """The module's warehouse handed to a CLI command as its writer (not closed by it)."""

    def __init__(self, wh):
        self.wh = wh

    def __enter__(self):
        return self.wh

    def __exit__(self, *exc):
        return False


def _keys_batch(keys: list[tuple[int, int, int, int, int]]) -> pa.RecordBatch:
    firm, origin, item, horizon, component = (list(c) for c in zip(*keys, strict=True))
    return pa.RecordBatch.from_pydict(
        {
            "firm_id": pa.array(firm, pa.int32()),
            "origin_q": pa.array(origin, pa.int32()),
            "item_id": pa.array(item, pa.int16()),
            "horizon": pa.array(horizon, pa.int8()),
            "component": pa.array(component, pa.int16()),
            "mu": pa.array([0.1] * len(keys), pa.float64()),
        }
    )


def test_duplicate_check_is_exact(wh):
    """030 finds repeated keys with 64-bit masks per (firm, origin, component, item pair)
    and 031 counts them: every key of a dense block is distinct (no false alarm from keys
    sharing a mask), and each repeated key counts once however often it repeats."""
    items = sorted(r[0] for r in wh.fetchall("SELECT item_id FROM ref.items WHERE is_target"))
    firms = sorted(r[0] for r in wh.fetchall("SELECT firm_id FROM panel.firms"))[:2]
    dense = [
        (f, 8040 + o, i, h, c)
        for f in firms
        for o in range(2)
        for i in items
        for h in range(1, 21)
        for c in range(2)
    ]
    sid = scoring.ingest_forecasts(wh, "dense keys", [_keys_batch(dense)])
    assert wh.scalar("SELECT rows FROM eval.submissions WHERE submission_id = ?", [sid]) == len(
        dense
    )
    rng = np.random.default_rng(3)
    for trial in range(3):
        picks = rng.choice(len(dense), size=7, replace=False)
        repeats = [dense[p] for p in picks] + [dense[picks[0]]] * trial  # one key thrice
        before = _counts(wh)
        with pytest.raises(ValidationError) as info:
            scoring.ingest_forecasts(wh, "repeated keys", [_keys_batch(dense + repeats)])
        assert _counts(wh) == before
        dup = next(p for p in info.value.problems if p["problem"].startswith("duplicate"))
        assert dup["count"] == 7
        assert len(dup["examples"]) == 3


def test_out_of_memory_is_not_called_an_unreadable_file(wh, tmp_path, monkeypatch):
    """A DuckDB memory error while loading propagates as itself (the CLI and the service
    explain it as the machine's limit), with nothing written."""
    import duckdb

    path = _write(tmp_path, good_columns())
    real = type(wh).run_step

    def failing(self, step, *args, **kwargs):
        if "_submission_insert" in str(step) or "_upload_cells" in str(step):  # 020, 022
            raise duckdb.OutOfMemoryException("failed to allocate data of size 64.0 MiB")
        return real(self, step, *args, **kwargs)

    monkeypatch.setattr(type(wh), "run_step", failing)
    before = _counts(wh)
    with pytest.raises(duckdb.OutOfMemoryException):
        scoring.ingest_parquet(wh, path, "oom")
    assert _counts(wh) == before
