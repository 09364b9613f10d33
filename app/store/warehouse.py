"""The DuckDB warehouse: connect, run SQL steps with parameters, Arrow in and out.

One process owns the warehouse for writing (docs/architecture.md, "One writer"); threads
in that process take a cursor each (`Warehouse.cursor()`). Nothing here goes through
pandas: reads are Arrow record batch readers, writes stream Arrow into DuckDB.

DuckDB 2.0 API notes (the version pinned in pyproject.toml): a result opened with
`execute()` must be fully fetched or `complete()`d before the next statement, and
relations have no `fetchone()`; the helpers below hide both.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import itertools
import re
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Self, TypeAlias

import duckdb
import pyarrow as pa

from proforma.app.store.settings import Settings, get_settings
from proforma.app.store.sqlfiles import SqlFile, sql_file
from proforma.contracts.errors import UserError, WarehouseLocked

_LOCK_PID = re.compile(r"PID (\d+)")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$")
_view_counter = itertools.count()

ArrowInput: TypeAlias = pa.Table | pa.RecordBatch | pa.RecordBatchReader | Iterable[pa.RecordBatch]


#: The build's tables a flow needs unless it names others.
PANEL_TABLES = ("panel.truth", "panel.firms")

#: A filter on ids passed as ONE list parameter (`f"submission_id {IN_IDS}"`, [ids]): a
#: hash join of the unnested list. `list_contains(?, submission_id)` scans the whole list
#: for every row it filters, which made a run's look-ups of its k members O(k^2)
#: (docs/service.md, session 15, has the figures).
IN_IDS = "IN (SELECT unnest(?::INTEGER[]))"


def _lock_message(path: Path, exc: Exception) -> str:
    pid = _LOCK_PID.search(str(exc))
    holder = f"process {pid.group(1)}" if pid else "another process"
    return (
        f"The warehouse {path} is open for writing in {holder}. Stop that process "
        f"(for example the API server or a running build) and try again, or set "
        f"PROFORMA_WAREHOUSE to another file."
    )


def out_of_disk(exc: BaseException) -> bool:
    """Whether an error is the machine's disk running full (Python's or DuckDB's)."""
    return (isinstance(exc, OSError) and exc.errno == errno.ENOSPC) or (
        isinstance(exc, duckdb.IOException) and "No space left on device" in str(exc)
    )


def streamed_error(exc: OSError) -> BaseException:
    """The DuckDB exception behind an error raised while reading a query's Arrow stream
    (`Warehouse.reader`): Arrow hands a failure of the query mid-stream over as an
    OSError without errno whose text starts with DuckDB's kind ("Out of Memory Error:
    ...", "IO Error: ..."), so callers that tell the machine's limits (out_of_resources)
    from bad input by DuckDB's classes would see neither. A real OS error (it has an
    errno: a full disk under Arrow's own writer) is returned as it is."""
    if exc.errno is not None:
        return exc
    text = str(exc)
    kind = text.split(" Error:", 1)[0] if " Error:" in text else ""
    name = "".join(word[:1].upper() + word[1:] for word in kind.split()) + "Exception"
    found = getattr(duckdb, name, None)
    cls = found if isinstance(found, type) and issubclass(found, duckdb.Error) else duckdb.Error
    return cls(text)


def out_of_resources(exc: BaseException) -> bool:
    """Whether an error came from the machine's limits (DuckDB's memory limit, a full disk),
    not from the input: callers report it as such instead of blaming the data."""
    return isinstance(exc, duckdb.OutOfMemoryException) or out_of_disk(exc)


def connect(
    settings: Settings | None = None,
    *,
    path: Path | str | None = None,
    read_only: bool = False,
) -> Warehouse:
    """Open the warehouse (creating its folder), applying memory, thread and spill settings."""
    settings = settings or get_settings()
    target = Path(path) if path is not None else settings.warehouse
    if str(target) != ":memory:":
        if read_only and not target.exists():
            raise UserError(f"No warehouse at {target}. Run `proforma migrate` first.")
        target.parent.mkdir(parents=True, exist_ok=True)
    config: dict[str, Any] = {"memory_limit": settings.memory_limit}
    if settings.threads:
        config["threads"] = settings.threads
    if not read_only:
        settings.temp_directory.mkdir(parents=True, exist_ok=True)
        config["temp_directory"] = str(settings.temp_directory)
    try:
        con = duckdb.connect(str(target), read_only=read_only, config=config)
    except duckdb.IOException as exc:
        if "lock" in str(exc).lower():
            raise WarehouseLocked(_lock_message(target, exc)) from None
        raise UserError(f"Cannot open the warehouse {target}: {exc}") from None
    return Warehouse(con, target)


def _progress_bar_setting(con: duckdb.DuckDBPyConnection) -> None:
    """DuckDB's progress bar helps on a terminal (the build's longest steps are single
    queries) but writes a redraw per tick into logs (CI, docker logs, a redirected demo)."""
    con.execute(f"SET enable_progress_bar = {str(sys.stderr.isatty()).lower()}")


class Warehouse:
    """A DuckDB connection with the few operations the project needs."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        path: Path | str,
        *,
        functions: set[str] | None = None,
    ):
        _progress_bar_setting(con)
        self.con = con
        self.path = Path(path)
        self._lock = threading.RLock()
        #: Python functions known to be in this database instance's catalog (shared by
        #: its cursors: a function one registers is there for all while it lives).
        self.functions: set[str] = functions if functions is not None else set()
        #: Inside `transaction` (the project's only BEGIN): a failed statement there
        #: aborts the whole transaction, outside it only itself.
        self.in_transaction = False

    # -- lifecycle -------------------------------------------------------------------
    def cursor(self) -> Warehouse:
        """A cursor for another thread: same database, its own transaction state."""
        return Warehouse(self.con.cursor(), self.path, functions=self.functions)

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Warehouse]:
        """All or nothing: commit on success, roll back on any exception."""
        self.con.execute("BEGIN TRANSACTION")
        self.in_transaction = True
        try:
            yield self
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        else:
            self.con.execute("COMMIT")
        finally:
            self.in_transaction = False

    # -- statements ------------------------------------------------------------------
    def execute(self, sql: str | duckdb.Statement, params: Any = None) -> None:
        """Run statements to their end, discarding any rows."""
        self.con.execute(sql, params)
        with contextlib.suppress(duckdb.Error):
            self.con.complete()

    def fetchall(self, sql: str, params: Any = None) -> list[tuple]:
        return self.con.execute(sql, params).fetchall()

    def fetchone(self, sql: str, params: Any = None) -> tuple | None:
        rows = self.fetchall(sql, params)
        return rows[0] if rows else None

    def one(self, sql: str, params: Any = None) -> tuple[Any, ...]:
        """The row of a query that always yields one (an aggregate without GROUP BY)."""
        return one_row(self.con.execute(sql, params))

    def scalar(self, sql: str, params: Any = None) -> Any:
        row = self.fetchone(sql, params)
        return None if row is None else row[0]

    def table_exists(self, name: str) -> bool:
        """A table or view `name` ('schema.table', or 'table' in main or temp) exists."""
        return self.catalog_kind(name) is not None

    def catalog_kind(self, name: str, *, database: str | None = None) -> str | None:
        """'table', 'view' or None: what `name` is in any attached database (or only in
        `database`, such as 'temp'). DuckDB's own catalog functions, not
        information_schema.tables: that view unions and formats every object of every
        database, 2-3 ms a look-up, and the scoring path looks up some 90 objects an
        upload."""
        schema, _, table = name.rpartition(".")
        where = "schema_name = $schema AND {col} = $name"
        params: dict[str, Any] = {"schema": schema or "main", "name": table}
        if database is not None:
            where += " AND database_name = $database"
            params["database"] = database
        for kind, function, col in (
            ("table", "duckdb_tables()", "table_name"),
            ("view", "duckdb_views()", "view_name"),
        ):
            found = self.scalar(
                f"SELECT count(*) FROM {function} WHERE {where.format(col=col)}", params
            )
            if found:
                return kind
        return None

    def require_panel(self, *tables: str) -> None:
        """A UserError unless the build's tables exist (default: the truth and the firms).
        Every flow that needs a built panel says so the same way."""
        missing = [t for t in tables or PANEL_TABLES if not self.table_exists(t)]
        if missing:
            raise UserError(
                f"The panel is not built ({', '.join(missing)} missing): "
                f"run `proforma build` first."
            )

    # -- Arrow -----------------------------------------------------------------------
    def arrow(self, sql: str, params: Any = None) -> pa.Table:
        return self.con.sql(sql, params=params).to_arrow_table()

    def reader(
        self, sql: str, params: Any = None, batch_size: int = 131_072
    ) -> pa.RecordBatchReader:
        """Stream a query's rows as Arrow record batches (nothing is materialized)."""
        return self.con.sql(sql, params=params).to_arrow_reader(batch_size)

    def write_arrow(self, table: str, data: ArrowInput, *, mode: str = "append") -> int:
        """Write Arrow data into `table` by column name, streaming; returns rows written.

        mode: 'append' (table exists), 'replace' (create or replace from the data's
        schema), 'create' (must not exist yet).
        """
        if not _NAME.match(table):
            raise UserError(f"Not a table name: {table!r}")
        source = _as_reader(data)
        with self.registered(f"__arrow_in_{next(_view_counter)}", source) as view:
            if mode == "append":
                before = self._count(table)
                self.execute(f"INSERT INTO {table} BY NAME SELECT * FROM {view}")
                return self._count(table) - before
            if mode == "replace":
                self.execute(f"CREATE OR REPLACE TABLE {table} AS SELECT * FROM {view}")
            elif mode == "create":
                self.execute(f"CREATE TABLE {table} AS SELECT * FROM {view}")
            else:
                raise ValueError(f"unknown mode {mode!r}")
            return self._count(table)

    @contextlib.contextmanager
    def registered(self, name: str, data: Any) -> Iterator[str]:
        """Arrow data (a table, batch or batch reader) visible to SQL as the view `name`
        inside the block, and gone after it whatever happens (the one register /
        unregister pair of the project)."""
        self.con.register(name, data)
        try:
            yield name
        finally:
            self.con.unregister(name)

    def _count(self, table: str) -> int:
        return int(self.scalar(f"SELECT count(*) FROM {table}"))

    # -- SQL steps -------------------------------------------------------------------
    def set_params(self, params: Mapping[str, Any] | None) -> None:
        """Expose values to SQL as `getvariable('name')`."""
        for key, value in (params or {}).items():
            if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", key):
                raise UserError(f"Not a parameter name: {key!r}")
            # Quoted: names such as `limit` or `end` are keywords.
            if value is None:
                self.execute(f'RESET VARIABLE "{key}"')
            else:
                self.execute(f'SET VARIABLE "{key}" = ?', [_sql_value(value)])

    def run_step(
        self,
        step: str | Path | SqlFile,
        params: Mapping[str, Any] | None = None,
        identifiers: dict[str, str] | None = None,
    ) -> None:
        """Run a sql/ file (all its statements) with parameters."""
        f = step if isinstance(step, SqlFile) else sql_file(step)
        sql = f.render(identifiers)  # identifiers are checked before anything runs
        self.set_params(params)
        self.execute(sql)

    def query_step(
        self,
        step: str | Path | SqlFile,
        params: Mapping[str, Any] | None = None,
        identifiers: dict[str, str] | None = None,
    ) -> pa.Table:
        """Run a sql/ file whose last statement is a query; return that query's rows."""
        f = step if isinstance(step, SqlFile) else sql_file(step)
        sql = f.render(identifiers)
        self.set_params(params)
        statements = self.con.extract_statements(sql)
        if not statements:
            raise UserError(f"{f.path.name} holds no statement")
        for s in statements[:-1]:
            self.execute(s)
        return self.con.sql(statements[-1].query).to_arrow_table()


def one_row(result: duckdb.DuckDBPyConnection) -> tuple[Any, ...]:
    """The row of an executed query that always yields one (an aggregate without GROUP
    BY); none is a bug in the query, not a user's error."""
    rows = result.fetchall()
    if len(rows) != 1:
        raise RuntimeError(f"expected one row, the query yielded {len(rows)}")
    return rows[0]


def _sql_value(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [_sql_value(v) for v in value]
    if isinstance(value, (str, int, float, bool, dt.date, dt.datetime)):
        return value
    raise UserError(f"Unsupported SQL parameter value {value!r}")


def _as_reader(data: ArrowInput) -> pa.RecordBatchReader | pa.Table:
    if isinstance(data, (pa.Table, pa.RecordBatchReader)):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    batches: Iterator[pa.RecordBatch] = iter(data)
    first = next(batches, None)
    if first is None:
        raise UserError("No Arrow batches to write")
    return pa.RecordBatchReader.from_batches(first.schema, itertools.chain([first], batches))
