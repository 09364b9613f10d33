"""The parquet source: a valid raw panel, and one clear error for each kind of bad input."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from foundation_data import FIRMS, ITEMS, n_rows, panel_columns, write_panel

from proforma.app.sources import ingest
from proforma.app.sources.parquet import ParquetSource
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.errors import UserError, ValidationError

N = n_rows()


def _col(name: str) -> pa.Array:
    return panel_columns()[name]


def test_happy_path_derives_industry_and_links(wh: Warehouse, tmp_path: Path) -> None:
    path = write_panel(tmp_path / "panel.parquet")
    src = ParquetSource(path)
    result = ingest(wh, src)
    assert result.rows == {"fundq": N, "company_industry": N, "ccm_link": 2}
    assert wh.fetchone(
        "SELECT gvkey, datadate, fyearq, fqtr, fyr, acomincq, txbcofy FROM raw.fundq "
        "ORDER BY gvkey, datadate LIMIT 1"
    ) == ("001004", dt.date(2000, 3, 28), 2000, 1, None, 0.0, float(ITEMS.index("txbcofy") * 100))
    # One industry record per panel (gvkey, datadate), nulls kept.
    assert (
        wh.scalar(
            "SELECT count(*) FROM raw.company_industry WHERE gvkey = '012345' AND sich IS NULL"
        )
        == 8
    )
    assert wh.fetchall(
        "SELECT DISTINCT gvkey, sich FROM raw.company_industry WHERE sich IS NOT NULL ORDER BY 1"
    ) == [("001004", 5080), ("001045", 6020)]
    # One link per (gvkey, permno), spanning the rows that carry it; 001045 has none.
    assert wh.fetchall("SELECT * FROM raw.ccm_link ORDER BY gvkey") == [
        ("001004", 54594, "LC", "P", dt.date(2000, 3, 28), dt.date(2001, 12, 28)),
        ("012345", 10001, "LC", "P", dt.date(2000, 3, 28), dt.date(2001, 12, 28)),
    ]
    source, params = wh.one("SELECT source, parameters FROM raw.ingests")
    assert source == "parquet" and "panel.parquet" in params


def test_industry_and_link_files(wh: Warehouse, tmp_path: Path) -> None:
    panel = write_panel(tmp_path / "panel.parquet", sich=None, naicsh=None, permno=None)
    industry = tmp_path / "industry.parquet"
    pq.write_table(
        pa.table(
            {
                "gvkey": ["001004", "001004"],
                "datadate": [dt.date(1990, 12, 31), dt.date(2000, 12, 31)],
                "sich": [3571, 5080],
                "naicsh": [None, 423430],
            }
        ),
        industry,
    )
    links = tmp_path / "links.parquet"
    pq.write_table(
        pa.table(
            {
                "gvkey": ["001004", "001004", "012345"],
                "lpermno": [54594, 54595, 10001],
                "linktype": ["LC", "NR", "LU"],
                "linkprim": ["P", "P", "C"],
                "linkdt": [dt.date(1990, 1, 1)] * 3,
                "linkenddt": [None, None, dt.date(2001, 6, 30)],
            }
        ),
        links,
    )
    src = ParquetSource(panel, industry=industry, links=links)
    src.validate()
    assert any("1 of 3 link rows dropped" in n for n in src.notes)
    result = ingest(wh, src)
    assert result.rows == {"fundq": N, "company_industry": 2, "ccm_link": 2}
    assert wh.scalar("SELECT naicsh FROM raw.company_industry WHERE sich = 5080") == 423430
    assert wh.fetchall("SELECT gvkey, linkenddt FROM raw.ccm_link ORDER BY 1") == [
        ("001004", None),
        ("012345", dt.date(2001, 6, 30)),
    ]


def test_panel_without_permno_or_fyr_is_noted(wh: Warehouse, tmp_path: Path) -> None:
    panel = write_panel(
        tmp_path / "p.parquet", permno=None, naicsh=None, fyr=pa.array([12] * N, pa.int64())
    )
    src = ParquetSource(panel)
    src.validate()
    assert any("no permno column" in n for n in src.notes)
    assert ingest(wh, src).rows["ccm_link"] == 0
    assert wh.scalar("SELECT count(*) FROM raw.fundq WHERE fyr = 12") == N
    assert wh.scalar("SELECT count(*) FROM raw.company_industry WHERE naicsh IS NULL") == N


def _bad(tmp_path: Path, case: str) -> tuple[Path, dict]:
    """A bad input per case: (panel path, extra ParquetSource arguments)."""
    p = tmp_path / f"{case}.parquet"
    gv = _col("gvkey").to_pylist()
    dates = _col("datadate").to_pylist()
    if case == "missing_key":
        return write_panel(p, fqtr=None), {}
    if case == "missing_item":
        return write_panel(p, oancfy=None, atq=None), {}
    if case == "missing_sich":
        return write_panel(p, sich=None), {}
    if case == "int_gvkey":
        return write_panel(p, gvkey=pa.array([int(g) for g in gv], pa.int64())), {}
    if case == "short_gvkey":
        return write_panel(p, gvkey=pa.array([g.lstrip("0") for g in gv])), {}
    if case == "null_gvkey":
        return write_panel(p, gvkey=pa.array([None if i == 5 else g for i, g in enumerate(gv)])), {}
    if case == "text_item":
        return write_panel(p, atq=pa.array(["1.5" if i else "n/a" for i in range(N)])), {}
    if case == "text_date":
        return write_panel(
            p,
            datadate=pa.array(
                ["2001-13-45" if i == 3 else d.isoformat() for i, d in enumerate(dates)]
            ),
        ), {}
    if case == "int_date":
        return write_panel(p, datadate=pa.array([int(d.strftime("%Y%m%d")) for d in dates])), {}
    if case == "null_date":
        return write_panel(
            p, datadate=pa.array([None if i == 7 else d for i, d in enumerate(dates)], pa.date32())
        ), {}
    if case == "fqtr_range":
        return write_panel(p, fqtr=pa.array([5.0 if i == 2 else 1.0 + i % 4 for i in range(N)])), {}
    if case == "fyearq_fraction":
        return write_panel(p, fyearq=pa.array([2000.5] * N)), {}
    if case == "inf_item":
        return write_panel(p, ltq=pa.array([float("inf") if i == 9 else 1.0 for i in range(N)])), {}
    if case == "duplicates":
        cols = panel_columns()
        table = pa.table(cols)
        pq.write_table(pa.concat_tables([table, table.slice(4, 2)]), p)
        return p, {}
    if case == "not_parquet":
        p.write_text("gvkey,datadate\n001004,2001-03-31\n")
        return p, {}
    if case == "empty_file":
        p.write_bytes(b"")
        return p, {}
    if case == "corrupt":
        good = write_panel(tmp_path / "good.parquet").read_bytes()
        p.write_bytes(good[: len(good) // 2] + b"\0" * 64 + good[-64:])
        return p, {}
    if case == "no_rows":
        pq.write_table(pa.table(panel_columns()).slice(0, 0), p)
        return p, {}
    if case == "missing_file":
        return tmp_path / "nowhere.parquet", {}
    if case == "bad_industry":
        ind = tmp_path / "ind.parquet"
        pq.write_table(
            pa.table({"gvkey": [1004], "datadate": [dt.date(2000, 1, 1)], "sich": [5080]}), ind
        )
        return write_panel(p), {"industry": ind}
    if case == "bad_links":
        lk = tmp_path / "links.parquet"
        pq.write_table(
            pa.table({"gvkey": ["001004"], "lpermno": [1], "linkdt": [dt.date(2000, 1, 1)]}), lk
        )
        return write_panel(p), {"links": lk}
    raise AssertionError(case)


CASES = {
    # case: (pattern the one message must contain, a column it names or None)
    "missing_key": ("missing key column(s) fqtr", "fqtr"),
    "missing_item": ("missing item column(s)", "oancfy"),
    "missing_sich": ("missing industry column(s) sich", "sich"),
    "int_gvkey": ("column 'gvkey' is numeric", "lpad"),
    "short_gvkey": (
        "column 'gvkey' is not a 6-character code",
        "row 1: gvkey='1004', datadate=2000-03-28",
    ),
    "null_gvkey": ("column 'gvkey' is null", "row 6"),
    "text_item": ("column 'atq' has type VARCHAR, not a number", "atq='n/a'"),
    "text_date": ("column 'datadate' holds text that is not a date", "2001-13-45"),
    "int_date": ("column 'datadate' has type BIGINT, not a date", "20000328"),
    "null_date": ("column 'datadate' is null", "row 8"),
    "fqtr_range": ("column 'fqtr' lies outside 1..4", "fqtr=5.0"),
    "fyearq_fraction": ("column 'fyearq' holds non-integer values", "2000.5"),
    "inf_item": ("column 'ltq' holds infinite values", "row 10"),
    "duplicates": (
        "duplicate (gvkey, datadate, fyearq, fqtr) rows appear more than once",
        "4 row(s), e.g. row 5: gvkey='001004', datadate=2001-03-28",
    ),
    "not_parquet": ("is not a readable parquet file", None),
    "empty_file": ("is not a readable parquet file", None),
    "corrupt": ("is not a readable parquet file", None),
    "no_rows": ("holds no rows", None),
    "missing_file": ("does not exist", None),
    "bad_industry": ("ind.parquet: column 'gvkey' is numeric", None),
    "bad_links": ("missing link column(s) linktype, linkprim, linkenddt", None),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_one_clear_error_and_nothing_is_written(
    wh: Warehouse, tmp_path: Path, case: str
) -> None:
    ingest(wh, ParquetSource(write_panel(tmp_path / "first.parquet")))
    before = {
        t: wh.scalar(f"SELECT count(*) FROM raw.{t}")
        for t in ("fundq", "company_industry", "ccm_link", "ingests")
    }
    checksum = wh.scalar("SELECT checksum FROM raw.ingests")

    path, extra = _bad(tmp_path, case)
    pattern, detail = CASES[case]
    with pytest.raises(ValidationError) as info:
        ingest(wh, ParquetSource(path, **extra))
    message = str(info.value)
    assert pattern in message, message
    if detail:
        assert detail in message, message
    assert "\n" not in message and len(message) < 1200
    assert isinstance(info.value, UserError) and info.value.exit_code == 2

    after = {t: wh.scalar(f"SELECT count(*) FROM raw.{t}") for t in before}
    assert after == before
    assert wh.scalar("SELECT max(checksum) FROM raw.ingests") == checksum


def test_uppercase_names_and_extra_columns_are_accepted(wh: Warehouse, tmp_path: Path) -> None:
    cols = {k.upper() if k in ("gvkey", "datadate") else k: v for k, v in panel_columns().items()}
    cols["permco"] = pa.array([1] * N)
    cols["indfmt"] = pa.array(["INDL"] * N)
    path = tmp_path / "upper.parquet"
    pq.write_table(pa.table(cols), path)
    assert ingest(wh, ParquetSource(path)).rows["fundq"] == N
    assert wh.scalar("SELECT count(DISTINCT gvkey) FROM raw.fundq") == len(FIRMS)


def test_nan_is_a_missing_value(wh: Warehouse, tmp_path: Path) -> None:
    nan = float("nan")
    path = write_panel(
        tmp_path / "nan.parquet",
        atq=pa.array([nan if i % 2 else 5.0 for i in range(N)]),
        sich=pa.array([nan] * N),
        permno=pa.array([nan if i < 8 else 77.0 for i in range(N)]),
        fqtr=pa.array([nan if i == 0 else 1.0 + i % 4 for i in range(N)]),
    )
    ingest(wh, ParquetSource(path))
    assert wh.scalar("SELECT count(*) FROM raw.fundq WHERE atq IS NULL") == N // 2
    assert wh.scalar("SELECT count(*) FROM raw.fundq WHERE isnan(atq)") == 0
    assert wh.scalar("SELECT count(*) FROM raw.fundq WHERE fqtr IS NULL") == 1
    assert wh.scalar("SELECT count(*) FROM raw.company_industry WHERE sich IS NULL") == N
    assert wh.fetchall("SELECT DISTINCT lpermno FROM raw.ccm_link") == [(77,)]
