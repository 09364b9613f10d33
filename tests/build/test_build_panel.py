"""End to end on a hand-made panel with PINNED statistics (k = 1, mu = 0, sigma = 1), so
every standardized value is hand-computable: x = clip(asinh(v / z_t) / (1 + 1e-8), -6, 6).

Firm 000010 reports every quarter 2000Q1..2010Q4 except 2004Q3, with ltq 60 and seqq 40
(z = 100.001 everywhere). revtq = z sinh(u(q)) with u(q) = 0.05 * (q - 8000), except
u(2005Q4) = 7 and u(2004Q4) = -3 (clipping). xrdq is reported from 2001Q3 only.
"""

from __future__ import annotations

import math

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from proforma.app.flows.build import run_build
from proforma.app.model_inputs.views import raw_windows, tabular_reader, tuple_windows
from proforma.contracts.errors import UserError
from proforma.contracts.rules import RuleSet
from tests.build.conftest import insert_fundq, qdate
from tests.conftest import temp_settings

Z = 100.001
EPS = 1e-8
GAP = 2004 * 4 + 2  # 2004Q3


def u_rev(q: int) -> float:
    return {2005 * 4 + 3: 7.0, 2004 * 4 + 3: -3.0}.get(q, 0.05 * (q - 8000))


def x_of(u: float) -> float:
    return max(-6.0, min(6.0, u / (1 + EPS)))


def make_built(tmp_path, rules: str = "published"):
    """One firm, 2000Q1..2010Q4 with a 2004Q3 gap, pinned statistics mu 0, sigma 1, k 1."""
    from proforma.app.flows.build import BuildParams
    from proforma.app.flows.warehouse import prepare
    from proforma.app.store.warehouse import connect

    wh = connect(temp_settings(tmp_path, memory_limit="2GB"))
    prepare(wh)
    rows = []
    for q in range(8000, 8044):
        if q == GAP:
            continue
        yr, qt = q // 4, q % 4 + 1
        r = {
            "gvkey": "000010",
            "datadate": qdate(yr, qt),
            "fyearq": yr,
            "fqtr": qt,
            "fyr": 12,
            "ltq": 60.0,
            "seqq": 40.0,
            "revtq": Z * math.sinh(u_rev(q)),
        }
        if q >= 2001 * 4 + 2:
            r["xrdq"] = 2.0
        rows.append(r)
    insert_fundq(wh, rows)
    wh.execute("INSERT INTO raw.company_industry VALUES ('000010', DATE '1990-01-01', 2834, NULL)")
    stats = tmp_path / "stats.parquet"
    wh.execute(
        f"COPY (SELECT qend(q)::TIMESTAMP AS quarter, item AS feature, 0.0 AS mu, 1.0 AS sigma, "
        f"1.0 AS k FROM range(7990, 8050) t(q), ref.items) TO '{stats}' (FORMAT parquet)"
    )
    result = run_build(wh, stats, BuildParams(rules=RuleSet.parse(rules)))
    return wh, result, stats


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    wh, result, stats = make_built(tmp_path_factory.mktemp("panel"))
    yield wh, result, stats
    wh.close()


def item_id(wh, name: str) -> int:
    return wh.scalar("SELECT item_id FROM ref.items WHERE item = ?", [name])


def truth(wh, origin: int, item: str) -> dict[int, tuple]:
    return {
        r[0]: r[1:]
        for r in wh.fetchall(
            "SELECT horizon, actual, baseline, change, split FROM panel.truth "
            "WHERE origin_q = ? AND item_id = ? ORDER BY horizon",
            [origin, item_id(wh, item)],
        )
    }


def test_origins_history_and_splits(built):
    wh, result, _ = built
    origins = dict(wh.fetchall("SELECT origin_q, split FROM panel.origins"))
    # The first three panel quarters are history only; 2000Q4 is the first origin.
    assert min(origins) == 8003
    assert origins[8007] == "train" and origins[8008] == "val"
    assert origins[8039] == "val" and origins[8040] == "test"
    assert GAP not in origins
    assert result.row_counts["panel.origins"] == {"total": 43 - 3, "train": 5, "val": 31, "test": 4}


def test_purging_at_both_boundaries(built):
    wh, _, _ = built
    rev = "revtq"
    # Train origin 2001Q2: targets through 2001Q4 only (h = 1, 2).
    assert sorted(truth(wh, 2001 * 4 + 1, rev)) == [1, 2]
    assert truth(wh, 8007, rev) == {}  # 2001Q4: nothing left
    # Val origin 2009Q3: only 2009Q4 (h = 1); test origin 2010Q1: through the data's end.
    assert sorted(truth(wh, 2009 * 4 + 2, rev)) == [1]
    assert sorted(truth(wh, 8040, rev)) == [1, 2, 3]
    # Val origin 2004Q2: h = 1 is the 2004Q3 gap (not reported): no cell.
    assert 1 not in truth(wh, 2004 * 4 + 1, rev) and 2 in truth(wh, 2004 * 4 + 1, rev)


def test_truth_values_and_clipping(built):
    wh, _, _ = built
    origin = 2005 * 4 + 2  # 2005Q3; 2005Q4 has u = 7 -> clipped to 6
    cells = truth(wh, origin, "revtq")
    x0 = x_of(u_rev(origin))
    assert cells[1][0] == pytest.approx(6.0)
    assert cells[1][1] == pytest.approx(x0, abs=1e-6)
    assert cells[2][0] == pytest.approx(x_of(u_rev(origin + 2)), abs=1e-6)
    assert cells[2][2] == pytest.approx(cells[2][0] - cells[2][1], abs=1e-6)
    assert {c[3] for c in cells.values()} == {"val"}


def test_present_in_q0(built):
    wh, _, _ = built
    # xrdq starts at 2001Q3: origin 2001Q2 has no xrdq target although 2001Q3 reports it.
    assert truth(wh, 2001 * 4 + 1, "xrdq") == {}
    assert sorted(truth(wh, 2001 * 4 + 2, "xrdq")) == [1]


def _row(wh, split: str, origin: int, columns=None) -> dict:
    for batch in tabular_reader(wh, split, batch_size=7, columns=columns):
        for r in batch.to_pylist():
            if r["origin_q"] == origin:
                return r
    raise AssertionError(origin)


def test_tabular_levels_yoy_gaps_and_clipping(built):
    wh, _, _ = built
    origin = 2005 * 4 + 3  # 2005Q4: u = 7
    r = _row(wh, "val", origin)
    assert len(r) == 3 + 985 + 1560
    assert r["revtq_level_0"] == pytest.approx(6.0)
    assert r["revtq_level_1"] == pytest.approx(x_of(u_rev(origin - 1)), abs=1e-6)
    # yoy_0 = u(2005Q4) - u(2004Q4) = 7 - (-3) = 10 -> clipped (UNclipped levels) at the
    # published package's 6 x 1.4142 (the paper's 6 sqrt 2: test_paper_rule_set_on_the_same_panel).
    assert r["revtq_yoy_0"] == pytest.approx(6 * 1.4142, abs=1e-5)
    # yoy_1 = u(2005Q3) - u(2004Q3): 2004Q3 is the gap -> missing.
    assert r["revtq_yoy_1"] is None
    assert r["revtq_yoy_2"] == pytest.approx(u_rev(origin - 2) - u_rev(origin - 6), abs=1e-6)
    # Gaps do not collapse: origin 2004Q4's level_1 is 2004Q3 (missing), level_2 2004Q2.
    g = _row(wh, "val", 2004 * 4 + 3)
    assert g["revtq_level_0"] == pytest.approx(-3 / (1 + EPS), abs=1e-6)
    assert g["revtq_level_1"] is None
    assert g["revtq_level_2"] == pytest.approx(x_of(u_rev(2004 * 4 + 1)), abs=1e-6)
    # Scale, industry dummies (2834 -> FF48 13), targets.
    assert r["scale_level_0"] == pytest.approx(math.asinh(Z) / (1 + EPS), rel=1e-6)
    assert r["indff48_13"] == 1.0 and sum(r[f"indff48_{k}"] for k in range(1, 49)) == 1.0
    assert r["revtq_t1"] == pytest.approx(x_of(u_rev(origin + 1)), abs=1e-6)
    assert r["atq_t1"] is None  # atq never reported
    # Purged targets are NULL: val origin 2009Q3 keeps t1 only.
    p = _row(wh, "val", 2009 * 4 + 2, columns=["revtq_t1", "revtq_t2"])
    assert list(p) == ["firm_id", "origin_q", "split", "revtq_t1", "revtq_t2"]
    assert p["revtq_t1"] is not None and p["revtq_t2"] is None


def test_tuple_windows_history_and_future_cut(built):
    wh, _, _ = built
    rev = item_id(wh, "revtq")
    rows = [r for b in tuple_windows(wh, "val", 4) for r in b.to_pylist()]
    assert [r["origin_q"] for r in rows] == sorted(r["origin_q"] for r in rows)
    by = {r["origin_q"]: r for r in rows}
    w = by[2009 * 4 + 2]  # 2009Q3
    tuples = list(zip(w["rel_q"], w["item_id"], w["x"], strict=True))
    assert min(t[0] for t in tuples) == -11
    # The future is cut at the split's last quarter: only rel_q 1 (2009Q4).
    assert sorted({t[0] for t in tuples if t[0] > 0}) == [1]
    assert (0, 0) in {(t[0], t[1]) for t in tuples}  # the scale token
    assert [t for t in tuples if t[1] == 0] == [(0, 0, pytest.approx(math.asinh(Z), rel=1e-6))]
    x_rev = {t[0]: t[2] for t in tuples if t[1] == rev}
    assert x_rev[-1] == pytest.approx(x_of(u_rev(2009 * 4 + 1)), abs=1e-5)
    # History of origin 2005Q2 skips the 2004Q3 gap (rel_q -3) and clips 2004Q4? no: -3 is
    # 2004Q3; 2004Q4 (u = -3) is rel_q -2.
    h = by[2005 * 4 + 1]
    rels = {r for r, i in zip(h["rel_q"], h["item_id"], strict=True) if i == rev}
    assert -3 not in rels and -2 in rels
    no_future = [r for b in tuple_windows(wh, "val", 64, future=False) for r in b.to_pylist()]
    assert all(max(r["rel_q"]) == 0 for r in no_future)
    assert len(no_future) == len(rows)
    one = [r for b in tuple_windows(wh, "val", 64, origin_q=8020) for r in b.to_pylist()]
    assert [r["origin_q"] for r in one] == [8020]


def test_raw_windows_hold_reported_values(built):
    """raw_windows: reported values at rel_q -11..0 of each origin, as panel.values holds
    them (no scale token, no future); `origins` restricts the rows."""
    wh, _, _ = built
    rows = [r for b in raw_windows(wh, "val", 4) for r in b.to_pylist()]
    assert len(rows) == wh.scalar("SELECT count(*) FROM panel.origins WHERE split = 'val'")
    want = {}
    for f, q, i, v in wh.fetchall(
        "SELECT firm_id, q, item_id, v FROM panel.values WHERE item_id > 0"
    ):
        want[(f, q, i)] = v
    for r in rows:
        assert r["z"] == pytest.approx(
            wh.scalar(
                "SELECT z FROM panel.origins WHERE firm_id = ? AND origin_q = ?",
                [r["firm_id"], r["origin_q"]],
            )
        )
        assert min(r["rel_q"]) >= -11 and max(r["rel_q"]) <= 0 and 0 not in r["item_id"]
        got = {
            (r["origin_q"] + rel, i): v
            for rel, i, v in zip(r["rel_q"], r["item_id"], r["v"], strict=True)
        }
        expect = {
            (q, i): v
            for (f, q, i), v in want.items()
            if f == r["firm_id"] and r["origin_q"] - 11 <= q <= r["origin_q"]
        }
        assert got == expect
    pick = pa.table(
        {
            "firm_id": pa.array([rows[1]["firm_id"]], pa.int32()),
            "origin_q": pa.array([rows[1]["origin_q"]], pa.int32()),
        }
    )
    one = [r for b in raw_windows(wh, "val", origins=pick) for r in b.to_pylist()]
    assert [(r["firm_id"], r["origin_q"]) for r in one] == [
        (rows[1]["firm_id"], rows[1]["origin_q"])
    ]


def test_pinned_statistics_are_used_and_recorded(built):
    wh, result, stats = built
    assert "pinned" in result.reg_stats
    assert wh.fetchall("SELECT DISTINCT k FROM panel.item_k") == [(1.0,)]
    rec = wh.fetchone(
        "SELECT status, reg_stats, reg_stats_checksum FROM meta.builds WHERE build_id = ?",
        [result.build_id],
    )
    assert rec[0] == "succeeded" and rec[1] == str(stats) and len(rec[2]) == 64


def test_bad_pinned_statistics_write_nothing(built, tmp_path):
    wh, result, _ = built
    before = wh.scalar("SELECT count(*) FROM panel.truth_cells")
    bad = tmp_path / "bad.parquet"
    wh.execute(
        f"COPY (SELECT qend(8000)::TIMESTAMP AS quarter, 'revtq' AS feature, 0.0 AS mu, "
        f"-1.0 AS sigma, 1.0 AS k) TO '{bad}' (FORMAT parquet)"
    )
    with pytest.raises(UserError, match="non-positive sigma"):
        run_build(wh, bad)
    assert wh.scalar("SELECT count(*) FROM panel.truth_cells") == before
    failed = wh.fetchall(
        "SELECT status FROM meta.builds WHERE build_id > ? ORDER BY build_id", [result.build_id]
    )
    assert failed == [("failed",)]


def test_pinned_statistics_may_miss_quarters(tmp_path):
    """A quarter without a feature's statistics leaves that feature without a value at
    origins of that quarter (the published package's rule): no origin where the scale has
    none, no revtq truth where revtq has none."""
    wh, _, _ = make_built(tmp_path)
    short = tmp_path / "short.parquet"
    wh.execute(
        f"COPY (SELECT qend(q)::TIMESTAMP AS quarter, item AS feature, 0.0 AS mu, 1.0 AS sigma, "
        f"1.0 AS k FROM range(8000, 8010) t(q), ref.items WHERE item <> 'revtq' OR q < 8006) "
        f"TO '{short}' (FORMAT parquet)"
    )
    run_build(wh, short)
    assert {r[0] for r in wh.fetchall("SELECT origin_q FROM panel.origins")} == set(
        range(8003, 8010)
    )
    assert {
        r[0]
        for r in wh.fetchall(
            "SELECT DISTINCT origin_q FROM panel.truth WHERE item_id = ?", [item_id(wh, "revtq")]
        )
    } == set(range(8003, 8006))
    wh.close()


def test_paper_rule_set_on_the_same_panel(tmp_path):
    """paper: year-over-year changes clip at 6 sqrt 2; the rule set is recorded."""
    wh, result, _ = make_built(tmp_path, rules="paper")
    r = _row(wh, "val", 2005 * 4 + 3)
    assert r["revtq_yoy_0"] == pytest.approx(6 * math.sqrt(2), abs=1e-5)
    assert wh.fetchall("SELECT rules FROM panel.rule_set") == [("paper",)]
    import json

    params = json.loads(
        wh.scalar("SELECT parameters FROM meta.builds WHERE build_id = ?", [result.build_id])
    )
    assert params["rules"] == "paper"
    wh.close()


def test_build_record(built):
    from proforma.app.store.sqlfiles import folder_checksum, steps_in

    wh, result, _ = built
    b = wh.fetchone(
        "SELECT sql_checksum, parameters, row_counts, elapsed_s FROM meta.builds "
        "WHERE build_id = ?",
        [result.build_id],
    )
    import json

    assert b[0] == folder_checksum("build")
    params = json.loads(b[1])
    assert params["train_end_q"] == 8007 and params["k_grid_n"] == 250
    counts = json.loads(b[2])
    assert counts["panel.truth_cells"]["total"] == wh.scalar("SELECT count(*) FROM panel.truth")
    assert set(counts["panel.truth_cells"]) == {"total", "train", "val", "test"}
    # truth_cells stores no split: the record's per-split counts come through origin_q
    # and equal the view's (which derives split from panel.splits)
    assert "split" not in {r[0] for r in wh.fetchall("DESCRIBE panel.truth_cells")}
    by_split = dict(wh.fetchall("SELECT split, count(*) FROM panel.truth GROUP BY 1"))
    assert {k: v for k, v in counts["panel.truth_cells"].items() if k != "total"} == by_split
    assert all(by_split.values())
    steps = wh.fetchall(
        "SELECT step_no, name, checksum, purpose, elapsed_s FROM meta.build_steps "
        "WHERE build_id = ? ORDER BY step_no",
        [result.build_id],
    )
    files = steps_in("build")
    assert [s[1] for s in steps] == [f.name for f in files]
    assert [s[2] for s in steps] == [f.checksum for f in files]
    assert all(s[3] and s[4] >= 0 for s in steps)


def test_export_layout(built, tmp_path):
    """The published package's file layout: names, column order and types, tuple ids and
    id maps; the exported statistics pin the same truth back."""
    from proforma.app.flows.export import RELEASE_TAG, export, release_columns
    from proforma.app.store.reference import release_item_order

    wh, _, _ = built
    out = tmp_path / "export"
    written = export(wh, out, imputed=False)
    tag = RELEASE_TAG
    assert set(written) == {
        f"regularization_stats__{tag}.parquet",
        *(f"{m}_id_map__{tag}.csv" for m in ("firm", "account", "industry")),
        *(
            f"{k}_{s}__{tag}.parquet"
            for k in ("tabular", "tuple")
            for s in ("train", "val", "test")
        ),
    }
    tab = pq.read_schema(out / f"tabular_val__{tag}.parquet")
    order = release_item_order()
    assert order[:3] == ("cheq", "invtq", "rectq") and len(order) == 78
    assert tab.names == ["firm_id", "quarter", *release_columns(order)]
    assert tab.names[2:6] == ["scale_level_0", "cheq_level_0", "cheq_level_1", "cheq_level_2"]
    assert len(tab.names) == 2 + 985 + 1560 and tab.names[-1] == "indff48_47"
    assert (
        str(tab.field("firm_id").type) == "string"
        and str(tab.field("quarter").type) == "timestamp[us]"
    )
    assert str(tab.field("revtq_t1").type) == "float"
    t = pq.read_table(out / f"tabular_val__{tag}.parquet")
    assert set(t.column("firm_id").to_pylist()) == {"000010"}
    first = t.column("quarter")[0].as_py()
    assert (first.month, first.day, first.hour, first.microsecond) == (
        3,
        31,
        23,
        999999,
    )  # 2002Q1 end
    assert t.column("indff48_12").to_pylist()[0] == 1.0  # FF48 13 -> index 12
    stats = pq.read_table(out / f"regularization_stats__{tag}.parquet")
    assert stats.column_names == ["quarter", "mu", "sigma", "feature", "k"]
    tup = pq.read_table(out / f"tuple_val__{tag}.parquet")
    assert tup.column_names == ["firm_id", "account_id", "quarter", "value", "industry_id"]
    # val tuples: 11 quarters before 2002Q1 (1999Q2) through 2009Q4, in quarters since
    # 1969Q4; this panel starts at 2000Q1 (121), inside that window
    assert min(tup.column("quarter").to_pylist()) == 2000 * 4 - (1969 * 4 + 3)
    assert max(tup.column("quarter").to_pylist()) == 2009 * 4 + 3 - (1969 * 4 + 3)
    test = pq.read_table(out / f"tuple_test__{tag}.parquet").column("quarter").to_pylist()
    assert min(test) == 2010 * 4 - 11 - (1969 * 4 + 3)  # 2007Q2
    accounts = (out / f"account_id_map__{tag}.csv").read_text().splitlines()
    assert (
        accounts[0] == "account_id,account_name" and "60,scale" in accounts and len(accounts) == 80
    )
    assert (out / f"firm_id_map__{tag}.csv").read_text().splitlines() == [
        "firm_id_int,firm_id",
        "0,000010",
    ]
    industries = (out / f"industry_id_map__{tag}.csv").read_text().splitlines()
    assert industries[1] == "0,Agric,False" and industries[-1] == "48,Unknown,True"
    # Round trip: the exported statistics pin the same truth.
    before = wh.arrow("SELECT * FROM panel.truth ORDER BY ALL")
    run_build(wh, out / f"regularization_stats__{tag}.parquet")
    assert wh.arrow("SELECT * FROM panel.truth ORDER BY ALL").equals(before)


def test_export_raw_panel_in_the_download_layout(built, tmp_path):
    """--layout compustat: raw.fundq with the row's sich/naicsh and permno, the published
    download's columns (items by Compustat name, YTD sources as *y)."""
    from proforma.app.flows.export import export

    wh, _, _ = built
    written = export(wh, tmp_path, "compustat")
    assert written == {"compustat_with_permno.parquet": 43}
    t = pq.read_table(tmp_path / "compustat_with_permno.parquet")
    names = t.column_names
    assert names[:4] == ["gvkey", "datadate", "fyearq", "fqtr"] and "fyr" not in names
    assert {"revtq", "oancfy", "sich", "naicsh", "permno", "permco", "jdate", "year"} <= set(
        names
    ) and "oancfq" not in names
    assert set(t.column("sich").to_pylist()) == {2834.0}
    assert t.column("permno").null_count == 43  # no link table: every firm kept whole


def test_published_statistics_file_pins_as_given(tmp_path):
    """The published package's regularization_stats file, as it writes it (quarter at the
    quarter's last microsecond, columns quarter, mu, sigma, feature, k; sigma carrying its
    +1e-8 floors; quarters without statistics absent) pins the panel with every value
    exactly as given: sigma is the divisor."""
    wh, _, _ = make_built(tmp_path)
    stats = tmp_path / "regularization_stats__pf_full__r13_node_optionD_indfe_val8.parquet"
    wh.execute(f"""COPY (SELECT (qend(q) + INTERVAL 1 DAY - INTERVAL 1 MICROSECOND)::TIMESTAMP AS quarter,
                        0.01 * (q - 8000) AS mu, 1.0 + 0.001 * (q % 7) + 2e-8 AS sigma,
                        item AS feature, 1.0 + 0.01 * item_id AS k
                 FROM range(7990, 8050) t(q), ref.items WHERE q <> 8020 OR item <> 'revtq')
                 TO '{stats}' (FORMAT parquet)""")
    run_build(wh, stats)
    rev = item_id(wh, "revtq")
    got = {
        (i, q): (m, s)
        for i, q, m, s in wh.fetchall("SELECT item_id, q, mu, sigma FROM panel.origin_params")
    }
    assert (rev, 8020) not in got and (rev, 8021) in got
    assert got[(rev, 8021)] == (
        pytest.approx(0.21, abs=1e-15),
        pytest.approx(1.0 + 0.001 * (8021 % 7) + 2e-8, abs=1e-15),
    )
    # x = (asinh(k v / z) - mu) / sigma with the file's sigma, not sigma + 1e-8
    k = 1.0 + 0.01 * rev
    v = wh.scalar("SELECT v FROM panel.values WHERE item_id = ? AND q = 8024", [rev])
    x = wh.scalar(
        "SELECT baseline FROM panel.truth WHERE item_id = ? AND origin_q = 8024 AND horizon = 1",
        [rev],
    )
    mu, sigma = got[(rev, 8024)]
    assert x == pytest.approx(max(-6, min(6, (math.asinh(k * v / Z) - mu) / sigma)), abs=1e-6)
    assert (
        wh.scalar("SELECT count(*) FROM panel.truth WHERE item_id = ? AND origin_q = 8020", [rev])
        == 0
    )
    wh.close()
