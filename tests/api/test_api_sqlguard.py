"""The public SQL surface: a corpus of hostile queries, each rejected with a specific
message by the sqlglot allow-list; DuckDB's own guards behind it; row and time limits."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from service_helpers import Api

from proforma.app.read.snapshot_connection import open_snapshot
from proforma.app.read.sqlguard import (
    QueryRejected,
    QueryTimeout,
    SnapshotMissing,
    check_sql,
    run_query,
    snapshot_schema,
)


@pytest.fixture
def snap(tmp_path: Path) -> Path:
    path = tmp_path / "public.duckdb"
    con = duckdb.connect(str(path))
    con.execute(
        "CREATE TABLE leaderboard AS SELECT 'full' AS footprint, 'm' || i AS model, "
        "i / 100.0 AS r2, 1000 + i AS n FROM range(50) t(i)"
    )
    con.execute("CREATE TABLE items AS SELECT 1 AS item_id, 'atq' AS item")
    con.close()
    return path


HOSTILE = [
    ("", "empty"),
    ("   ", "empty"),
    ("SELECT 1; SELECT 2", "Exactly one SELECT statement is allowed; the query holds 2"),
    ("SELECT * FROM leaderboard; DROP TABLE leaderboard", "Exactly one SELECT"),
    ("DROP TABLE leaderboard", "Only SELECT queries are allowed"),
    ("DELETE FROM leaderboard", "Only SELECT queries are allowed"),
    ("INSERT INTO leaderboard VALUES (1)", "Only SELECT queries are allowed"),
    ("UPDATE leaderboard SET r2 = 1", "Only SELECT queries are allowed"),
    ("CREATE TABLE x AS SELECT 1", "Only SELECT queries are allowed"),
    ("COPY leaderboard TO '/tmp/out.csv'", "Only SELECT queries are allowed"),
    ("ATTACH '/work/main/data/warehouse.duckdb' AS w", "Only SELECT queries are allowed"),
    ("PRAGMA database_list", "Only SELECT queries are allowed"),
    ("SET enable_external_access = true", "Only SELECT queries are allowed"),
    ("INSTALL httpfs", "Only SELECT queries are allowed, not INSTALL."),
    ("LOAD httpfs", "not LOAD"),
    ("EXPORT DATABASE '/tmp/x'", "not EXPORT"),
    ("/* hidden */ -- comment\n  CALL pragma_version()", "not CALL"),
    ("DESCRIBE leaderboard", "not DESCRIBE"),
    ("SELECT * INTO stolen FROM leaderboard", "SELECT ... INTO is not allowed"),
    ("SELECT * FROM read_csv('/etc/passwd')", "read_csv() is not allowed"),
    ("SELECT * FROM read_csv_auto('/etc/passwd')", "not allowed"),
    ("SELECT * FROM read_parquet('data/warehouse.duckdb')", "read_parquet() is not allowed"),
    ("SELECT * FROM read_text('/etc/passwd')", "read_text() is not allowed"),
    ("SELECT * FROM read_blob('/etc/shadow')", "read_blob() is not allowed"),
    ("SELECT * FROM glob('/*')", "not allowed"),
    ("SELECT * FROM '/etc/passwd'", "File paths are not allowed"),
    ("SELECT * FROM 'data/warehouse.duckdb'", "File paths are not allowed"),
    ('SELECT * FROM "../secret.csv"', "File paths are not allowed"),
    ("SELECT * FROM query('SELECT 1')", "query() is not allowed"),
    ("SELECT * FROM duckdb_settings()", "duckdb_settings() is not allowed"),
    ("SELECT * FROM duckdb_tables()", "not allowed"),
    ("SELECT * FROM pragma_table_info('leaderboard')", "not allowed"),
    ("SELECT current_setting('memory_limit')", "current_setting() is not allowed"),
    ("SELECT getvariable('public_min_cells')", "getvariable() is not allowed"),
    ("SELECT * FROM information_schema.tables", "Qualified table names"),
    ("SELECT * FROM store.metrics", "Qualified table names"),  # the views' stored rows
    ("SELECT * FROM main.leaderboard", "Qualified table names"),
    ("SELECT * FROM warehouse.eval.forecasts", "Qualified table names"),
    ("SELECT * FROM forecasts", "Unknown or non-public table 'forecasts'"),
    ("SELECT * FROM duckdb_settings", "Unknown or non-public table"),
    ("SELECT * FROM sqlite_master", "Unknown or non-public table"),
    (
        "SELECT * FROM leaderboard WHERE model IN (SELECT gvkey FROM firms)",
        "Unknown or non-public table 'firms'",
    ),
    # a CTE name only counts where it is visible: the outer `secrets` is a real (unknown) table
    (
        "SELECT * FROM (WITH secrets AS (SELECT 1 AS a) SELECT * FROM secrets) s, secrets",
        "Unknown or non-public table 'secrets'",
    ),
    (
        "WITH leaderboard AS (SELECT * FROM read_csv('/etc/passwd')) SELECT * FROM leaderboard",
        "read_csv() is not allowed",
    ),
    (
        "WITH t AS (SELECT * FROM forecasts) SELECT * FROM t",
        "Unknown or non-public table 'forecasts'",
    ),
    ("SELECT password FROM leaderboard", "Unknown column 'password'"),
    ("SELECT l.secret FROM leaderboard l", "Unknown column"),
    ("SELECT model FROM leaderboard ORDER BY mu", "Unknown column 'mu'"),
    ("SELECT FROM WHERE", "Cannot parse the query"),
    ("SELECT 'unterminated", "Cannot parse"),
    ("SELECT " + "1+" * 30_000 + "1", "characters long; the limit is"),
]


@pytest.mark.parametrize(("sql", "message"), HOSTILE)
def test_hostile_sql_is_rejected(snap: Path, sql: str, message: str) -> None:
    with pytest.raises(QueryRejected) as err:
        run_query(sql, snap, max_rows=100, timeout_s=2)
    assert message in str(err.value)


ALLOWED = [
    "SELECT model, r2 FROM leaderboard ORDER BY r2 DESC",
    "FROM leaderboard SELECT count(*)",
    "WITH top AS (SELECT * FROM leaderboard WHERE r2 > 0.2) SELECT model FROM top",
    "WITH leaderboard AS (SELECT 1 AS z) SELECT z FROM leaderboard",  # a CTE shadowing a table
    "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 5) SELECT n FROM t",
    "SELECT footprint, avg(r2) AS m FROM leaderboard GROUP BY footprint HAVING m > 0",
    "SELECT l.model, i.item FROM leaderboard l CROSS JOIN items i",
    "SELECT model FROM leaderboard UNION ALL SELECT item FROM items",
    "SELECT model, row_number() OVER (ORDER BY r2 DESC) AS rk FROM leaderboard QUALIFY rk <= 3",
    "SELECT * EXCLUDE (n) FROM leaderboard",
    "SELECT upper(model), round(r2, 2), list_transform([1, 2], x -> x + 1) FROM leaderboard",
    "select * from LEADERBOARD",
]


@pytest.mark.parametrize("sql", ALLOWED)
def test_allowed_queries_run(snap: Path, sql: str) -> None:
    result = run_query(sql, snap, max_rows=100, timeout_s=5)
    assert result.columns and not result.truncated


def test_row_limit_and_order(snap: Path) -> None:
    r = run_query(
        "SELECT model, r2 FROM leaderboard ORDER BY r2 DESC", snap, max_rows=10, timeout_s=5
    )
    assert len(r.rows) == 10 and r.truncated
    assert [row[0] for row in r.rows[:3]] == ["m49", "m48", "m47"]


def test_time_limit(snap: Path) -> None:
    sql = (
        "SELECT count(*) FROM leaderboard a, leaderboard b, leaderboard c, leaderboard d, "
        "leaderboard e, leaderboard f, leaderboard g"
    )
    with pytest.raises(QueryTimeout, match="time limit"):
        run_query(sql, snap, max_rows=10, timeout_s=0.5)


def test_duckdb_guards_behind_the_allow_list(snap: Path, tmp_path: Path) -> None:
    """Even SQL that skipped sqlglot cannot read files, change settings or write."""
    (tmp_path / "x.csv").write_text("a\n1\n")
    con = open_snapshot(snap, "128MB")
    try:
        for sql, fragment in [
            (f"SELECT * FROM read_csv('{tmp_path / 'x.csv'}')", "permission"),
            ("SET enable_external_access = true", "configuration"),
            ("SET memory_limit = '10GB'", "configuration"),
            ("CREATE TABLE t (a INT)", "read-only"),
            ("INSTALL httpfs", ""),
            (f"ATTACH '{tmp_path / 'other.duckdb'}' AS o", ""),
        ]:
            with pytest.raises(duckdb.Error) as err:
                con.execute(sql).fetchall()
            assert fragment.lower() in str(err.value).lower(), (sql, str(err.value))
    finally:
        con.close()


def test_unknown_columns_checked_against_schema(snap: Path) -> None:
    schema = snapshot_schema(snap)
    assert set(schema) == {"leaderboard", "items"}
    assert check_sql("SELECT model FROM leaderboard", schema).tables == ("leaderboard",)
    with pytest.raises(QueryRejected, match="Unknown column"):
        check_sql("SELECT item FROM leaderboard", schema)


def test_no_snapshot(tmp_path: Path) -> None:
    with pytest.raises(SnapshotMissing):
        run_query("SELECT 1", tmp_path / "absent.duckdb", max_rows=1, timeout_s=1)


def test_query_endpoint(api: Api) -> None:
    c = api.client
    r = c.post("/api/v1/query", json={"sql": "SELECT item_id, item FROM items ORDER BY item_id"})
    assert r.status_code == 200
    body = r.json()
    assert body["columns"] == ["item_id", "item"] and body["rows"][1] == [1, "acomincq"]
    assert body["truncated"] is False and body["tables"] == ["items"]
    r = c.get("/api/v1/query", params={"sql": "SELECT item FROM items", "format": "csv"})
    assert r.status_code == 200 and r.text.splitlines()[0] == '"item"'
    for sql, status, fragment in [
        ("SELECT * FROM eval.forecasts", 400, "Qualified table names"),
        ("SELECT * FROM read_csv('/etc/passwd')", 400, "not allowed"),
        ("DELETE FROM items", 400, "Only SELECT"),
        ("SELECT nope FROM items", 400, "Unknown column 'nope'"),
    ]:
        r = c.post("/api/v1/query", json={"sql": sql})
        assert r.status_code == status and fragment in r.json()["detail"], (sql, r.text)
    r = c.post("/api/v1/query", json={"sql": "SELECT 1", "format": "xml"})
    assert r.status_code == 422 and "format" in r.json()["detail"]
    r = c.post("/api/v1/query", json={})
    assert r.status_code == 422 and "sql" in r.json()["detail"]
    # more rows than the limit (500 in the tests): truncated, not an error
    r = c.post("/api/v1/query", json={"sql": "SELECT a.item FROM items a, items b"})
    assert r.status_code == 200 and r.json()["truncated"] is True and r.json()["row_count"] == 500
    slow = "SELECT count(*) FROM items a, items b, items c, items d, items e, items f"
    r = c.post("/api/v1/query", json={"sql": slow})
    assert r.status_code == 408 and "time limit" in r.json()["detail"]
    tables = c.get("/api/v1/query/tables").json()["tables"]
    assert "leaderboard" in tables and "forecasts" not in tables
