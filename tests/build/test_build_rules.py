"""The rule sets on one hand-made panel: which origins exist and which cells, lags and
tuples a quarter without a valid deflator contributes (docs/contracts.md, "Rule sets").
Every expectation is worked out here from the documented rules, never from the published
package's code."""

from __future__ import annotations

import math

import pytest

from proforma.app.flows.build import BuildParams, run_build
from proforma.app.model_inputs.views import tabular_reader, tuple_windows
from proforma.contracts.rules import RuleSet
from tests.build.conftest import insert_fundq, qdate
from tests.conftest import temp_settings

Z = 100.001
NO_DEFLATOR = 8005  # 2001Q2: firm A reports revtq but neither ltq, seqq nor atq


def u(q: int) -> float:
    return 0.1 * (q - 8000)


def _panel(tmp_path, rules: str):
    from proforma.app.flows.warehouse import prepare
    from proforma.app.store.warehouse import connect

    wh = connect(temp_settings(tmp_path, f"{rules}.duckdb"))
    prepare(wh)
    rows = []
    for q in range(8000, 8016):  # firm A: 2000Q1..2003Q4
        r = {
            "gvkey": "000020",
            "datadate": qdate(q // 4, q % 4 + 1),
            "fyearq": q // 4,
            "fqtr": q % 4 + 1,
            "fyr": 12,
            "revtq": Z * math.sinh(u(q)),
        }
        if q != NO_DEFLATOR:
            r.update(ltq=60.0, seqq=40.0)
        rows.append(r)
    for q in range(8008, 8016):  # firm B enters in 2002Q1
        rows.append(
            {
                "gvkey": "000021",
                "datadate": qdate(q // 4, q % 4 + 1),
                "fyearq": q // 4,
                "fqtr": q % 4 + 1,
                "fyr": 12,
                "ltq": 10.0,
                "seqq": 5.0,
                "revtq": 3.0,
            }
        )
    insert_fundq(wh, rows)
    stats = tmp_path / "stats.parquet"
    wh.execute(
        f"COPY (SELECT qend(q)::TIMESTAMP AS quarter, item AS feature, 0.0 AS mu, 1.0 AS sigma, "
        f"1.0 AS k FROM range(7990, 8050) t(q), ref.items) TO '{stats}' (FORMAT parquet)"
    )
    run_build(wh, stats, BuildParams(rules=RuleSet.parse(rules)))
    return wh


@pytest.fixture(scope="module")
def panels(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rules")
    out = {rules: _panel(tmp, rules) for rules in ("published", "paper")}
    yield out
    for wh in out.values():
        wh.close()


def _origins(wh, gvkey: str) -> list[int]:
    return [
        r[0]
        for r in wh.fetchall(
            "SELECT origin_q FROM panel.origins JOIN panel.firms USING (firm_id) WHERE gvkey = ? "
            "ORDER BY 1",
            [gvkey],
        )
    ]


def test_origins(panels):
    # A: never at the quarter without a deflator; from the panel's 4th quarter (2000Q4) on
    # (published) = from its 4th scale-valid quarter (paper).
    a = [q for q in range(8003, 8016) if q != NO_DEFLATOR]
    assert _origins(panels["published"], "000020") == a
    assert _origins(panels["paper"], "000020") == a
    # B enters in 2002Q1: published needs no firm history, paper four quarters of it.
    assert _origins(panels["published"], "000021") == list(range(8008, 8016))
    assert _origins(panels["paper"], "000021") == list(range(8011, 8016))


def _revtq(wh) -> int:
    return wh.scalar("SELECT item_id FROM ref.items WHERE item = 'revtq'")


def test_a_quarter_without_deflator_is_a_target_only_under_published(panels):
    for rules, expect in (("published", [1, 2, 3]), ("paper", [2, 3])):
        wh = panels[rules]
        cells = {
            r[0]: r[1]
            for r in wh.fetchall(
                "SELECT horizon, actual FROM panel.truth JOIN panel.firms USING (firm_id) "
                "WHERE gvkey = '000020' AND origin_q = 8004 AND item_id = ?",
                [_revtq(wh)],
            )
        }
        assert sorted(cells) == expect, rules  # train origin 2001Q1: purged after 2001Q4
        # deflated by the ORIGIN's z (100.001): asinh(sinh(u)) = u
        assert cells[2] == pytest.approx(u(8006), abs=1e-6)
        if rules == "published":
            assert cells[1] == pytest.approx(u(NO_DEFLATOR), abs=1e-6)


def test_a_quarter_without_deflator_is_a_lag_only_under_published(panels):
    for rules in ("published", "paper"):
        wh = panels[rules]
        row = next(
            r
            for b in tabular_reader(wh, "train", columns=["revtq_level_1", "revtq_level_0"])
            for r in b.to_pylist()
            if r["origin_q"] == 8006 and r["firm_id"] == 1
        )
        window = next(
            r
            for b in tuple_windows(wh, "train", future=False, origin_q=8006)
            for r in b.to_pylist()
            if r["firm_id"] == 1
        )
        lag1 = [
            x
            for rel, i, x in zip(window["rel_q"], window["item_id"], window["x"], strict=True)
            if rel == -1 and i == _revtq(wh)
        ]
        if rules == "published":
            assert row["revtq_level_1"] == pytest.approx(u(NO_DEFLATOR), abs=1e-6)
            assert lag1 == [pytest.approx(u(NO_DEFLATOR), abs=1e-6)]
        else:
            assert row["revtq_level_1"] is None and lag1 == []
        assert row["revtq_level_0"] == pytest.approx(u(8006), abs=1e-6)
    # the quarter's values are in the published tuple view, but never its deflator
    wh = panels["published"]
    assert (
        wh.scalar(
            "SELECT count(*) FROM panel.values WHERE firm_id = 1 AND q = ? AND item_id = 0",
            [NO_DEFLATOR],
        )
        == 0
    )
    assert (
        wh.scalar(
            "SELECT count(*) FROM panel.values WHERE firm_id = 1 AND q = ? AND item_id = ?",
            [NO_DEFLATOR, _revtq(wh)],
        )
        == 1
    )
