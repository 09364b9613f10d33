"""Each rule of contracts/rules.py switched alone: a rule set declared as `published` with
one rule set to `paper`'s value, on a tiny panel that triggers the rule, against
`published` itself. So every rule works on its own, whatever the others say, and a rule
set is one declaration (docs/contracts.md, "Rule sets"). The scoring rules are switched
in tests/eval/test_eval_rules.py and at the end of this file, end to end."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pytest

from proforma.app.store.warehouse import Warehouse
from proforma.contracts.rules import PAPER, PUBLISHED, RuleSet, declared
from tests.build import test_build_fallbacks as fb
from tests.build.conftest import insert_fundq, qdate, run_steps
from tests.build.test_build_k_stats import _two_firms, brute_force_k, load_scale_pool, run_k


def flipped(rule: str) -> RuleSet:
    """`published` with `rule` at `paper`'s value: one declaration."""
    return dataclasses.replace(PUBLISHED, name=f"published-{rule}", **{rule: getattr(PAPER, rule)})


def row(gvkey: str, year: int, quarter: int, **items: Any) -> dict[str, Any]:
    return {
        "gvkey": gvkey,
        "datadate": qdate(year, quarter),
        "fyearq": year,
        "fqtr": quarter,
        "fyr": 12,
        **items,
    }


def both(wh: Warehouse, rule: str, upto: str, query: str) -> tuple[Any, Any]:
    """The query's answer after the steps through `upto` under `published`, then under
    `published` with `rule` flipped."""
    out = []
    run_steps(wh, upto, rules=PUBLISHED)  # type: ignore[arg-type]
    out.append(wh.fetchall(query))
    with declared(flipped(rule)) as rules:
        run_steps(wh, upto, rules=rules)  # type: ignore[arg-type]
        out.append(wh.fetchall(query))
    return out[0], out[1]


def q(year: int, quarter: int) -> int:
    return year * 4 + quarter - 1


def test_link_window_copies(wh):
    insert_fundq(wh, [row("000040", 2000, 1, atq=1.0), row("000040", 2000, 2, atq=1.0)])
    # two overlapping windows (an LC and an LU link) both hold both quarters
    wh.execute("""INSERT INTO raw.ccm_link VALUES
        ('000040', 40, 'LC', 'C', DATE '1999-01-01', NULL),
        ('000040', 41, 'LU', 'P', DATE '1999-06-01', NULL)""")
    sql = "SELECT count(*) FROM stage.fundq_linked WHERE gvkey = '000040'"
    assert both(wh, "link_window_copies", "010", sql) == ([(4,)], [(2,)])


def test_dedup_missing_fiscal_first_and_exact_ties(wh):
    missing = row("000041", 2000, 2, atq=3.0)
    missing.update(fyearq=None, datadate=qdate(2000, 2).replace(month=5, day=29))
    insert_fundq(wh, [row("000041", 2000, 2, atq=2.0), missing])
    # exact ties (same keys, same date): the last raw row under every rule set
    insert_fundq(wh, [row("000042", 2000, 2, atq=5.0), row("000042", 2000, 2, atq=6.0)])
    sql = "SELECT gvkey, atq FROM stage.fq_items ORDER BY gvkey"
    pub, flip = both(wh, "dedup_missing_fiscal_first", "050", sql)
    assert pub == [("000041", 3.0), ("000042", 6.0)]
    assert flip == [("000041", 2.0), ("000042", 6.0)]
    run_steps(wh, "050", rules="paper")
    assert wh.fetchall(sql) == flip


def test_ytd_without_fqtr(wh):
    no_fqtr = row("000043", 2000, 3, atq=4.0, oancfy=15.0)
    no_fqtr["fqtr"] = None
    insert_fundq(wh, [row("000043", 2000, 1, atq=1.0, oancfy=4.0), no_fqtr])
    sql = f"SELECT oancfq FROM stage.fq_items WHERE q = {q(2000, 3)}"
    assert both(wh, "ytd_without_fqtr", "050", sql) == ([(15.0,)], [(None,)])


def test_industry_over_raw_rows(wh):
    # two filings in 2000Q1 (a fiscal-year change): 3571 counted three times over raw
    # rows, twice over quarters (a tie with 2834 -> the smaller SIC)
    first = row("000044", 1999, 4, atq=1.0)
    first.update(datadate=qdate(2000, 1).replace(month=1, day=31), fyr=1)
    rows = [first] + [row("000044", 2000, k, atq=1.0) for k in (1, 2, 3, 4)]
    insert_fundq(wh, rows)
    wh.execute("""INSERT INTO raw.company_industry VALUES
        ('000044', DATE '1999-12-01', 3571, NULL), ('000044', DATE '2000-03-01', 2834, NULL),
        ('000044', DATE '2000-09-01', 3571, NULL)""")
    sql = "SELECT sic FROM panel.firms WHERE gvkey = '000044'"
    assert both(wh, "industry_over_raw_rows", "070", sql) == ([(3571,)], [(2834,)])


def test_keep_undeflatable_quarters(wh):
    insert_fundq(
        wh,
        [
            row("000045", 2000, 1, ltq=3.0, seqq=2.0),
            row("000045", 2000, 2, revtq=7.0),  # no ltq, seqq or atq: no deflator
            row("000045", 2000, 3, ltq=4.0, seqq=1.0),
        ],
    )
    sql = "SELECT count(*) FROM stage.fq WHERE z IS NULL"
    assert both(wh, "keep_undeflatable_quarters", "070", sql) == ([(1,)], [(0,)])


# -- k, the statistics and the origins on test_build_fallbacks' panel ---------------------
def _k(wh: Warehouse, *items: str) -> list[Any]:
    marks = ", ".join("?" for _ in items)
    return wh.fetchall(
        "SELECT i.item, k.k, k.k_rule FROM panel.item_k k JOIN ref.items i USING (item_id) "
        f"WHERE i.item IN ({marks}) ORDER BY i.item",
        list(items),
    )


def _fallback_panel(wh: Warehouse, rule: str, upto: str = "080") -> None:
    insert_fundq(wh, fb.rows())
    with declared(flipped(rule)) as rules:
        run_steps(wh, upto, rules=rules)  # type: ignore[arg-type]


def test_k_window_includes_cutoff(wh):
    # test_build_k_stats' pool of deflators whose k moves with 2001Q4 (8007)
    rng = np.random.default_rng(9)
    z = np.exp(rng.standard_normal(200) * 2)
    load_scale_pool(wh, z, first_q=7990)
    qs = 7990 + np.arange(200) % 40
    assert run_k(wh, rules=PUBLISHED)[0][0] == pytest.approx(brute_force_k(z[qs <= 8006]))
    with declared(flipped("k_window_includes_cutoff")) as rules:
        assert run_k(wh, rules=rules)[0][0] == pytest.approx(brute_force_k(z[qs <= 8007]))


def test_k_undefined_kurtosis(wh):
    _fallback_panel(wh, "k_undefined_kurtosis")
    # drcq's training ratios are all 0: no defined kurtosis -> the grid's smallest k, not 1
    assert _k(wh, "drcq") == [("drcq", pytest.approx(0.01, rel=1e-12), "no_kurtosis")]


def test_k_untrained(wh):
    _fallback_panel(wh, "k_untrained")
    got: dict[str, Any] = {
        item: (k, rule) for item, k, rule in _k(wh, "acomincq", "revtq", "stkcoq")
    }
    # stkcoq (reported from 2008 only) takes its statement's median (revtq alone) instead
    # of a look-ahead search; acomincq, without any pool, keeps k_without_pool's k = 1
    assert got["stkcoq"] == (pytest.approx(got["revtq"][0], rel=1e-12), "statement_median")
    assert got["acomincq"] == (1.0, "no_pool")


def test_k_without_pool(wh):
    _fallback_panel(wh, "k_without_pool")
    got: dict[str, Any] = {item: (k, rule) for item, k, rule in _k(wh, "acomincq", "stkcoq")}
    median = wh.scalar(
        "SELECT median(k.k) FROM panel.item_k k JOIN ref.items i USING (item_id) "
        "WHERE k.k_rule = 'window' AND k.item_id > 0 AND i.statement = "
        "(SELECT statement FROM ref.items WHERE item = 'acomincq')"
    )
    assert got["acomincq"] == (pytest.approx(median, rel=1e-12), "statement_median")
    assert got["stkcoq"][1] == "whole_panel"  # k_untrained is still the package's


def test_origin_history(wh):
    _fallback_panel(wh, "origin_history", upto="120")
    gv, single_q = fb.SINGLE
    origins = dict(
        wh.fetchall(
            "SELECT f.gvkey, list(o.origin_q ORDER BY o.origin_q) FROM panel.origins o "
            "JOIN panel.firms f USING (firm_id) GROUP BY 1"
        )
    )
    # four quarters of the firm's own history: no origin for the single filing (the
    # package's rule gives it one), a firm's first origin at its fourth quarter
    assert gv not in origins and single_q not in origins.get(gv, [])
    assert origins["000031"][0] == 8003
    assert wh.scalar("SELECT first_q FROM panel.splits WHERE split = 'train'") == 1971 * 4


# -- the statistics on test_build_k_stats' two-firm panel ---------------------------------
def test_stats_quarters(wh):
    _two_firms(lambda rows: insert_fundq(wh, rows))
    sql = (
        "SELECT r.q, r.sigma_raw FROM stage.raw_stats r JOIN ref.items i USING (item_id) "
        "WHERE i.item = 'revtq' ORDER BY q"
    )
    pub, flip = both(wh, "stats_quarters", "100", sql)
    # revtq's lag pool starts at its fifth report (8004): the package has statistics only
    # where both pools hold values; 'calendar' has every quarter, sigma where available
    assert [r[0] for r in pub] == [8004, 8005]
    assert flip[:4] == [(8000, None), (8001, None), (8002, None), (8003, None)]
    assert flip[4:] == pub
    params = (
        "SELECT count(*) FROM panel.origin_params p JOIN ref.items i USING (item_id) "
        "WHERE i.item = 'revtq'"
    )
    assert wh.scalar(params) == 2  # none before the first sigma


def test_sigma_raw_floor(wh):
    _two_firms(lambda rows: insert_fundq(wh, rows))
    sql = "SELECT sigma_raw FROM stage.raw_stats WHERE item_id = 0 ORDER BY q"
    pub, flip = both(wh, "sigma_raw_floor", "090", sql)
    assert np.allclose(np.array(pub) - np.array(flip), 1e-8, rtol=0, atol=1e-15)


def test_yoy_clip(wh):
    insert_fundq(wh, [row("000046", 2000, k, ltq=1.0, seqq=1.0) for k in (1, 2, 3, 4)])
    sql = "SELECT rules, panel.pf_clip_yoy(100.0, yoy_clip) FROM panel.rule_set"
    pub, flip = both(wh, "yoy_clip", "110", sql)
    assert pub == [("published", 8.4852)]  # 6 x 1.4142 in SQL's decimals
    assert flip == [("published-yoy_clip", 6 * math.sqrt(2))]


# -- one rule set declared, built and scored end to end ----------------------------------
def test_a_declared_rule_set_builds_and_scores_end_to_end(wh):
    """`published` with the fade's fall-back switched: built, the reference baselines
    made and scored under it, recorded by its name, and the fade's forecasts those of the
    switched rule (every (item, horizon) of this small panel has under 100 cells)."""
    from proforma.app import scoring
    from proforma.app.store.rules import current_rules
    from tests.tiny_synthetic import build_tiny_synthetic

    toy = flipped("fade_fallback")
    with declared(toy):
        build_tiny_synthetic(wh, firms=6, start=2007, end=2011, seed=3, rules=toy)
        assert current_rules(wh) is toy
        ids = scoring.run_reference_baselines(wh)
        run = scoring.score(wh, "full", ids, coherence=False)
        assert wh.scalar("SELECT rules FROM eval.score_runs WHERE score_run_id = ?", [run]) == (
            "published-fade_fallback"
        )
        fade = wh.scalar("SELECT submission_id FROM eval.submissions WHERE name = 'Fade / AR(1)'")
        got = wh.fetchall(
            """
            WITH fit AS (
                SELECT item_id, horizon, count(*) AS n, avg(change) AS mean_change
                FROM panel.truth
                WHERE split IN ('train', 'val') AND isfinite(actual) AND isfinite(baseline)
                GROUP BY ALL
            )
            SELECT max(fit.n), count(*),
                   max(abs(f.mu - (t.baseline + coalesce(fit.mean_change, 0))))
            FROM eval.forecasts f
            JOIN panel.truth t USING (firm_id, origin_q, item_id, horizon)
            LEFT JOIN fit USING (item_id, horizon)
            WHERE f.submission_id = ?
            """,
            [fade],
        )
        ((n_max, cells, diff),) = got
        assert n_max < 100 and cells > 0 and diff < 1e-6
        assert wh.scalar(
            "SELECT count(*) FROM eval.metrics WHERE score_run_id = ? AND submission_id = ?",
            [run, fade],
        )
