"""Files that used to get an internal error or a silent choice (issue 34, item 5): duplicate
and ambiguous column names are refused, unknown columns are warned about with a close
match, a time-zone-aware origin belongs to its local date's quarter, and a degenerate
quantile forecast is refused."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scoring_fixtures import good_columns, module_warehouse

from proforma.app import scoring
from proforma.app.scoring.submissions.store import forecast_relation
from proforma.app.scoring.submissions.uploads import column_report
from proforma.contracts.errors import ValidationError


@pytest.fixture(scope="module")
def wh(tmp_path_factory):
    w = module_warehouse(tmp_path_factory, "bad_files")
    yield w
    w.close()


def _file(tmp_path: Path, names: list[str], columns: list) -> Path:
    path = tmp_path / "f.parquet"
    pq.write_table(pa.Table.from_arrays([pa.array(c) for c in columns], names=names), path)
    return path


def _count(wh) -> int:
    return int(wh.scalar("SELECT count(*) FROM eval.submissions"))


@pytest.mark.parametrize(
    ("rename", "extra", "message"),
    [
        ("prediction", "prediction", "duplicate column name 'prediction' (2 columns)"),
        ("prediction", "Prediction", "ambiguous columns 'prediction' and 'Prediction'"),
        ("firm", "firm_id", "ambiguous columns 'firm' and 'firm_id': they all mean firm"),
        ("origin", "quarter", "ambiguous columns 'origin' and 'quarter'"),
    ],
)
def test_duplicate_and_ambiguous_columns_are_refused(wh, tmp_path, rename, extra, message):
    cols = good_columns()
    names = [*cols, extra]
    path = _file(tmp_path, names, [*cols.values(), cols[rename]])
    before = _count(wh)
    with pytest.raises(ValidationError) as info:
        scoring.ingest_parquet(wh, path, "dup")
    assert message in str(info.value.problems), info.value.problems
    assert _count(wh) == before


def test_unknown_columns_are_warned_with_a_close_match(wh, tmp_path):
    cols = good_columns()
    path = _file(tmp_path, [*cols, "sigme", "notes"], [*cols.values(), [0.5] * 40, ["x"] * 40])
    sid = scoring.ingest_parquet(wh, path, "typo")
    warnings = json.loads(
        wh.scalar("SELECT warnings FROM eval.submissions WHERE submission_id = ?", [sid])
    )
    texts = [w["problem"] for w in warnings]
    assert "unknown column 'sigme' ignored (did you mean 'sigma'?)" in texts
    assert "unknown column 'notes' ignored" in texts
    assert all(w["severity"] == "warning" for w in warnings)
    # (no close match is offered for a column the file already has)
    assert column_report(["sigma", "sigme"])[1] == ["unknown column 'sigme' ignored"]


@pytest.mark.parametrize(
    ("tz", "local", "quarter"),
    [
        # 2011-01-01 04:00 UTC is 2010-12-31 23:00 in New York: 2010Q4 there.
        ("America/New_York", dt.datetime(2011, 1, 1, 4, 0), 8043),
        ("-05:00", dt.datetime(2011, 1, 1, 4, 0), 8043),
        # 2010-12-31 20:00 UTC is 2011-01-01 01:00 at +05:00: 2011Q1 there.
        ("+05:00", dt.datetime(2010, 12, 31, 20, 0), 8044),
        ("UTC", dt.datetime(2011, 1, 1, 4, 0), 8044),
    ],
)
def test_time_zone_aware_origins_take_their_local_date(wh, tmp_path, tz, local, quarter):
    cols = good_columns(20)
    instant = local.replace(tzinfo=dt.UTC)
    cols["origin"] = pa.array([instant] * 20, pa.timestamp("us", tz))
    path = tmp_path / "tz.parquet"
    pq.write_table(pa.table(cols), path)
    sid = scoring.ingest_parquet(wh, path, f"tz {tz}")
    assert wh.scalar(
        f"SELECT list(DISTINCT origin_q) FROM {forecast_relation(wh, sid)} WHERE submission_id = ?",
        [sid],
    ) == [quarter]
    # The same local time as text lands in the same quarter.
    text = good_columns(20)
    text["origin"] = [f"{(instant.astimezone(_zone(tz))):%Y-%m-%d %H:%M}"] * 20
    path2 = tmp_path / "text.parquet"
    pq.write_table(pa.table(text), path2)
    sid2 = scoring.ingest_parquet(wh, path2, f"text {tz}")
    assert wh.scalar(
        f"SELECT list(DISTINCT origin_q) FROM {forecast_relation(wh, sid2)} "
        "WHERE submission_id = ?",
        [sid2],
    ) == [quarter]


def _zone(tz: str) -> dt.tzinfo:
    from zoneinfo import ZoneInfo

    if tz[0] in "+-":
        sign = 1 if tz[0] == "+" else -1
        hours, minutes = int(tz[1:3]), int(tz[4:6])
        return dt.timezone(sign * dt.timedelta(hours=hours, minutes=minutes))
    return ZoneInfo(tz)


def test_unknown_time_zone_is_refused(wh, tmp_path):
    cols = good_columns(20)
    cols["origin"] = pa.array([dt.datetime(2011, 1, 1)] * 20, pa.timestamp("us", "Mars/Olympus"))
    path = tmp_path / "mars.parquet"
    pq.write_table(pa.table(cols), path)
    with pytest.raises(ValidationError, match="time zone 'Mars/Olympus' is unknown"):
        scoring.ingest_parquet(wh, path, "mars")


def test_degenerate_quantile_levels_are_refused(wh, tmp_path):
    cols = good_columns(20)
    rows = {k: v * 3 for k, v in cols.items()}
    rows["quantile_level"] = [0.1] * 20 + [0.5] * 20 + [0.5 + 1e-12] * 20
    rows["prediction"] = [-1.0] * 20 + [0.0] * 20 + [0.0] * 20
    path = tmp_path / "q.parquet"
    pq.write_table(pa.table(rows), path)
    before = _count(wh)
    with pytest.raises(ValidationError) as info:
        scoring.ingest_parquet(wh, path, "degenerate")
    assert "degenerate quantile forecast: levels 0.5 and 0.500000000001" in str(info.value)
    assert _count(wh) == before
