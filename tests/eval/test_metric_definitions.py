"""The aggregate SQL follows the metric definitions (contracts/metrics.py): each step is
parsed with sqlglot as it runs (its metric slots filled) and its sums, finishes, columns
and coverage bounds are compared, as parsed expressions, with the registry's."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import sqlglot
from sqlglot import exp

from proforma.app.scoring.provenance import eval_sql_version
from proforma.app.store import metric_sql
from proforma.app.store.sqlfiles import sql_file
from proforma.contracts import metrics as registry
from proforma.contracts.metrics import (
    CELL_INPUTS,
    COVERAGE_LEVELS,
    METRICS,
    POINT_INPUTS,
    STORED_SUMS,
    SUMS,
    Disclosure,
    cluster_sums,
    coverage_bounds,
    used_sums,
)


def _parse(sql: str) -> Any:
    return sqlglot.parse_one(sql, read="duckdb")


# A step's table placeholders ({{ forecasts }}, {{ cells }}: the relation the caller
# scores, a stored upload file or a table) are not metric slots; parse them as tables.
_TABLE_SLOT = re.compile(r"\{\{\s*((?!metric_)[a-z_]+)\s*\}\}")


def _statements(step: str) -> list[Any]:
    text = _TABLE_SLOT.sub(r"\1", sql_file(step).text)
    assert "{{" not in text, f"{step}: a metric slot left unfilled"
    return [s for s in sqlglot.parse(text, read="duckdb") if s is not None]


def _projections(select: exp.Select) -> dict[str, exp.Expression]:
    return {e.alias_or_name: e.unalias() for e in select.expressions}


def _cte(statement: exp.Expression, name: str) -> exp.Select:
    for cte in statement.find_all(exp.CTE):
        if cte.alias == name:
            select = cte.this
            assert isinstance(select, exp.Select)
            return select
    raise AssertionError(f"no CTE {name}")


def _source(select: exp.Select) -> exp.Select:
    """The subquery a step reads its cells from (the first in its FROM)."""
    sub = select.find(exp.Subquery)
    assert sub is not None and isinstance(sub.this, exp.Select)
    return sub.this


def _columns(sql: str) -> set[str]:
    return {c.name for c in _parse(sql).find_all(exp.Column)}


def _sums_match(projections: dict[str, exp.Expression], where: str) -> None:
    for name in used_sums():
        assert name in projections, f"{where}: no sum {name}"
        assert projections[name] == _parse(SUMS[name].sql), (
            f"{where}: {name} is {projections[name].sql('duckdb')}, its definition {SUMS[name].sql}"
        )


def _rollup_matches(projections: dict[str, exp.Expression], where: str) -> None:
    for name in used_sums():
        assert projections.get(name) == _parse(f"sum({name})"), f"{where}: {name} not summed"


def _finishes_match(projections: dict[str, exp.Expression], where: str) -> None:
    for m in METRICS.values():
        assert m.name in projections, f"{where}: no metric {m.name}"
        assert projections[m.name] == _parse(m.finish), (
            f"{where}: {m.name} is {projections[m.name].sql('duckdb')}, its definition {m.finish}"
        )


def _bounds(e: exp.Expression) -> tuple[float, float]:
    assert isinstance(e, exp.Between), e.sql("duckdb")
    return float(e.args["low"].this), float(e.args["high"].this)


# -- the definitions themselves ------------------------------------------------------------


def test_each_sum_reads_the_inputs_it_names() -> None:
    for s in SUMS.values():
        tree = _parse(s.sql)
        assert tree.find(exp.AggFunc) is not None, f"{s.name} is no aggregate"
        assert _columns(s.sql) == set(s.inputs), s.name
        assert set(s.inputs) <= set(CELL_INPUTS), s.name
        assert s.type in ("BIGINT", "DOUBLE"), s.name


def test_each_metric_finishes_from_its_own_sums() -> None:
    assert set(STORED_SUMS) <= set(SUMS)
    for m in METRICS.values():
        assert set(m.sums) <= set(SUMS), m.name
        assert _columns(m.finish) <= set(m.sums), f"{m.name} reads sums it does not name"
        assert m.label and m.description and m.tracks, m.name
        if m.point:  # a point metric must be computable for a point-only submission
            assert not any(SUMS[s].density for s in m.sums), m.name
        assert (m.target is not None) == (m.better is registry.Better.target), m.name
        if m.disclosure in (Disclosure.noise, Disclosure.headline_noise):
            assert m.sensitivity and m.sensitivity > 0, m.name
    assert registry.coverage_names() == tuple(f"cov{p}" for p in COVERAGE_LEVELS)


# -- the steps ------------------------------------------------------------------------------


def test_run_agg_columns_are_the_sums() -> None:
    create, clusters, pit = _statements("eval/064_run_aggregates")
    assert [c.name for c in pit.this.expressions] == ["submission_id", "bin", "n"]
    # the bootstrap's clusters (issue 49): the headline metrics' sums per firm and quarter
    assert [c.name for c in clusters.this.expressions] == [
        "submission_id",
        "firm_id",
        "origin_q",
        *cluster_sums(),
    ]
    defs = [c for c in create.this.expressions if isinstance(c, exp.ColumnDef)]
    names = [c.name for c in defs]
    first, last = names.index("origin_q") + 1, names.index("pit0")
    assert names[first:last] == list(used_sums())
    types = {c.name: c.args["kind"].sql("duckdb") for c in defs}
    assert all(types[s] == SUMS[s].type for s in used_sums())


def test_cell_aggregates_follow_the_sums() -> None:
    """065 and 066 sum the stored cell scores in one pass (grouping sets) by group, by
    (firm, origin quarter) for the bootstrap's clusters and (065) by PIT bin, then fill
    run_agg, run_clusters and run_pit from it."""
    create, insert, clusters, pit, drop = _statements("eval/065_cell_aggregates")
    select = create.expression
    _sums_match(_projections(select), "065")
    # the cells: the stored score columns (c.*) with r_abs replaced, and y
    named = {a.alias for a in _source(select).find_all(exp.Alias)}
    assert {"y", "r_abs"} <= named, "065 gives the cells no y or r_abs"
    assert insert.this.sql("duckdb") == "run_agg"
    assert clusters.this.sql("duckdb") == "run_clusters"
    assert [c.name for c in clusters.expression.expressions][3:] == list(cluster_sums())
    assert pit.this.sql("duckdb") == "run_pit"
    assert isinstance(drop, exp.Drop)
    # the point-only step: point sums as defined, density sums constant
    create, insert, clusters, drop = _statements("eval/066_cell_aggregates_point")
    assert insert.this.sql("duckdb") == "run_agg"
    assert clusters.this.sql("duckdb") == "run_clusters"
    assert [c.name for c in clusters.expression.expressions][3:] == list(cluster_sums())
    select = create.expression
    got = _projections(select)
    assert set(_projections(_source(select))) >= set(POINT_INPUTS)
    for name in used_sums():
        if SUMS[name].density:
            assert isinstance(got[name], exp.Cast), f"066: {name} is not a constant"
            assert got[name].this.sql() in ("0", "NULL"), name
        else:
            assert got[name] == _parse(SUMS[name].sql), f"066: {name}"


def test_positional_aggregates_follow_the_sums() -> None:
    """067 and 069 (uploads met by position) sum as 065 and 066: the same sums over
    057's terms, a single forecast's absolute track its residual, PIT in run_pit: 067's
    one pass (grouping sets) sums by group and counts the PIT bins, then fills both."""
    create, insert, clusters, pit, drop = _statements("eval/067_cell_aggregates_positional")
    assert clusters.this.sql("duckdb") == "run_clusters"
    select = create.expression
    _sums_match(_projections(select), "067")
    assert _projections(_source(select))["r_abs"] == _parse("r")
    assert insert.this.sql("duckdb") == "run_agg"
    assert pit.this.sql("duckdb") == "run_pit"
    assert isinstance(drop, exp.Drop)
    insert, clusters = _statements("eval/069_cell_aggregates_positional_point")
    assert clusters.this.sql("duckdb") == "run_clusters"
    got = _projections(insert.expression)
    for name in used_sums():
        if SUMS[name].density:
            assert isinstance(got[name], exp.Cast), f"069: {name} is not a constant"
        else:
            assert got[name] == _parse(SUMS[name].sql), f"069: {name}"


def test_metrics_step_rolls_up_and_finishes_every_metric() -> None:
    create, insert, *_ = _statements("eval/070_metrics")
    _rollup_matches(_projections(create.expression), "070 run_fine")
    _rollup_matches(_projections(_cte(insert, "rolled")), "070 rolled")
    final = _projections(insert.expression)
    _finishes_match(final, "070")
    assert set(STORED_SUMS) <= set(final)


def test_round_metrics_follow_the_definitions() -> None:
    (query,) = _statements("rounds/050_metrics")
    cells = _projections(_cte(query, "cells"))
    assert set(CELL_INPUTS) <= set(cells)
    _sums_match(_projections(_cte(query, "rolled")), "rounds 050")
    _finishes_match(_projections(query), "rounds 050")


def test_live_round_metrics_follow_the_definitions() -> None:
    (query,) = _statements("rounds/055_live_metrics")
    assert set(CELL_INPUTS) <= set(_projections(_cte(query, "cells")))
    _sums_match(_projections(_cte(query, "rolled")), "rounds 055")
    _finishes_match(_projections(query), "rounds 055")


def test_cell_scores_use_the_coverage_levels() -> None:
    """The per-cell in{p} of the density terms are the registry's central intervals (the
    static scorer's and the rounds' alike: sql/rounds/040 reads the same terms)."""
    steps = ("eval/057_single_cell_terms", "eval/054_mixture_cell_terms")
    for step in steps:
        found: set[int] = set()
        for tree in _statements(step):
            for alias in tree.find_all(exp.Alias):
                if alias.alias.startswith("in") and alias.alias[2:].isdigit():
                    p = int(alias.alias[2:])
                    assert p in COVERAGE_LEVELS, f"{step}: in{p} is no coverage level"
                    assert _bounds(alias.this) == coverage_bounds(p), f"{step}: in{p}"
                    found.add(p)
        assert found == set(COVERAGE_LEVELS), step


def _created(statements: list[exp.Expression], table: str) -> exp.Select:
    for s in statements:
        if isinstance(s, exp.Create) and s.this.sql("duckdb") == table:
            assert isinstance(s.expression, exp.Select)
            return s.expression
    raise AssertionError(f"no {table}")


@pytest.mark.parametrize(
    "step, table",
    [
        # each row's public values are computed once into the publisher's store (the
        # incremental publication); the view pub.metrics shows them from there
        ("public/005_public_rows", "public_metric_new"),
        ("public/050_rounds", "pub.round_metrics"),
    ],
)
def test_public_metrics_are_the_registry_noised_as_defined(step: str, table: str) -> None:
    statements = _statements(step)
    select = _created(statements, table)
    names = [e.alias_or_name for e in select.expressions]
    assert names[names.index("n") + 1 :] == list(METRICS)
    got = _projections(select)
    mse = METRICS["mse"]
    for m in METRICS.values():
        calls = [f for f in got[m.name].find_all(exp.Anonymous) if f.name.lower() == "pf_coarsen"]
        if m.disclosure is Disclosure.withheld:
            assert not calls, m.name
            continue
        # the noise's scale: the grant times the sensitivity over n (R2: the MSE's)
        spec = mse if m.disclosure is Disclosure.from_mse else m
        assert calls, m.name
        for call in calls:
            value, scale, label = call.expressions
            assert value.sql("duckdb") == spec.name, m.name
            assert any(
                isinstance(lit, exp.Literal) and float(lit.this) == spec.sensitivity
                for lit in scale.find_all(exp.Literal)
            ), f"{m.name}: scale {scale.sql('duckdb')} is not noise_sigma * {spec.sensitivity} / n"
            assert {c.name for c in scale.find_all(exp.Column)} == {"noise_sigma", "n"}
            assert f"'{spec.name}'" in label.sql("duckdb"), m.name
    if step == "public/005_public_rows":
        scores = _statements("public/040_scores")
        board = [e.alias_or_name for e in _created(scores, "pub.leaderboard").expressions]
        assert set(METRICS) <= set(board)


def test_stored_rows_have_a_column_per_metric(wh) -> None:
    from proforma.app.flows.warehouse import prepare

    prepare(wh)
    for table in ("eval.metric_rows", "eval.metrics", "rounds.metrics"):
        schema, name = table.split(".")
        cols = dict(
            wh.fetchall(
                "SELECT column_name, data_type FROM information_schema.columns "
                "WHERE table_schema = ? AND table_name = ?",
                [schema, name],
            )
        )
        for m in METRICS:
            assert cols.get(m) == "DOUBLE", f"{table} has no DOUBLE column {m}"
    inputs = {
        r[0]
        for r in wh.fetchall(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = 'eval' AND table_name = 'cell_density_scores'"
        )
    }
    assert set(CELL_INPUTS) - {"y"} <= inputs


def test_a_changed_definition_is_a_new_scoring_sql_version(monkeypatch) -> None:
    from dataclasses import replace

    before = eval_sql_version()
    with monkeypatch.context() as m:
        m.setitem(METRICS, "mse", replace(METRICS["mse"], finish="sse / nullif(n, 0)"))
        changed = eval_sql_version()
        assert "sse / nullif(n, 0) AS mse" in sql_file("eval/070_metrics").text
    assert changed != before
    assert eval_sql_version() == before


def test_an_unknown_slot_is_refused() -> None:
    with pytest.raises(KeyError, match="metric_nonsense"):
        metric_sql.expand("SELECT {{ metric_nonsense }}")


def test_the_docs_table_lists_every_metric_as_defined() -> None:
    """docs/scoring.md's table of metrics: name, label, kind, direction and tracks."""
    text = (Path(__file__).parents[2] / "docs" / "scoring.md").read_text()
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and cells[0].startswith("`") and cells[0].strip("`") in METRICS:
            rows[cells[0].strip("`")] = cells
    assert list(rows) == list(METRICS)
    for name, (_, label, kind, better, _, tracks, _) in rows.items():
        m = METRICS[name]
        want = f"closer to {m.target:g}" if m.target is not None else m.better.value
        assert (label, kind, better) == (m.label, m.kind.value, want), name
        assert tuple(t.strip() for t in tracks.split(",")) == m.tracks, name
