"""The WRDS source: comp.fundq, comp.co_industry and crsp.ccmxpf_lnkhist via the `wrds` client.

Safety first: WRDS deactivates an account after repeated failed two-factor (Duo)
attempts, so a run makes AT MOST ONE login attempt, and none when every chunk is
already cached. `wrds.Connection()` on its own retries (it prompts for a password
and connects a second time when the first attempt fails), and its single-attempt
connect is private, so the default connection factory (`WrdsSession`) makes the one
connection itself, through SQLAlchemy and libpq as the client would, and reads rows as
the client's `raw_sql` does. A failed login is one UserError that says not to retry in
a loop.

The pull asks only for the columns the benchmark needs (keys, the 52 balance-sheet
and income-statement items, the 20 year-to-date cash-flow sources: 77 columns of
comp.fundq's ~650) with the filters of docs/sources.md ("What is pulled"), one calendar year of
`datadate` per query, every query with a full ORDER BY so that the same server
gives the same rows in the same order on every run (exact duplicate records included:
the build's tie-break takes the first or last of them in that order). Each answer is
converted to Arrow at once (the client returns pandas; nothing else here touches
pandas), cast to the raw schema and written to
`<cache_dir>/wrds/<table>-<key>/<chunk>.parquet` atomically (temporary file, then
rename), with its pull time in `<chunk>.json` beside it (the parquet bytes depend on
the data only). The key hashes the SQL template (columns, filters, order; and the
server when it is not WRDS's), so a changed projection never mixes with old chunks,
and a rerun after an interruption queries only the chunks that are missing.
`co_industry` and `ccm_link` are re-pulled whenever they are older than the newest
fundq chunk, so a run that pulls any fundq year pulls them too.

A later pull is incremental (`incremental=True`, `ingest wrds --incremental`): it pulls
again only the years from the one holding the newest quarter of the cached pull through
`end_year` (the quarters filed since the last pull land there: new quarters, late
filers and restatements of the current year), keeps every earlier year's chunk as it
was, and re-pulls the two small tables. A year is the unit because comp.fundq carries no
filing time and a chunk is replaced whole, never appended to (no record twice). The
ingest records its vintage like every ingest (raw.vintages: the rows new and restated;
raw.fundq_vintages keeps every version, docs/rounds.md).

The ingest resolves what real WRDS tables hold and reports it: several industry
records on one (gvkey, datadate) become one by the rule of
sql/sources/wrds_company_industry.sql; exact duplicate fundq records and firm-quarters
inside several link windows stay in the raw tables (the build's rules handle them) and
are counted (sql/sources/wrds_resolved.sql).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from proforma.app.sources.base import RawTables, Source
from proforma.app.store.reference import raw_item_columns_from_file
from proforma.app.store.settings import Settings, get_settings
from proforma.app.store.sqlfiles import sql_file
from proforma.contracts.errors import UserError
from proforma.contracts.raw import FUNDQ_KEYS, INDUSTRY_SCHEMA, LINK_SCHEMA, LINKPRIMS, LINKTYPES
from proforma.contracts.raw import fundq_schema as raw_fundq_schema

if TYPE_CHECKING:
    from rich.progress import Progress

FUNDQ_FILTERS = {"indfmt": "INDL", "datafmt": "STD", "consol": "C", "popsrc": "D"}
INDUSTRY_FILTERS = {"consol": "C", "popsrc": "D"}

#: The WRDS PostgreSQL server, as the `wrds` client's own defaults (wrds/sql.py). The
#: client always asks for SSL (sslmode=require: encrypted, the certificate not verified).
WRDS_HOST = "wrds-pgdata.wharton.upenn.edu"
WRDS_PORT = 9737
WRDS_DATABASE = "wrds"
WRDS_SSLMODE = "require"

_IDENT = re.compile(r"^[a-z_][a-z0-9_]*$")
# WRDS issues lower-case names of letters and digits, some with '.', '_' or '-', some
# starting with a digit. The client puts the name into a postgresql:// URI without
# escaping it, so ':', '@', '/', '%', '?', '#' and spaces would change the URI: refused.
# 63 characters is PostgreSQL's limit for a role name.
_USER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
_HOST = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]{0,252}[A-Za-z0-9])?$|^\[[0-9A-Fa-f:.]+\]$")
_NEVER_RETRY = (
    "WRDS deactivates accounts after repeated failed two-factor attempts, so this "
    "command never retries: check your ~/.pgpass entry and approve the Duo push, then "
    "run it once more by hand. Do not re-run it in a loop."
)


def fundq_columns() -> list[str]:
    """The comp.fundq columns pulled: keys, then the item columns of reference/items.csv."""
    return [*FUNDQ_KEYS, *raw_item_columns_from_file()]


def fundq_schema(columns: list[str] | None = None) -> pa.Schema:
    """Arrow schema of raw.fundq chunks (types as in migration V0001)."""
    return raw_fundq_schema(columns or fundq_columns())


def _quoted(values: tuple[str, ...]) -> str:
    return ", ".join(f"'{v}'" for v in values)


def _where(filters: dict[str, str]) -> str:
    return " AND ".join(f"{k} = '{v}'" for k, v in filters.items())


@dataclass(frozen=True)
class Server:
    """Where the pull connects: host, port, database (SSL is always required)."""

    host: str = WRDS_HOST
    port: int = WRDS_PORT
    database: str = WRDS_DATABASE

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        host: str | None = None,
        port: int | None = None,
        database: str | None = None,
    ) -> Server:
        """Flags first, then PROFORMA_WRDS_HOST/PORT/DATABASE, then WRDS's defaults."""
        return cls(
            host if host is not None else settings.wrds_host,
            port if port is not None else settings.wrds_port,
            database if database is not None else settings.wrds_database,
        )

    def check(self) -> None:
        if not _HOST.match(self.host):
            raise UserError(f"Not a host name: {self.host!r}")
        if not 1 <= self.port <= 65535:
            raise UserError(f"Not a port: {self.port} (1..65535)")
        if not _IDENT.match(self.database):
            raise UserError(f"Not a database name: {self.database!r}")

    @property
    def is_wrds(self) -> bool:
        return self == Server()

    def line(self) -> str:
        return f"{self.host}:{self.port}/{self.database} (SSL required)"

    def pghost_note(self) -> str | None:
        """A note when PGHOST is set: the client would honour it, this command does not."""
        pghost = os.environ.get("PGHOST")
        if pghost is None or pghost == self.host:
            return None
        return (
            f"PGHOST={pghost} is set but not used: connecting to {self.host} "
            f"(give --host or PROFORMA_WRDS_HOST to connect elsewhere)"
        )


@dataclass(frozen=True)
class Chunk:
    """One cached query: which table, which label (a year or 'all'), its SQL."""

    table: str
    label: str
    sql: str
    schema: pa.Schema
    folder: Path

    @property
    def path(self) -> Path:
        return self.folder / f"{self.label}.parquet"

    @property
    def meta_path(self) -> Path:
        return self.folder / f"{self.label}.json"

    def pulled_at(self) -> str:
        """When the cached chunk was pulled (ISO, UTC), '' when it is not cached."""
        if not self.path.exists():
            return ""
        try:
            return str(json.loads(self.meta_path.read_text())["pulled_at"])
        except (OSError, ValueError, KeyError):
            # caches written before the sidecar file carried the time in the parquet
            meta = pq.read_schema(self.path).metadata or {}
            stamp = meta.get(b"proforma.pulled_at", b"").decode()
            if stamp:
                return stamp
            mtime = dt.datetime.fromtimestamp(self.path.stat().st_mtime, dt.UTC)
            return mtime.isoformat(timespec="seconds")


ConnectionFactory = Callable[[str, Server], Any]


class WrdsSession:
    """One login to the WRDS PostgreSQL server and the queries of a pull.

    The login is ours, not the `wrds` client's: the client's public `connect()` retries
    (it tries PGHOST, the default host, then prompts for a password and connects once
    more), and its one-attempt connect is a private, name-mangled method that a minor
    release may rename. So the session makes the one connection the client would make
    (the same URL, SSL required, autocommit, an application name) with SQLAlchemy,
    which the client is built on, and reads a query's rows as the client's `raw_sql`
    does (pandas' `read_sql_query`, nullable numpy dtypes, floats coerced). libpq reads
    the password from ~/.pgpass (or PGPASSFILE); nothing prompts.
    """

    def __init__(self, user: str, server: Server) -> None:
        import sqlalchemy as sa  # heavy: only a real pull needs it

        url = sa.engine.URL.create(
            "postgresql+psycopg2",
            username=user,
            host=server.host,
            port=server.port,
            database=server.database,
        )
        self.engine = sa.create_engine(
            url,
            isolation_level="AUTOCOMMIT",
            connect_args={"sslmode": "require", "application_name": "proforma ingest wrds"},
        )
        try:
            self.connection = self.engine.connect()  # the one attempt
        except BaseException:
            self.engine.dispose()
            raise

    def raw_sql(self, sql: str) -> Any:
        """A query's rows as a pandas DataFrame (converted to Arrow at once by the pull)."""
        import pandas as pd

        return pd.read_sql_query(
            sql, self.connection, coerce_float=True, dtype_backend="numpy_nullable"
        )

    def close(self) -> None:
        self.connection.close()
        self.engine.dispose()


def _login(user: str, server: Server) -> Any:
    """The default connection factory: one single-attempt WRDS login."""
    return WrdsSession(user, server)


class WrdsSource(Source):
    """Pulls the three raw tables from WRDS in cached yearly chunks (see module doc)."""

    name = "wrds"

    def __init__(
        self,
        user: str,
        start_year: int = 1970,
        end_year: int = 2024,
        cache_dir: Path | str | None = None,
        connection_factory: ConnectionFactory | None = None,
        progress: bool = True,
        console: Any = None,
        server: Server | None = None,
        refresh: bool = False,
        incremental: bool = False,
    ):
        if not user or not _USER.match(user):
            raise UserError(
                f"Not a WRDS user name: {user!r} (letters, digits, '.', '_' and '-', "
                f"starting with a letter or digit, at most 63 characters)"
            )
        if start_year > end_year:
            raise UserError(f"--start {start_year} is after --end {end_year}")
        if refresh and incremental:
            raise UserError("--refresh pulls every year again; --incremental only the new ones")
        if not 1950 <= start_year <= 2100 or not 1950 <= end_year <= 2100:
            raise UserError(f"Years must lie in 1950..2100, got {start_year}..{end_year}")
        self.settings = get_settings()
        self.server = server or Server.from_settings(self.settings)
        self.server.check()
        self.user = user
        self.start_year = start_year
        self.end_year = end_year
        self.cache_dir = Path(cache_dir) if cache_dir is not None else self.settings.cache_dir
        self.connection_factory = connection_factory or _login
        self.progress = progress
        # A rich Console for the progress bar (the CLI passes its stderr console); a
        # source never imports the command line.
        self.console = console
        # --refresh: every chunk is pulled again in this run (once; a rerun resumes).
        self.refresh = refresh
        self._refreshed: set[Path] = set()
        # --incremental: the years from the cached pull's newest quarter on (fixed at the
        # first look, before this run pulls anything).
        self.incremental = incremental
        self._since_year: int | None = None
        self.login_attempts = 0
        self._login_error: UserError | None = None
        #: What the ingest resolved (sql/sources/wrds_resolved.sql), after tables().
        self.resolved: dict[str, int] = {}
        self.columns = fundq_columns()
        bad = [c for c in self.columns if not _IDENT.match(c)]
        if bad:  # the list comes from reference/items.csv: a typo there must not reach SQL
            raise UserError(f"reference/items.csv holds non-identifier column names: {bad}")

    # -- what is pulled ----------------------------------------------------------------
    def _folder(self, table: str, template: str) -> Path:
        # Chunks of another server never mix with WRDS's (nor WRDS's with a test's).
        keyed = template if self.server.is_wrds else f"{template} @ {self.server.line()}"
        key = hashlib.sha256(keyed.encode()).hexdigest()[:12]
        return self.cache_dir / "wrds" / f"{table}-{key}"

    def chunks(self) -> list[Chunk]:
        """Every query of this pull, in order: fundq by year, then industry, then links.

        Every query orders its rows completely (every selected column, ascending,
        PostgreSQL's NULLS LAST), so exact duplicate records come back in one order
        on every run and the build's first/last-record tie-break is reproducible.
        """
        fundq_template = (
            f"SELECT {', '.join(self.columns)} FROM comp.fundq "
            f"WHERE {_where(FUNDQ_FILTERS)} AND datadate BETWEEN '{{lo}}' AND '{{hi}}' "
            f"ORDER BY {', '.join(self.columns)}"
        )
        folder = self._folder("fundq", fundq_template)
        schema = fundq_schema(self.columns)
        out = [
            Chunk(
                "fundq",
                str(y),
                fundq_template.format(lo=f"{y}-01-01", hi=f"{y}-12-31"),
                schema,
                folder,
            )
            for y in range(self.start_year, self.end_year + 1)
        ]
        # Industry records from before the first year still apply to its quarters
        # (latest record at or before datadate), so there is no lower bound.
        industry = (
            f"SELECT gvkey, datadate, sich, naicsh FROM comp.co_industry "
            f"WHERE {_where(INDUSTRY_FILTERS)} AND datadate <= '{self.end_year}-12-31' "
            f"ORDER BY gvkey, datadate, sich, naicsh"
        )
        out.append(
            Chunk(
                "co_industry",
                "all",
                industry,
                INDUSTRY_SCHEMA,
                self._folder("co_industry", industry),
            )
        )
        links = (
            "SELECT gvkey, lpermno, linktype, linkprim, linkdt, linkenddt "
            f"FROM crsp.ccmxpf_lnkhist WHERE linktype IN ({_quoted(LINKTYPES)}) "
            f"AND linkprim IN ({_quoted(LINKPRIMS)}) "
            "ORDER BY gvkey, linkdt, linkenddt, lpermno, linktype, linkprim"
        )
        out.append(Chunk("ccm_link", "all", links, LINK_SCHEMA, self._folder("ccm_link", links)))
        return out

    def missing(self) -> list[Chunk]:
        """The chunks this run pulls: absent ones, all of them under --refresh (once), and
        co_industry and ccm_link whenever a fundq year is pulled or is newer than them."""
        chunks = self.chunks()
        since = self.since_year() if self.incremental else None
        todo = [
            c
            for c in chunks
            if not c.path.exists()
            or (self.refresh and c.path not in self._refreshed)
            or (
                since is not None
                and c.table == "fundq"
                and int(c.label) >= since
                and c.path not in self._refreshed
            )
        ]
        fundq = [c for c in chunks if c.table == "fundq"]
        if any(c.table == "fundq" for c in todo):
            stale = [c for c in chunks if c.table != "fundq"]
        else:
            newest = max(c.pulled_at() for c in fundq)
            stale = [c for c in chunks if c.table != "fundq" and c.pulled_at() < newest]
        return todo + [c for c in stale if c not in todo]

    def since_year(self) -> int:
        """The year of the newest quarter the cached pull holds (incremental pulls start
        there); a UserError, before any login, when nothing of this pull is cached."""
        if self._since_year is None:
            cached = [c for c in self.chunks() if c.table == "fundq" and c.path.exists()]
            newest = None
            if cached:
                con = duckdb.connect()
                try:
                    paths = ", ".join(f"'{c.path.as_posix()}'" for c in cached)
                    row = con.execute(
                        f"SELECT max(datadate) FROM read_parquet([{paths}])"
                    ).fetchone()
                    newest = row[0] if row else None
                finally:
                    con.close()
            if newest is None:
                raise UserError(
                    f"--incremental adds the quarters filed since an earlier pull, but "
                    f"{self.chunks()[0].folder} holds no pulled quarter of this projection: "
                    "run the pull once without --incremental"
                )
            self._since_year = max(newest.year, self.start_year)
        return self._since_year

    def cached_lines(self) -> list[str]:
        """The cached chunks this run reuses, with their pull dates (runs of equal dates)."""
        todo = {c.path for c in self.missing()}
        out: list[str] = []
        for table in ("fundq", "co_industry", "ccm_link"):
            runs: list[list[str]] = []  # [first label, last label, date]
            for c in self.chunks():
                if c.table != table or c.path in todo:
                    continue
                day = c.pulled_at()[:10]
                if (
                    runs
                    and runs[-1][2] == day
                    and c.label.isdigit()
                    and int(c.label) == int(runs[-1][1]) + 1
                ):
                    runs[-1][1] = c.label
                    continue
                runs.append([c.label, c.label, day])
            for first, last, day in runs:
                span = first if first == last else f"{first}-{last}"
                what = table if span == "all" else f"{table} {span}"
                out.append(f"reusing {what} pulled {day}")
        return out

    def parameters(self) -> dict[str, Any]:
        return {
            "user": self.user,
            "server": self.server.line(),
            "start_year": self.start_year,
            "end_year": self.end_year,
            "fundq_filters": FUNDQ_FILTERS,
            "industry_filters": INDUSTRY_FILTERS,
            "linktype": list(LINKTYPES),
            "linkprim": list(LINKPRIMS),
            "fundq_columns": len(self.columns),
            "cache": str(self.chunks()[0].folder),
            "pulled": {c.table + " " + c.label: c.pulled_at() for c in self.chunks()},
            "resolved": self.resolved,
            "incremental": {"from_year": self.since_year()} if self.incremental else None,
        }

    # -- pulling -----------------------------------------------------------------------
    def _connect(self) -> Any:
        if self._login_error is not None:  # never a second attempt in one run
            raise self._login_error
        if self.login_attempts:
            raise UserError(
                "This run already logged in to WRDS once; run the command again to pull "
                "the chunks still missing (one new login)."
            )
        self.login_attempts += 1
        try:
            return self.connection_factory(self.user, self.server)
        except UserError as exc:
            self._login_error = exc
            raise
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - any failure ends the run, once
            # SystemExit too: the wrds client calls sys.exit on some prompt failures.
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            self._login_error = UserError(
                f"WRDS login as {self.user} at {self.server.host}:{self.server.port} failed "
                f"(one attempt was made, none will follow): {first}. {_NEVER_RETRY}"
            )
            raise self._login_error from None

    def pull(self) -> int:
        """Fetch every chunk this run needs, with at most one login; returns chunks fetched."""
        todo = self.missing()
        if not todo:
            return 0
        total = len(self.chunks())
        db = self._connect()
        done = 0
        try:
            with _progress(self.progress, len(todo), total - len(todo), self.console) as advance:
                for chunk in todo:
                    try:
                        frame = db.raw_sql(chunk.sql)
                    except (Exception, SystemExit) as exc:  # noqa: BLE001 - reported once, resumable
                        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                        raise UserError(
                            f"WRDS query for {chunk.table} {chunk.label} failed after "
                            f"{total - len(todo) + done} of {total} chunks were cached: {first}. "
                            f"Cached chunks are kept in {chunk.folder.parent}; run the same "
                            f"command again to pull only the rest (one login)."
                        ) from None
                    _write_chunk(chunk, _to_arrow(frame, chunk))
                    self._refreshed.add(chunk.path)
                    del frame
                    done += 1
                    advance(f"{chunk.table} {chunk.label}")
        finally:
            close = getattr(db, "close", None)
            if callable(close):
                try:
                    close()
                except Exception:  # noqa: BLE001, S110 - closing is best effort
                    pass
        return done

    # -- the raw tables --------------------------------------------------------------------
    def _duck(self) -> duckdb.DuckDBPyConnection:
        config: dict[str, Any] = {"memory_limit": self.settings.memory_limit}
        if self.settings.threads:
            config["threads"] = self.settings.threads
        self.settings.temp_directory.mkdir(parents=True, exist_ok=True)
        config["temp_directory"] = str(self.settings.temp_directory)
        return duckdb.connect(":memory:", config=config)

    def tables(self) -> RawTables:
        self.pull()
        chunks = self.chunks()
        by_table: dict[str, list[Chunk]] = {}
        for c in chunks:
            by_table.setdefault(c.table, []).append(c)
        con = self._duck()

        def files(table: str) -> str:
            paths = ", ".join(f"'{c.path.as_posix()}'" for c in by_table[table])
            return f"read_parquet([{paths}], filename = true, file_row_number = true)"

        con.execute(f"CREATE VIEW fundq_pulled AS SELECT * FROM {files('fundq')}")
        con.execute(f"CREATE VIEW industry_pulled AS SELECT * FROM {files('co_industry')}")
        con.execute(f"CREATE VIEW links_pulled AS SELECT * FROM {files('ccm_link')}")
        row = con.sql(sql_file("sources/wrds_resolved").text).to_arrow_table()
        self.resolved = {
            k: int(v[0].as_py() or 0) for k, v in zip(row.column_names, row.columns, strict=True)
        }
        industry = con.sql(sql_file("sources/wrds_company_industry").text).to_arrow_table()
        con.register("industry", industry)
        dups = con.sql(
            "SELECT gvkey, datadate FROM industry GROUP BY ALL HAVING count(*) > 1 LIMIT 1"
        ).fetchall()
        con.close()
        dup = dups[0] if dups else None
        if dup:  # the contract of raw.company_industry, as the parquet source checks it
            raise UserError(
                f"WRDS co_industry still holds several records on ({dup[0]}, {dup[1]}) "
                f"after sql/sources/wrds_company_industry.sql; nothing was written."
            )
        pulled = sorted(p for p in (c.pulled_at() for c in chunks) if p)
        vintage = f"WRDS pull {pulled[0][:10]}..{pulled[-1][:10]}" if pulled else "WRDS pull"
        if self.incremental:
            vintage += f", incremental: {self.since_year()}-{self.end_year} pulled again"
        return RawTables(
            fundq=_read_chunks(by_table["fundq"]),
            company_industry=industry.cast(INDUSTRY_SCHEMA),
            ccm_link=_read_chunks(by_table["ccm_link"]),
            vintage=vintage,
        )

    def resolved_lines(self) -> list[str]:
        """What the ingest resolved, for the summary (after tables())."""
        r = self.resolved
        if not r:
            return []
        ties = (
            f"fundq: {r['tied_keys']:,} (gvkey, datadate, fyearq, fqtr) keys held by "
            f"{r['tied_rows']:,} records (exact duplicates; the build keeps one by its rule: "
            f"the first in the pull's order under `paper`, the last under `published`), "
            f"{r['missing_fiscal_key']:,} records without fyearq or fqtr"
        )
        overlaps = (
            f"ccm_link: {r['overlap_records']:,} fundq records lie inside more than one "
            f"link window ({r['overlap_windows']:,} windows; `published` counts one copy "
            f"per window in the modal SIC, `paper` one)"
        )
        industry = (
            f"co_industry: {r['industry_dup_keys']:,} (gvkey, datadate) keys held "
            f"{r['industry_dup_records']:,} records; one kept per key "
            f"(sql/sources/wrds_company_industry.sql)"
        )
        return [ties, overlaps, industry]


# -- helpers ---------------------------------------------------------------------------------
def _to_arrow(frame: Any, chunk: Chunk) -> pa.Table:
    """The client's DataFrame as an Arrow table in the chunk's schema (one column at a time)."""
    try:
        table = pa.Table.from_pandas(frame, preserve_index=False)
    except (pa.ArrowException, TypeError, ValueError) as exc:
        raise UserError(
            f"WRDS answer for {chunk.table} {chunk.label} is not tabular: {exc}"
        ) from None
    names = {n.lower(): n for n in table.column_names}
    missing = [f.name for f in chunk.schema if f.name not in names]
    if missing:
        raise UserError(
            f"WRDS answer for {chunk.table} {chunk.label} lacks column(s) {missing[:8]}; "
            f"the table's layout changed or the account lacks access."
        )
    arrays = []
    for f in chunk.schema:
        col = table.column(names[f.name])
        arrays.append(_cast(col, f, chunk))
    return pa.Table.from_arrays(arrays, schema=chunk.schema)


def _cast(col: pa.ChunkedArray, field: pa.Field, chunk: Chunk) -> pa.ChunkedArray:
    t = col.type
    try:
        if pa.types.is_null(t):  # a column with no value in this year
            return pa.nulls(len(col), field.type)
        if field.type == pa.date32() and pa.types.is_timestamp(t):
            return pc.cast(col, pa.date32(), safe=False)
        if field.type == pa.string():
            if field.name == "gvkey" and not (pa.types.is_string(t) or pa.types.is_large_string(t)):
                raise UserError(
                    f"WRDS answer for {chunk.table} {chunk.label}: gvkey arrived as {t}, not text"
                )
            return pc.cast(col, pa.string())
        if (pa.types.is_string(t) or pa.types.is_large_string(t)) and col.null_count == len(col):
            # wrds 3.5 hands an all-empty column back as text
            return pa.chunked_array([pa.nulls(len(col), field.type)])
        if pa.types.is_integer(field.type) and pa.types.is_floating(t):
            return pc.cast(col, field.type, safe=True)
        return pc.cast(col, field.type)
    except UserError:
        raise
    except pa.ArrowException as exc:
        raise UserError(
            f"WRDS answer for {chunk.table} {chunk.label}: column {field.name} of type {t} "
            f"does not convert to {field.type}: {exc}"
        ) from None


def _write_chunk(chunk: Chunk, table: pa.Table) -> None:
    """Write atomically: a reader never sees half a chunk, a crash leaves no chunk.

    The parquet file depends on the rows only (same server, same bytes); the pull time
    and the query go to the JSON file beside it, renamed into place first.
    """
    chunk.folder.mkdir(parents=True, exist_ok=True)
    tmp = chunk.folder / f".{chunk.label}.parquet.tmp-{os.getpid()}"
    pq.write_table(table, tmp, compression="zstd")
    meta = {
        "pulled_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "rows": table.num_rows,
        "sha256": hashlib.sha256(tmp.read_bytes()).hexdigest(),
        "sql": chunk.sql,
    }
    meta_tmp = chunk.folder / f".{chunk.label}.json.tmp-{os.getpid()}"
    meta_tmp.write_text(json.dumps(meta, indent=1) + "\n")
    os.replace(meta_tmp, chunk.meta_path)
    os.replace(tmp, chunk.path)


def _read_chunks(chunks: list[Chunk]) -> pa.RecordBatchReader:
    schema = chunks[0].schema

    def batches() -> Iterator[pa.RecordBatch]:
        for c in chunks:
            f = pq.ParquetFile(c.path)
            for b in f.iter_batches(batch_size=131_072, columns=schema.names):
                yield b.cast(schema) if b.schema != schema else b

    return pa.RecordBatchReader.from_batches(schema, batches())


class _progress:
    """A rich progress bar over chunks (or nothing, for tests and pipes)."""

    def __init__(self, enabled: bool, todo: int, cached: int, console: Any = None):
        self.enabled, self.todo, self.cached, self.console = enabled, todo, cached, console
        self._bar: Progress | None = None

    def __enter__(self) -> Callable[[str], None]:
        if not self.enabled:
            return lambda _label: None
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._bar = bar = Progress(
            TextColumn("WRDS {task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=self.console,
        )
        bar.start()
        task = bar.add_task(f"({self.cached} chunks cached)", total=self.todo)

        def advance(label: str) -> None:
            bar.update(task, advance=1, description=f"{label} (cached {self.cached})")

        return advance

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
