"""Steps 010-070 on hand-made raw rows: trim, exclusion, dedup, YTD, computed items, FF48,
deflator. Every expected value below is computed by hand from the inserted rows."""

from __future__ import annotations

import math

import pytest

from tests.build.conftest import insert_fundq, qdate, run_steps


def items(wh, gvkey: str) -> dict[int, dict]:
    tab = wh.arrow("SELECT * FROM stage.fq_items WHERE gvkey = ? ORDER BY q", [gvkey]).to_pylist()
    return {r["q"]: r for r in tab}


def q(year: int, quarter: int) -> int:
    return year * 4 + quarter - 1


def _links_and_industries(wh) -> None:
    rows = []
    for gv in ("000001", "000002", "000003", "000004"):
        for yr, qt in [(1999, 4), (2000, 1), (2000, 2), (2000, 3), (2000, 4), (2001, 1)]:
            rows.append(
                {
                    "gvkey": gv,
                    "datadate": qdate(yr, qt),
                    "fyearq": yr,
                    "fqtr": qt,
                    "fyr": 12,
                    "atq": 1.0,
                }
            )
    insert_fundq(wh, rows)
    # 000001 linked 2000-01-01..2000-12-31; 000002 absent (kept whole);
    # 000003 two windows, the second open-ended.
    wh.execute("""INSERT INTO raw.ccm_link VALUES
        ('000001', 1, 'LU', 'P', DATE '2000-01-01', DATE '2000-12-31'),
        ('000003', 3, 'LC', 'C', NULL, DATE '1999-12-31'),
        ('000003', 3, 'LU', 'P', DATE '2000-09-01', NULL)""")
    # 000004: financial (6500) until 2000-06-30, then 3500; 000002: missing sich (kept).
    wh.execute("""INSERT INTO raw.company_industry VALUES
        ('000004', DATE '1990-01-01', 6500, NULL), ('000004', DATE '2000-07-01', 3500, NULL),
        ('000001', DATE '1990-01-01', 2000, NULL), ('000003', DATE '1990-01-01', 2000, NULL)""")


def test_link_window_trim_and_financial_exclusion(wh):
    _links_and_industries(wh)
    run_steps(wh, "050")
    assert sorted(items(wh, "000001")) == [q(2000, 1), q(2000, 2), q(2000, 3), q(2000, 4)]
    assert len(items(wh, "000002")) == 6
    assert sorted(items(wh, "000003")) == [q(1999, 4), q(2000, 3), q(2000, 4), q(2001, 1)]
    assert sorted(items(wh, "000004")) == [q(2000, 3), q(2000, 4), q(2001, 1)]
    assert items(wh, "000002")[q(2000, 1)]["sich"] is None


def test_duplicate_calendar_quarters_keep_highest_fiscal(wh):
    insert_fundq(
        wh,
        [
            # Fiscal-year change: two rows fall in calendar 2000Q4.
            {
                "gvkey": "000007",
                "datadate": qdate(2000, 4),
                "fyearq": 2000,
                "fqtr": 4,
                "fyr": 12,
                "atq": 1.0,
            },
            {
                "gvkey": "000007",
                "datadate": qdate(2000, 4).replace(day=30, month=11),
                "fyearq": 2001,
                "fqtr": 1,
                "fyr": 11,
                "atq": 2.0,
            },
            {
                "gvkey": "000007",
                "datadate": qdate(2000, 3),
                "fyearq": 2000,
                "fqtr": 3,
                "fyr": 12,
                "atq": 3.0,
            },
        ],
    )
    run_steps(wh, "050")
    got = items(wh, "000007")
    assert sorted(got) == [q(2000, 3), q(2000, 4)]
    assert got[q(2000, 4)]["atq"] == 2.0


def test_ytd_conversion_gaps_and_fiscal_year_change(wh):
    rows = [
        # FY2000: Q1 10, Q2 25 (-> 15), Q3 missing row, Q4 60 (-> missing: previous row is Q2).
        (2000, 1, 2000, 1, 10.0),
        (2000, 2, 2000, 2, 25.0),
        (2000, 4, 2000, 4, 60.0),
        # FY2001: Q1 passes through (never differenced against FY2000 Q4), Q2 = 7 - 5.
        (2001, 1, 2001, 1, 5.0),
        (2001, 2, 2001, 2, 7.0),
        # Q3 row exists but its YTD is missing: Q3 missing and Q4 = missing - 9 = missing.
        (2001, 3, 2001, 3, None),
        (2001, 4, 2001, 4, 9.0),
    ]
    insert_fundq(
        wh,
        [
            {
                "gvkey": "000005",
                "datadate": qdate(y, c),
                "fyearq": fy,
                "fqtr": fq,
                "fyr": 12,
                "atq": 1.0,
                "oancfy": v,
                "capxy": 1.0 * fq,
            }
            for y, c, fy, fq, v in rows
        ],
    )
    run_steps(wh, "050")
    got = items(wh, "000005")
    oancfq = [got[k]["oancfq"] for k in sorted(got)]
    assert oancfq == [10.0, 15.0, None, 5.0, 2.0, None, None]
    # capxy = fqtr: Q1 1, then 1 per quarter except after the gap (FY2000 Q4).
    assert [got[k]["capxq"] for k in sorted(got)] == [1.0, 1.0, None, 1.0, 1.0, 1.0, 1.0]
    # fcfq = oancfq - capxq, missing when either is missing.
    assert [got[k]["fcfq"] for k in sorted(got)] == [9.0, 14.0, None, 4.0, 1.0, None, None]


def test_ytd_across_a_fiscal_year_change(wh):
    # fyr 12 until FY2000, then fyr 6: FY2001 starts at 2001Q1 (fqtr 3 of the new year's
    # numbering is irrelevant: differencing needs the previous row of the SAME fyearq).
    insert_fundq(
        wh,
        [
            {
                "gvkey": "000006",
                "datadate": qdate(2000, 3),
                "fyearq": 2000,
                "fqtr": 3,
                "fyr": 12,
                "atq": 1.0,
                "dvy": 30.0,
            },
            {
                "gvkey": "000006",
                "datadate": qdate(2000, 4),
                "fyearq": 2000,
                "fqtr": 4,
                "fyr": 12,
                "atq": 1.0,
                "dvy": 40.0,
            },
            {
                "gvkey": "000006",
                "datadate": qdate(2001, 1),
                "fyearq": 2001,
                "fqtr": 3,
                "fyr": 6,
                "atq": 1.0,
                "dvy": 12.0,
            },
            {
                "gvkey": "000006",
                "datadate": qdate(2001, 2),
                "fyearq": 2001,
                "fqtr": 4,
                "fyr": 6,
                "atq": 1.0,
                "dvy": 20.0,
            },
        ],
    )
    run_steps(wh, "050")
    got = items(wh, "000006")
    # 2000Q3 (fqtr 3, no fqtr 2 row) missing; 2000Q4 = 40 - 30; 2001Q1 (fqtr 3 of FY2001,
    # no FY2001 fqtr 2) missing: never 12 - 40 across the boundary; 2001Q2 = 20 - 12.
    assert [got[k]["dvq"] for k in sorted(got)] == [None, 10.0, None, 8.0]


def test_computed_items_and_carve_outs(wh):
    insert_fundq(
        wh,
        [
            {
                "gvkey": "000008",
                "datadate": qdate(2000, 1),
                "fyearq": 2000,
                "fqtr": 1,
                "fyr": 12,
                "revtq": 10.0,
                "cogsq": 4.0,
                "actq": 8.0,
                "lctq": 3.0,
                "aoq": 5.0,
                "intanq": None,
                "loq": 7.0,
                "drltq": 2.0,
                "xsgaq": None,
                "xrdq": 1.0,
            },
            {
                "gvkey": "000008",
                "datadate": qdate(2000, 2),
                "fyearq": 2000,
                "fqtr": 2,
                "fyr": 12,
                "revtq": 10.0,
                "cogsq": None,
                "aoq": 5.0,
                "intanq": 1.5,
                "xsgaq": 6.0,
                "xrdq": None,
                "oancfy": float("nan"),
            },
        ],
    )
    run_steps(wh, "050")
    a, b = (items(wh, "000008")[q(2000, c)] for c in (1, 2))
    assert (a["gpq"], a["wcapq"], a["aoq_ex_intanq"], a["loq_ex_dr"], a["xsgaq_ex_rd"]) == (
        6.0,
        5.0,
        5.0,
        5.0,
        None,
    )
    assert (b["gpq"], b["aoq_ex_intanq"], b["xsgaq_ex_rd"], b["oancfq"]) == (None, 3.5, 6.0, None)


def test_ff48_modal_sic_and_deflator(wh):
    dates = [qdate(2000, c) for c in (1, 2, 3, 4)]
    insert_fundq(
        wh,
        [
            {
                "gvkey": "000009",
                "datadate": dates[0],
                "fyearq": 2000,
                "fqtr": 1,
                "fyr": 12,
                "ltq": -3.0,
                "seqq": 2.0,
                "atq": 9.0,
            },
            {
                "gvkey": "000009",
                "datadate": dates[1],
                "fyearq": 2000,
                "fqtr": 2,
                "fyr": 12,
                "ltq": 3.0,
                "atq": -9.0,
            },
            {
                "gvkey": "000009",
                "datadate": dates[2],
                "fyearq": 2000,
                "fqtr": 3,
                "fyr": 12,
                "ltq": 3.0,
            },
            {
                "gvkey": "000009",
                "datadate": dates[3],
                "fyearq": 2000,
                "fqtr": 4,
                "fyr": 12,
                "seqq": float("inf"),
                "ltq": 1.0,
                "atq": 4.0,
            },
            {
                "gvkey": "000011",
                "datadate": dates[0],
                "fyearq": 2000,
                "fqtr": 1,
                "fyr": 12,
                "atq": 1.0,
            },
            {
                "gvkey": "000011",
                "datadate": dates[1],
                "fyearq": 2000,
                "fqtr": 2,
                "fyr": 12,
                "atq": 1.0,
            },
            {
                "gvkey": "000012",
                "datadate": dates[0],
                "fyearq": 2000,
                "fqtr": 1,
                "fyr": 12,
                "atq": 1.0,
            },
        ],
    )
    # 000009: sich 2834 twice, 3571 twice (tie -> 2834, FF48 13 Drugs);
    # 000011: 9999 (no FF48 range -> 49); 000012: no record -> 49.
    wh.execute("""INSERT INTO raw.company_industry VALUES
        ('000009', DATE '1999-01-01', 3571, NULL), ('000009', DATE '2000-04-01', 2834, NULL),
        ('000009', DATE '2000-12-01', 3571, NULL), ('000011', DATE '1990-01-01', 9999, NULL)""")
    run_steps(wh, "070", rules="paper")
    firms = {r[0]: r[1:] for r in wh.fetchall("SELECT gvkey, firm_id, sic, ff48 FROM panel.firms")}
    assert firms["000009"][1:] == (2834, 13)
    assert firms["000011"][1:] == (9999, 49) and firms["000012"][1:] == (None, 49)
    fid = firms["000009"][0]
    z = dict(wh.fetchall("SELECT q, z FROM stage.fq WHERE firm_id = ?", [fid]))
    # Q1: |ltq| + |seqq| + 1e-3; Q2: seqq missing -> |atq| + 1e-3; Q3: nothing -> dropped;
    # Q4: seqq infinite (not reported) -> |atq| + 1e-3.
    assert z == pytest.approx({q(2000, 1): 5.001, q(2000, 2): 9.001, q(2000, 4): 4.001})
    vals = dict(
        wh.fetchall("SELECT q, v FROM panel.values WHERE firm_id = ? AND item_id = 0", [fid])
    )
    assert vals == z
    pos = dict(wh.fetchall("SELECT q, pos FROM stage.fq WHERE firm_id = ?", [fid]))
    assert pos == {q(2000, 1): 1, q(2000, 2): 2, q(2000, 4): 3}
    assert not math.isnan(z[q(2000, 4)])


def test_published_keeps_quarters_without_a_deflator(wh):
    """published: a firm-quarter without a valid deflator keeps its reported values (a
    target or lag for other origins) but no z, no position and no scale tuple."""
    insert_fundq(
        wh,
        [
            {
                "gvkey": "000009",
                "datadate": qdate(2000, 1),
                "fyearq": 2000,
                "fqtr": 1,
                "fyr": 12,
                "ltq": 3.0,
                "seqq": 2.0,
            },
            {
                "gvkey": "000009",
                "datadate": qdate(2000, 2),
                "fyearq": 2000,
                "fqtr": 2,
                "fyr": 12,
                "ltq": 3.0,
            },
            {
                "gvkey": "000009",
                "datadate": qdate(2000, 3),
                "fyearq": 2000,
                "fqtr": 3,
                "fyr": 12,
                "ltq": 4.0,
                "seqq": 1.0,
            },
            {
                "gvkey": "000013",
                "datadate": qdate(2000, 1),
                "fyearq": 2000,
                "fqtr": 1,
                "fyr": 12,
                "revtq": 1.0,
            },
        ],
    )
    run_steps(wh, "070", rules="published")
    fid = wh.scalar("SELECT firm_id FROM panel.firms WHERE gvkey = '000009'")
    fq = {
        r[0]: r[1:] for r in wh.fetchall("SELECT q, z, pos FROM stage.fq WHERE firm_id = ?", [fid])
    }
    assert fq == {
        q(2000, 1): (pytest.approx(5.001), 1),
        q(2000, 2): (None, None),
        q(2000, 3): (pytest.approx(5.001), 2),
    }
    ltq = wh.scalar("SELECT item_id FROM ref.items WHERE item = 'ltq'")
    vals = {
        (r[0], r[1]): r[2]
        for r in wh.fetchall("SELECT q, item_id, v FROM panel.values WHERE firm_id = ?", [fid])
    }
    assert vals[(q(2000, 2), ltq)] == 3.0 and (q(2000, 2), 0) not in vals
    # a firm with no valid deflator anywhere still has an id (its values are never origins)
    assert wh.scalar("SELECT count(*) FROM panel.firms WHERE gvkey = '000013'") == 1
    run_steps(wh, "070", rules="paper")
    assert (
        wh.scalar(
            "SELECT count(*) FROM stage.fq WHERE firm_id = ? AND z IS NULL",
            [wh.scalar("SELECT firm_id FROM panel.firms WHERE gvkey = '000009'")],
        )
        == 0
    )
    assert wh.scalar("SELECT count(*) FROM panel.firms WHERE gvkey = '000013'") == 0


def test_modal_sic_counts_rows_before_or_after_dedup(wh):
    """The mode of sich: paper counts de-duplicated quarters (2834 twice, 3571 twice: tie ->
    2834), published counts every non-financial raw row (3571 three times)."""
    insert_fundq(
        wh,
        [
            {
                "gvkey": "000014",
                "datadate": qdate(2000, 1).replace(month=1, day=31),
                "fyearq": 1999,
                "fqtr": 4,
                "fyr": 1,
                "atq": 1.0,
            },
            {
                "gvkey": "000014",
                "datadate": qdate(2000, 1),
                "fyearq": 2000,
                "fqtr": 1,
                "fyr": 12,
                "atq": 1.0,
            },
            {
                "gvkey": "000014",
                "datadate": qdate(2000, 2),
                "fyearq": 2000,
                "fqtr": 2,
                "fyr": 12,
                "atq": 1.0,
            },
            {
                "gvkey": "000014",
                "datadate": qdate(2000, 3),
                "fyearq": 2000,
                "fqtr": 3,
                "fyr": 12,
                "atq": 1.0,
            },
            {
                "gvkey": "000014",
                "datadate": qdate(2000, 4),
                "fyearq": 2000,
                "fqtr": 4,
                "fyr": 12,
                "atq": 1.0,
            },
        ],
    )
    wh.execute("""INSERT INTO raw.company_industry VALUES
        ('000014', DATE '1999-12-01', 3571, NULL), ('000014', DATE '2000-03-01', 2834, NULL),
        ('000014', DATE '2000-09-01', 3571, NULL)""")
    sic = {}
    for rules in ("paper", "published"):
        run_steps(wh, "070", rules=rules)
        sic[rules] = wh.scalar("SELECT sic FROM panel.firms WHERE gvkey = '000014'")
    assert sic == {"paper": 2834, "published": 3571}


def test_dedup_and_ytd_with_missing_fiscal_fields(wh):
    """Two rows in calendar 2000Q2, one without fyearq: paper keeps the dated fiscal row,
    published (missing sorts highest) keeps the other. A row without fqtr: paper leaves its
    flows missing, published passes its year-to-date value through."""
    insert_fundq(
        wh,
        [
            {
                "gvkey": "000015",
                "datadate": qdate(2000, 1),
                "fyearq": 2000,
                "fqtr": 1,
                "fyr": 12,
                "atq": 1.0,
                "oancfy": 4.0,
            },
            {
                "gvkey": "000015",
                "datadate": qdate(2000, 2),
                "fyearq": 2000,
                "fqtr": 2,
                "fyr": 12,
                "atq": 2.0,
                "oancfy": 10.0,
            },
            {
                "gvkey": "000015",
                "datadate": qdate(2000, 2).replace(day=29, month=5),
                "fyearq": None,
                "fqtr": 2,
                "fyr": 12,
                "atq": 3.0,
                "oancfy": 11.0,
            },
            {
                "gvkey": "000015",
                "datadate": qdate(2000, 3),
                "fyearq": 2000,
                "fqtr": None,
                "fyr": 12,
                "atq": 4.0,
                "oancfy": 15.0,
            },
        ],
    )
    got = {}
    for rules in ("paper", "published"):
        run_steps(wh, "050", rules=rules)
        rows = items(wh, "000015")
        got[rules] = [(rows[k]["atq"], rows[k]["oancfq"]) for k in sorted(rows)]
    # paper: 2000Q2 is the fiscal row (10 - 4 = 6); 2000Q3 has no fqtr: missing.
    assert got["paper"] == [(1.0, 4.0), (2.0, 6.0), (4.0, None)]
    # published: 2000Q2 is the row without fyearq (fqtr 2, no fiscal year to difference
    # within: missing); 2000Q3's year-to-date 15 passes through.
    assert got["published"] == [(1.0, 4.0), (3.0, None), (4.0, 15.0)]


def test_compustat_export_is_the_downloads_file(wh, tmp_path):
    """`export --layout compustat`: the package download's filters (link windows, the
    financial sector dropped, a missing SIC kept) and its added columns."""
    import pyarrow.parquet as pq

    from proforma.app.flows.export import export

    _links_and_industries(wh)
    export(wh, tmp_path, "compustat")
    t = pq.read_table(tmp_path / "compustat_with_permno.parquet").to_pylist()
    kept = sorted((r["gvkey"], r["datadate"]) for r in t)
    run_steps(wh, "050")
    built = sorted(wh.fetchall("SELECT gvkey, datadate FROM stage.fundq_nonfin"))
    assert kept == built and len(kept) == 4 + 6 + 4 + 3
    assert not any(r["sich"] is not None and 6000 <= r["sich"] <= 6999 for r in t)
    one = next(r for r in t if r["gvkey"] == "000001" and r["datadate"] == qdate(2000, 2))
    assert one["permno"] == 1.0 and one["permco"] is None and "fyr" not in one
    assert one["jdate"].date() == qdate(2000, 2) and one["year"] == 2000
