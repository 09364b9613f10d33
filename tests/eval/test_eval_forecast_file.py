"""A submission's forecasts written as the published submission file (issue 52,
app/flows/forecast_file.py): an in-house density model (with its family sidecar), a
mixture, a quantile forecast and an upload kept in the upload store, each read back in by the
one reader into the same forecasts; `proforma export --submission`; bad requests."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scoring_fixtures import forecasts_from, make_panel, module_warehouse, truth_cells
from typer.testing import CliRunner

from proforma.app.flows.forecast_file import write_forecast_file
from proforma.app.scoring import ingest_forecasts
from proforma.app.scoring.submissions.uploads import family_sidecar, ingest_parquet
from proforma.app.store.settings import Settings
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.errors import UserError

KEYS = ["firm", "target", "origin", "horizon"]


@pytest.fixture(scope="module")
def wh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Warehouse]:
    w = module_warehouse(tmp_path_factory, "forecast-file")
    cells = truth_cells(w)
    n = cells.num_rows
    mu = np.asarray(cells["baseline"].to_numpy(zero_copy_only=False), float)
    ingest_forecasts(
        w, "house-t", forecasts_from(cells, mu, np.full(n, 0.7)), family="student_t", df=5.0
    )
    mix = pa.concat_tables(
        [
            forecasts_from(cells, mu - 0.2, np.full(n, 0.5), 0),
            forecasts_from(cells, mu + 0.2, np.full(n, 0.5), 1),
        ]
    )
    ingest_forecasts(w, "house-mix", mix, family="laplace")
    yield w
    w.close()


def _stored(wh: Warehouse, name: str) -> pa.Table:
    """A submission's forecasts as it holds them (its file written out, keys at the edge)."""
    return pq.read_table(write_forecast_file(wh, name, wh.path.parent / f"{name}-x.parquet").path)


@pytest.mark.parametrize(
    "name, columns, sidecar",
    [
        ("house-t", [*KEYS, "prediction", "sigma"], {"family": "student_t", "df": 5.0}),
        ("house-mix", [*KEYS, "prediction", "sigma", "component"], {"family": "laplace"}),
    ],
)
def test_in_house_forecasts_come_out_and_go_back_in(
    wh: Warehouse, tmp_path: Path, name: str, columns: list[str], sidecar: dict
) -> None:
    out = tmp_path / f"{name}.parquet"
    written = write_forecast_file(wh, name, out)
    table = pq.read_table(out)
    assert table.column_names == columns and written.rows == table.num_rows > 0
    assert table.schema.field("origin").type == pa.timestamp("us")
    assert table.schema.field("prediction").type == pa.float64()  # the numbers scored
    assert json.loads(out.with_name(f"{name}.nll.json").read_text()) == sidecar
    # the file is a submission: the one reader takes it, family from its sidecar, and
    # holds the same forecasts
    family, df = family_sidecar(out) or ("gaussian", None)
    ingest_parquet(wh, out, f"{name}-again", family=family, df=df)
    again = _stored(wh, f"{name}-again")
    assert again.sort_by([(c, "ascending") for c in columns]).equals(
        table.sort_by([(c, "ascending") for c in columns])
    )


def test_a_stored_upload_and_a_quantile_forecast(wh: Warehouse, tmp_path: Path) -> None:
    point = pq.read_table(write_forecast_file(wh, "house-t", tmp_path / "t.parquet").path)
    point = point.drop_columns(["sigma"])
    pq.write_table(point, tmp_path / "point.parquet")
    ingest_parquet(wh, tmp_path / "point.parquet", "upload-point")  # kept in the upload store
    back = pq.read_table(write_forecast_file(wh, "upload-point", tmp_path / "p.parquet").path)
    assert back.equals(point) and not (tmp_path / "p.nll.json").exists()
    levels = [0.1, 0.5, 0.9]
    grid = pa.concat_tables(
        [
            point.append_column("quantile_level", pa.array([q] * point.num_rows)).set_column(
                4, "prediction", pa.array(np.asarray(point["prediction"]) + (q - 0.5))
            )
            for q in levels
        ]
    )
    pq.write_table(grid, tmp_path / "grid.parquet")
    ingest_parquet(wh, tmp_path / "grid.parquet", "upload-grid")
    out = write_forecast_file(wh, "upload-grid", tmp_path / "g.parquet")
    assert out.columns == [*KEYS, "prediction", "quantile_level"] and out.sidecar is None
    assert sorted(set(pq.read_table(out.path)["quantile_level"].to_pylist())) == levels


def test_bad_requests_write_nothing(wh: Warehouse, tmp_path: Path) -> None:
    with pytest.raises(UserError, match="No submission named 'nope'"):
        write_forecast_file(wh, "nope", tmp_path / "n.parquet")
    with pytest.raises(UserError, match="must end in .parquet"):
        write_forecast_file(wh, "house-t", tmp_path / "n.csv")
    assert list(tmp_path.iterdir()) == []


def test_the_export_command(settings: Settings, tmp_path: Path) -> None:
    """`proforma export FILE --submission ID|NAME` on a warehouse of its own."""
    from proforma.app.cli import app
    from proforma.app.flows.warehouse import prepare
    from proforma.app.store.warehouse import connect

    with connect(settings) as own:
        prepare(own)
        make_panel(own, n_firms=3)
        cells = truth_cells(own)
        mu = np.asarray(cells["baseline"].to_numpy(zero_copy_only=False), float)
        sid = ingest_forecasts(own, "house-point", forecasts_from(cells, mu))
    runner = CliRunner()
    out = tmp_path / "by-id.parquet"
    done = runner.invoke(app, ["export", str(out), "--submission", str(sid)])
    assert done.exit_code == 0, done.output
    assert pq.read_metadata(out).num_rows == cells.num_rows
    assert not out.with_name("by-id.nll.json").exists()  # a point forecast has no family
    by_name = runner.invoke(
        app, ["export", str(tmp_path / "n.parquet"), "--submission", "house-point"]
    )
    assert by_name.exit_code == 0 and (tmp_path / "n.parquet").exists()
    missing = runner.invoke(app, ["export", str(tmp_path / "x.parquet"), "--submission", "nope"])
    # (the command line prints a UserError as one line, exit 2: proforma.app.cli._run)
    assert isinstance(missing.exception, UserError) and "No submission named" in str(
        missing.exception
    )
    assert not (tmp_path / "x.parquet").exists()
