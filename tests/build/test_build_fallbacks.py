"""The published package's edge rules on one tiny generated panel, statistics estimated
(docs/contracts.md, "Rule sets"). The package itself cannot run here: every expected
value is worked out in this file from the package's rule, as docs/contracts.md states it:

- k of an item with no training-period observation (reported only from 2008 on): the
  kurtosis search over its whole lagged-ratio pool (`published`, looks ahead; warned about
  and recorded with the build), the median k of its statement's items (`paper`);
- k of an item whose training pool has no spread (always 0 before 2002): k = 1
  (`published`), the smallest grid k (`paper`); its statistics there mu 0, sigma 1;
- an item without any lagged-ratio pool (three quarters of one firm): no statistics, no
  value anywhere (`published`);
- a firm with a single quarter: an origin (`published`) without truth cells;
- the first quarters: origins begin where some item first has statistics (its fifth
  reported quarter), the last quarter is an origin without targets;
- a fiscal-year change at the train/val boundary: the calendar quarter keeps the new
  fiscal year's first quarter, which is train's last target and val's first YTD base.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from proforma.app.flows.build import BuildParams, fallback_warning, run_build
from proforma.app.model_inputs.views import tabular_reader
from proforma.contracts.rules import PUBLISHED, RuleSet
from tests.build.conftest import insert_fundq, qdate
from tests.build.test_build_k_stats import brute_force_k
from tests.conftest import temp_settings

FIRMS = range(6)  # gvkeys 000031..000036, 2000Q1..2011Q4
Q0, Q1 = 8000, 8047
LATE = 8032  # stkcoq from 2008Q1 only
SINGLE = ("000037", 8020)  # one filing, 2005Q1
FYR = "000038"  # a fiscal-year change in 2001Q4


def ltq(f: int, q: int) -> float:
    return 50.0 + 5 * f + 0.5 * (q - Q0)


def seqq(f: int, q: int) -> float:
    return 20.0 + f


def revtq(f: int, q: int) -> float:
    return 10.0 * (f + 1) * (1 + 0.4 * math.sin(0.7 * q + f)) + 0.2 * (q - Q0)


def stkcoq(f: int, q: int) -> float:
    return 0.5 * (f + 1) + 0.1 * ((7 * q + 3 * f) % 5) + 0.03 * f * f


def drcq(f: int, q: int) -> float:
    return 0.0 if q < 8008 else 1.0 + 0.5 * f + 0.05 * (q % 7)


def z(f: int, q: int) -> float:
    return abs(ltq(f, q)) + abs(seqq(f, q)) + 1e-3


def rows() -> list[dict]:
    out = []
    for f in FIRMS:
        for q in range(Q0, Q1 + 1):
            r = {
                "gvkey": f"{31 + f:06d}",
                "datadate": qdate(q // 4, q % 4 + 1),
                "fyearq": q // 4,
                "fqtr": q % 4 + 1,
                "fyr": 12,
                "ltq": ltq(f, q),
                "seqq": seqq(f, q),
                "revtq": revtq(f, q),
                "drcq": drcq(f, q),
            }
            if q >= LATE:
                r["stkcoq"] = stkcoq(f, q)
            if f == 0 and 8040 <= q <= 8042:
                r["acomincq"] = 1.0 + q - 8040
            out.append(r)
    gv, q = SINGLE
    out.append(
        {
            "gvkey": gv,
            "datadate": qdate(q // 4, q % 4 + 1),
            "fyearq": q // 4,
            "fqtr": q % 4 + 1,
            "fyr": 12,
            "ltq": 70.0,
            "seqq": 30.0,
            "revtq": 12.0,
        }
    )
    # 2001Q1..2002Q4 with a change of fiscal year: two filings in 2001Q4, the old year's
    # fourth quarter (ended 2001-11-30) and the new year's first (ended 2001-12-31).
    fy = [(8000 + i, 2000, i + 1, None, float(i + 1), 4.0 + i % 2) for i in range(4)] + [
        (8004, 2001, 1, None, 1.0, 5.0),
        (8005, 2001, 2, None, 3.0, 6.0),
        (8006, 2001, 3, None, 6.0, 7.0),
        (8007, 2001, 4, (2001, 11, 30), 10.0, 99.0),
        (8007, 2002, 1, None, 2.0, 8.0),
        (8008, 2002, 2, None, 5.0, 9.0),
        (8009, 2002, 3, None, 9.0, 10.0),
    ]
    import datetime as dt

    for q, fyear, fq, date, oancfy, invtq in fy:
        out.append(
            {
                "gvkey": FYR,
                "datadate": dt.date(*date) if date else qdate(q // 4, q % 4 + 1),
                "fyearq": fyear,
                "fqtr": fq,
                "fyr": 12,
                "ltq": 40.0,
                "seqq": 10.0,
                "oancfy": oancfy,
                "invtq": invtq,
            }
        )
    return out


def lag_pool(values, q_max: int | None = None) -> np.ndarray:
    """The package's k pool of one item: per firm over its reported quarters (value and
    deflator), v_n / z_(n-4) and v_(n-8) / z_(n-4), dated at n; quarters <= q_max."""
    pool = []
    for f in FIRMS:
        series = [(q, values(f, q), z(f, q)) for q in range(Q0, Q1 + 1)]
        series = [s for s in series if s[1] is not None]
        for n, (q, v, _) in enumerate(series):
            if n < 4 or (q_max is not None and q > q_max):
                continue
            pool.append(v / series[n - 4][2])
            if n >= 8:
                pool.append(series[n - 8][1] / series[n - 4][2])
    return np.array(pool)


def _build(tmp_path, rules: str):
    from proforma.app.flows.warehouse import prepare
    from proforma.app.store.warehouse import connect

    wh = connect(temp_settings(tmp_path, f"{rules}.duckdb"))
    prepare(wh)
    insert_fundq(wh, rows())
    result = run_build(wh, "estimate", BuildParams(rules=RuleSet.parse(rules)))
    return wh, result


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fallbacks")
    out = {rules: _build(tmp, rules) for rules in ("published", "paper")}
    yield out
    for wh, _ in out.values():
        wh.close()


def _item(wh, item: str) -> int:
    return int(wh.scalar("SELECT item_id FROM ref.items WHERE item = ?", [item]))


def _k(wh) -> dict[str, tuple[float, str]]:
    return {
        r[0]: (r[1], r[2])
        for r in wh.fetchall(
            "SELECT i.item, k.k, k.k_rule FROM panel.item_k k JOIN ref.items i USING (item_id)"
        )
    }


def same(got: tuple[float, str], k: float, rule: str, rel: float = 1e-12) -> bool:
    """k within rel of the expected one, decided by the expected rule."""
    return got[1] == rule and math.isclose(got[0], k, rel_tol=rel)


def late(f: int, q: int) -> float | None:
    return stkcoq(f, q) if q >= LATE else None


def test_no_training_observation_searches_the_whole_pool_under_published(built):
    wh, result = built["published"]
    k = _k(wh)
    want = brute_force_k(lag_pool(late))
    assert same(k["stkcoq"], want, "whole_panel"), k["stkcoq"]
    # an item with training data: the window through 2001Q3 (the package's cut-off)
    assert same(k["revtq"], brute_force_k(lag_pool(revtq, 8006)), "window"), k["revtq"]
    # its statistics use that k: mu_raw(q) = mean over firms of asinh(k v / z)
    q = 8040
    mu = np.mean([np.arcsinh(want * stkcoq(f, q) / z(f, q)) for f in FIRMS])
    got = wh.scalar(
        "SELECT mu_raw FROM stage.raw_stats WHERE item_id = ? AND q = ?", [_item(wh, "stkcoq"), q]
    )
    assert got == pytest.approx(mu, rel=1e-12)
    # said in one line and recorded with the build
    assert result.fallbacks["whole_panel"] == ["stkcoq"]
    line = result.warning()
    assert line is not None and "\n" not in line
    assert "whole panel" in line and "stkcoq" in line and "drcq" in line
    recorded = json.loads(
        wh.scalar(
            "SELECT CAST(parameters AS VARCHAR) FROM meta.builds WHERE build_id = ?",
            [result.build_id],
        )
    )
    assert recorded["k_fallbacks"] == result.fallbacks
    assert set(recorded["k_fallbacks"]) == {"whole_panel", "no_kurtosis", "no_pool"}


def test_no_training_observation_takes_the_statement_median_under_paper(built):
    wh, result = built["paper"]
    k = _k(wh)
    # revtq is the only income-statement item with a training pool (through 2001Q4)
    assert same(k["revtq"], brute_force_k(lag_pool(revtq, 8007)), "window"), k["revtq"]
    assert same(k["stkcoq"], k["revtq"][0], "statement_median"), k["stkcoq"]
    assert {"acomincq", "stkcoq"} <= set(result.fallbacks["statement_median"])


def test_training_pool_without_spread(built):
    pub, pub_result = built["published"]
    assert _k(pub)["drcq"] == (1.0, "no_kurtosis")
    assert same(_k(built["paper"][0])["drcq"], 0.01, "no_kurtosis")
    # the warning says the k each rule set stores
    assert "k = 1 (a training pool without spread" in (pub_result.warning() or "")
    paper_line = built["paper"][1].warning() or ""
    assert "k = 0.01, the grid's smallest (a training pool without spread" in paper_line
    assert "k = 1" not in paper_line
    # every training-period ratio is 0: asinh(k 0) = 0 with no spread, so mu_raw 0 and
    # sigma_raw 1 (+ 1e-8); the trailing divisor 1 + 2e-8
    item = _item(pub, "drcq")
    mu_raw, sigma_raw = pub.fetchone(
        "SELECT mu_raw, sigma_raw FROM stage.raw_stats WHERE item_id = ? AND q = 8005", [item]
    )
    assert mu_raw == 0.0 and sigma_raw == pytest.approx(1 + 1e-8, abs=1e-15)
    mu, sigma = pub.fetchone(
        "SELECT mu, sigma FROM panel.origin_params WHERE item_id = ? AND q = 8006", [item]
    )
    assert mu == 0.0 and sigma == pytest.approx(1 + 2e-8, abs=1e-15)


def test_item_without_any_pool_has_no_value_under_published(built):
    wh, result = built["published"]
    item = _item(wh, "acomincq")
    assert _k(wh)["acomincq"] == (1.0, "no_pool")
    assert result.fallbacks["no_pool"] == ["acomincq"]
    assert wh.scalar("SELECT count(*) FROM panel.origin_params WHERE item_id = ?", [item]) == 0
    assert wh.scalar("SELECT count(*) FROM panel.truth_cells WHERE item_id = ?", [item]) == 0
    # items nobody reports are not warned about
    assert "cheq" not in (fallback_warning(PUBLISHED, result.fallbacks) or "")


def _origins(wh, gvkey: str) -> list[int]:
    return [
        r[0]
        for r in wh.fetchall(
            "SELECT origin_q FROM panel.origins JOIN panel.firms USING (firm_id) WHERE gvkey = ? "
            "ORDER BY 1",
            [gvkey],
        )
    ]


def test_single_quarter_firm(built):
    wh, _ = built["published"]
    gv, q = SINGLE
    assert _origins(wh, gv) == [q]
    assert (
        wh.scalar(
            "SELECT count(*) FROM panel.truth_cells JOIN panel.firms USING (firm_id) "
            "WHERE gvkey = ?",
            [gv],
        )
        == 0
    )
    firm = wh.scalar("SELECT firm_id FROM panel.firms WHERE gvkey = ?", [gv])
    rows = tabular_reader(wh, "val", columns=["revtq_level_0", "revtq_t1"]).read_all()
    mine = [r for r in rows.to_pylist() if r["firm_id"] == firm and r["origin_q"] == q]
    assert len(mine) == 1 and mine[0]["revtq_level_0"] is not None and mine[0]["revtq_t1"] is None
    # paper needs four quarters of firm history
    assert _origins(built["paper"][0], gv) == []


def test_first_and_last_quarters(built):
    wh, _ = built["published"]
    gv = "000031"
    got = _origins(wh, gv)
    # the panel's 4th quarter is 2000Q4, but no item has statistics before the fifth
    # reported quarter (2001Q1): the package keeps no row without an item level there
    assert got[0] == 8004 and got[-1] == Q1
    assert _origins(built["paper"][0], gv)[0] == 8003  # pos >= 4 only
    horizons = dict(
        wh.fetchall(
            "SELECT origin_q, max(horizon) FROM panel.truth_cells JOIN panel.firms USING (firm_id) "
            "WHERE gvkey = ? AND origin_q >= ? GROUP BY 1",
            [gv, Q1 - 3],
        )
    )
    assert horizons == {Q1 - 3: 3, Q1 - 2: 2, Q1 - 1: 1}  # the last origin has no target


def test_fiscal_year_change_at_the_split_boundary(built):
    for rules in ("published", "paper"):
        wh, _ = built[rules]
        firm = wh.scalar("SELECT firm_id FROM panel.firms WHERE gvkey = ?", [FYR])
        vals = dict(
            wh.fetchall(
                "SELECT q, v FROM panel.values WHERE firm_id = ? AND item_id = ?",
                [firm, _item(wh, "oancfq")],
            )
        )
        # 2001Q4 keeps the new fiscal year's first quarter (YTD 2 passes through); 2002Q1
        # is its second: 5 - 2
        assert vals[8007] == 2.0 and vals[8008] == 3.0 and vals[8006] == 3.0
        inv = _item(wh, "invtq")
        assert (
            wh.scalar(
                "SELECT v FROM panel.values WHERE firm_id = ? AND item_id = ? AND q = 8007",
                [firm, inv],
            )
            == 8.0
        )
    wh, _ = built["published"]
    # train's last origin-with-target: 2001Q3 -> 2001Q4 (h = 1, the kept filing's value,
    # standardized with the origin's parameters); h = 2 is val's and purged
    k = wh.scalar("SELECT k FROM panel.item_k WHERE item_id = ?", [inv])
    mu, sigma = wh.fetchone(
        "SELECT mu, sigma FROM panel.origin_params WHERE item_id = ? AND q = 8006", [inv]
    )
    truth = dict(
        wh.fetchall(
            "SELECT horizon, actual FROM panel.truth WHERE firm_id = ? AND item_id = ? "
            "AND origin_q = 8006",
            [firm, inv],
        )
    )
    want = max(-6.0, min(6.0, (math.asinh(k * 8.0 / 50.001) - mu) / sigma))
    assert list(truth) == [1] and truth[1] == pytest.approx(want, rel=1e-6)
