"""Public SQL, guarded twice.

1. `check_sql` (sqlglot): exactly one SELECT (set operations of SELECTs included); every
   table reference, resolved scope by scope so that CTE names shadow correctly, is either
   a CTE in scope or one of the snapshot's public tables; no table functions, no file
   paths, no catalog qualifiers, no functions that read settings or variables; every
   column must exist (sqlglot's qualifier with the snapshot's schema).
2. `run_query` (DuckDB): the checked statement, regenerated from its syntax tree, runs on
   a fresh read-only connection to public.duckdb with external access disabled, extension
   auto-loading off and the configuration locked, under a memory limit, a row limit
   (LIMIT n+1, so truncation is reported) and a time limit (`interrupt()` from a timer).

The snapshot itself holds only aggregates, scores and footprint membership (see
app/read/snapshot.py), so even a query that slipped through could not see firm values.
"""

from __future__ import annotations

import functools
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import sqlglot
import sqlglot.errors
from sqlglot import exp
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import traverse_scope

from proforma.app.read.errors import ApiError

if TYPE_CHECKING:
    from proforma.app.read.console_workers import ConsoleWorkers
from proforma.app.read.snapshot import reading
from proforma.app.read.snapshot_connection import open_snapshot

MAX_SQL_CHARS = 20_000

#: Scalar functions that would reveal the server's configuration or session state.
_DENIED_FUNCTIONS = frozenset(
    {"current_setting", "getvariable", "getenv", "read_text", "read_blob", "query", "query_table"}
)


# The first word of the query, after any comments: statements other than queries are
# refused by name even where sqlglot cannot parse them (EXPORT, INSTALL, ...).
_LEADING_WORD = re.compile(r"^(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/)*([A-Za-z_]+)", re.DOTALL)
_QUERY_STARTS = frozenset({"SELECT", "WITH", "FROM", "VALUES"})


class QueryRejected(ApiError):
    """The SQL failed the allow-list (HTTP 400)."""

    status_code = 400


class QueryTimeout(ApiError):
    """The query ran past the time limit and was interrupted (HTTP 408)."""

    status_code = 408


class SnapshotMissing(ApiError):
    """No public snapshot has been published yet (HTTP 503)."""

    status_code = 503


@functools.lru_cache(maxsize=1)
def _duckdb_functions() -> tuple[frozenset[str], frozenset[str]]:
    """(table-only functions, all scalar/aggregate/window/macro functions) of this DuckDB."""
    con = duckdb.connect()
    try:
        rows = con.execute(
            "SELECT DISTINCT lower(function_name), function_type FROM duckdb_functions()"
        ).fetchall()
    finally:
        con.close()
    table = {n for n, t in rows if t in ("table", "table_macro", "pragma")}
    scalar = {n for n, t in rows if t in ("scalar", "aggregate", "window", "macro")}
    return frozenset(table - scalar), frozenset(scalar)


@dataclass(frozen=True)
class CheckedQuery:
    sql: str  # regenerated from the checked tree: exactly what was checked runs
    tables: tuple[str, ...]


@dataclass
class QueryResult:
    columns: list[str]
    types: list[str]
    rows: list[list[Any]]
    truncated: bool
    elapsed_ms: float
    tables: tuple[str, ...] = field(default_factory=tuple)


def _function_name(node: exp.Func) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    return node.sql_name().lower()


def check_sql(sql: str, schema: dict[str, dict[str, str]]) -> CheckedQuery:
    """Parse and check one public query against the snapshot's `schema` {table: {col: type}}."""
    tree = _one_select(sql)
    _check_functions(tree)
    used = _public_tables(tree, schema)
    _check_columns(tree, schema)
    return CheckedQuery(tree.sql(dialect="duckdb"), tuple(sorted(used)))


def _one_select(sql: str) -> exp.Query:
    """The query's one SELECT statement, parsed; no INTO, command, PRAGMA, SET, COPY or
    ATTACH inside it."""
    if not sql or not sql.strip():
        raise QueryRejected("The query is empty: send one SELECT statement.")
    if len(sql) > MAX_SQL_CHARS:
        raise QueryRejected(
            f"The query is {len(sql):,} characters long; the limit is {MAX_SQL_CHARS:,}."
        )
    lead = _LEADING_WORD.match(sql)
    if lead and lead.group(1).upper() not in _QUERY_STARTS:
        raise QueryRejected(f"Only SELECT queries are allowed, not {lead.group(1).upper()}.")
    try:
        statements = [s for s in sqlglot.parse(sql, read="duckdb") if s is not None]
    except sqlglot.errors.ParseError as exc:
        first = exc.errors[0] if exc.errors else {}
        where = f" at line {first.get('line')}, column {first.get('col')}" if first else ""
        raise QueryRejected(
            f"Cannot parse the query{where}: {first.get('description', exc)}."
        ) from None
    except (sqlglot.errors.SqlglotError, RecursionError) as exc:
        raise QueryRejected(f"Cannot parse the query: {str(exc).splitlines()[0][:200]}") from None
    if len(statements) != 1:
        raise QueryRejected(
            f"Exactly one SELECT statement is allowed; the query holds {len(statements)} statements."
        )
    tree = statements[0]
    if not isinstance(tree, exp.Query):
        kind = tree.key.upper() if tree.key else type(tree).__name__.upper()
        raise QueryRejected(f"Only SELECT queries are allowed, not {kind}.")
    if tree.find(exp.Into):
        raise QueryRejected("SELECT ... INTO is not allowed: the snapshot is read-only.")
    for node in tree.find_all(exp.Command, exp.Pragma, exp.Set, exp.Copy, exp.Attach):
        raise QueryRejected(f"{node.key.upper()} is not allowed inside a query.")
    return tree


def _check_functions(tree: exp.Query) -> None:
    """No function that reads files or the catalog, and no table function."""
    table_only, _ = _duckdb_functions()
    for fn in tree.find_all(exp.Func):
        name = _function_name(fn)
        if name in _DENIED_FUNCTIONS or name.startswith(
            ("read_", "parquet_", "duckdb_", "pragma_")
        ):
            raise QueryRejected(f"The function {name}() is not allowed in public queries.")
        if isinstance(fn, exp.Anonymous) and name in table_only:
            raise QueryRejected(f"Table functions such as {name}() are not allowed.")


def _public_tables(tree: exp.Query, schema: dict[str, dict[str, str]]) -> set[str]:
    """The public tables the query reads (each reference resolved in its own scope); no
    table function, qualified name or file path."""
    allowed = {t.lower() for t in schema}
    for tbl in tree.find_all(exp.Table):
        if not isinstance(tbl.this, exp.Identifier):
            what = tbl.this.sql(dialect="duckdb") if tbl.this is not None else "?"
            raise QueryRejected(f"Table functions are not allowed in FROM: {what[:80]}.")
        if tbl.args.get("catalog") or tbl.args.get("db"):
            raise QueryRejected(
                f"Qualified table names ({tbl.sql(dialect='duckdb')}) are not allowed: "
                f"name a public table directly."
            )
        if any(c in tbl.name for c in "/\\:") or "." in tbl.name or tbl.name.startswith("~"):
            raise QueryRejected(f"File paths are not allowed as tables: {tbl.name!r}.")

    used: set[str] = set()
    # Resolve every table reference in its own scope: a CTE name counts only where it is
    # visible, so `WITH t AS (...)` in a subquery does not unlock a table `t` elsewhere.
    try:
        scopes = traverse_scope(tree)
    except (sqlglot.errors.SqlglotError, RecursionError) as exc:
        raise QueryRejected(f"Cannot analyse the query: {str(exc).splitlines()[0][:200]}") from None
    for scope in scopes:
        for source in scope.sources.values():
            if isinstance(source, exp.Table):
                name = source.name.lower()
                if name not in allowed:
                    listing = ", ".join(sorted(schema)) or "(none published yet)"
                    raise QueryRejected(
                        f"Unknown or non-public table {source.name!r}. Public tables: {listing}."
                    )
                used.add(name)
    return used


def _check_columns(tree: exp.Query, schema: dict[str, dict[str, str]]) -> None:
    """Every column the query names is one of the tables it reads."""
    try:
        qualify(
            tree.copy(),
            schema={t.lower(): cols for t, cols in schema.items()},
            dialect="duckdb",
            validate_qualify_columns=True,
            identify=False,
        )
    except sqlglot.errors.OptimizeError as exc:
        message = str(exc).split(". Line:")[0].rstrip(".")
        if message.startswith("Column ") and "could not be resolved" in message:
            column = message.removeprefix("Column ").split(" could not")[0]
            message = f"Unknown column {column}: it is in none of the tables the query reads"
        raise QueryRejected(f"{message}.") from None
    except (sqlglot.errors.SqlglotError, RecursionError, KeyError, ValueError) as exc:
        raise QueryRejected(f"Cannot check the query's columns: {str(exc)[:200]}") from None


# -- the DuckDB side ---------------------------------------------------------------------
# public.duckdb is a symlink to the current versioned snapshot file (app/read/snapshot.py).
# Each version is opened once, read-only and locked, and every query runs on a cursor of
# that connection: DuckDB caches one database instance per file path in a process, so a
# per-version path is also what lets readers see a new snapshot while old queries finish.
# A query holds a lease on its version (snapshot.reading) from resolving the link to its
# last row, so the publisher never removes a file between a reader finding and opening it.

_MISSING = "No public snapshot is published yet: it appears after the first scoring run."
_connections: dict[str, duckdb.DuckDBPyConnection] = {}
_open_lock = threading.Lock()


def _cursor_on(real: Path, memory_limit: str) -> duckdb.DuckDBPyConnection:
    """A cursor on the (cached) connection to the leased snapshot version `real`."""
    if not real.exists():
        raise SnapshotMissing(_MISSING)
    key = str(real)
    with _open_lock:
        con = _connections.get(key)
        if con is None:
            con = open_snapshot(real, memory_limit)
            # the previous version stays open only while its cursors run (no explicit close)
            _connections.clear()
            _connections[key] = con
        return con.cursor()


_schema_cache: dict[str, dict[str, dict[str, str]]] = {}


def _schema_on(real: Path, memory_limit: str) -> dict[str, dict[str, str]]:
    cached = _schema_cache.get(str(real))
    if cached is not None:
        return cached
    cur = _cursor_on(real, memory_limit)
    try:
        rows = cur.execute(
            "SELECT table_name, column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = 'main' ORDER BY table_name, ordinal_position"
        ).fetchall()
    finally:
        cur.close()
    schema: dict[str, dict[str, str]] = {}
    for table, column, dtype in rows:
        schema.setdefault(table, {})[column] = dtype
    _schema_cache.clear()
    _schema_cache[str(real)] = schema
    return schema


def snapshot_schema(path: Path, memory_limit: str = "512MB") -> dict[str, dict[str, str]]:
    """{table: {column: type}} of the snapshot's public tables (cached per version)."""
    with reading(path) as real:
        try:
            return _schema_on(real, memory_limit)
        except SnapshotMissing:
            return {}


def run_query(
    sql: str,
    path: Path,
    *,
    max_rows: int,
    timeout_s: float,
    memory_limit: str = "512MB",
    timeout_label: float | None = None,
    workers: ConsoleWorkers | None = None,
) -> QueryResult:
    """Check `sql`, then run it on the snapshot under the row, time and memory limits
    (`timeout_label`: the limit the 408 names, when `timeout_s` is what is left of it).
    With `workers` (the service) it runs in a worker process that is killed at the time
    limit (proforma.app.read.console_workers); without, in this process, interrupted."""
    with reading(path) as real:
        schema = _schema_on(real, memory_limit)
        if not schema:
            raise SnapshotMissing(_MISSING)
        checked = check_sql(sql, schema)
        if workers is not None:
            return _run_in_worker(
                workers, real, checked, max_rows=max_rows, timeout_s=timeout_s, label=timeout_label
            )
        con = _cursor_on(real, memory_limit)
        return _run_checked(
            con, checked, max_rows=max_rows, timeout_s=timeout_s, label=timeout_label
        )


def _run_in_worker(
    workers: ConsoleWorkers,
    real: Path,
    checked: CheckedQuery,
    *,
    max_rows: int,
    timeout_s: float,
    label: float | None,
) -> QueryResult:
    started = time.perf_counter()
    kind, payload = workers.execute(real, checked.sql, max_rows, timeout_s)
    if kind == "timeout":
        raise QueryTimeout(
            f"The query ran past the {timeout_s if label is None else label:g} s time limit "
            f"and was stopped; aggregate more or filter earlier."
        )
    if kind == "memory":
        raise QueryRejected("The query needs more memory than public queries may use.")
    if kind == "rejected":
        raise QueryRejected(f"DuckDB rejected the query: {payload}")
    columns, types, rows = payload
    return QueryResult(
        columns=columns,
        types=types,
        rows=rows[:max_rows],
        truncated=len(rows) > max_rows,
        elapsed_ms=(time.perf_counter() - started) * 1000,
        tables=checked.tables,
    )


def _run_checked(
    con: duckdb.DuckDBPyConnection,
    checked: CheckedQuery,
    *,
    max_rows: int,
    timeout_s: float,
    label: float | None = None,
) -> QueryResult:
    limit = timeout_s if label is None else label
    timer = threading.Timer(timeout_s, con.interrupt)
    started = time.perf_counter()
    timer.start()
    try:
        rel = con.sql(f"SELECT * FROM ({checked.sql}) AS public_query LIMIT {int(max_rows) + 1}")
        columns, types = list(rel.columns), [str(t) for t in rel.types]
        rows = [list(r) for r in rel.fetchall()]
    except duckdb.InterruptException:
        raise QueryTimeout(
            f"The query ran past the {limit:g} s time limit and was stopped; "
            f"aggregate more or filter earlier."
        ) from None
    except duckdb.OutOfMemoryException:
        raise QueryRejected("The query needs more memory than public queries may use.") from None
    except duckdb.Error as exc:
        if time.perf_counter() - started >= timeout_s:
            raise QueryTimeout(
                f"The query ran past the {limit:g} s time limit and was stopped."
            ) from None
        message = str(exc).splitlines()[0][:300]
        raise QueryRejected(f"DuckDB rejected the query: {message}") from None
    finally:
        timer.cancel()
        con.close()
    truncated = len(rows) > max_rows
    return QueryResult(
        columns=columns,
        types=types,
        rows=rows[:max_rows],
        truncated=truncated,
        elapsed_ms=(time.perf_counter() - started) * 1000,
        tables=checked.tables,
    )
