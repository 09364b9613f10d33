"""The WRDS source: comp.fundq, comp.co_industry and crsp.ccmxpf_lnkhist via the `wrds` client.

Safety first: WRDS deactivates an account after repeated failed two-factor (Duo)
attempts, so a run makes AT MOST ONE login attempt, and none when every chunk is
already cached. `wrds.Connection()` on its own retries (it prompts for a password
and connects a second time when the first attempt fails), so the default
connection factory builds the client with `autoconnect=False` and drives the
client's single-attempt connect directly. A failed login is one UserError that
says not to retry in a loop.

The pull asks only for the columns the benchmark needs (keys, the 52 balance-sheet
and income-statement items, the 20 year-to-date cash-flow sources: 77 columns of
comp.fundq's ~650) with the filters of docs/sources.md ("What is pulled"), one calendar year of
`datadate` per query. Each answer is converted to Arrow at once (the client
returns pandas; nothing else here touches pandas), cast to the raw schema and
written to `<cache_dir>/wrds/<table>-<key>/<chunk>.parquet` atomically (temporary
file, then rename). The key hashes the SQL template (columns and filters), so a
changed projection never mixes with old chunks, and a rerun after an interruption
queries only the chunks that are missing.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from app.reference import raw_item_columns_from_file
from app.settings import get_settings
from app.sources.base import RawTables, Source
from contracts.errors import UserError
from contracts.raw import FUNDQ_KEYS, INDUSTRY_SCHEMA, LINK_SCHEMA, LINKPRIMS, LINKTYPES
from contracts.raw import fundq_schema as raw_fundq_schema

if TYPE_CHECKING:
    from rich.progress import Progress

FUNDQ_FILTERS = {"indfmt": "INDL", "datafmt": "STD", "consol": "C", "popsrc": "D"}
INDUSTRY_FILTERS = {"consol": "C", "popsrc": "D"}

_IDENT = re.compile(r"^[a-z_][a-z0-9_]*$")
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


def _login(user: str) -> Any:
    """The default connection factory: one single-attempt WRDS login."""
    import wrds  # heavy (pandas, sqlalchemy): only a real pull needs it

    db = wrds.Connection(wrds_username=user, autoconnect=False)
    single = getattr(db, "_Connection__make_sa_engine_conn", None)
    if single is None:
        # Connection.connect() would prompt and try again: refuse rather than risk it.
        raise UserError(
            f"The installed wrds client ({getattr(wrds, '__version__', '?')}) has no "
            f"single-attempt connect; refusing to use its retrying connect(). Install "
            f"wrds>=3.3,<4 as pinned in pyproject.toml."
        )
    single(raise_err=True)
    return db


class WrdsSource(Source):
    """Pulls the three raw tables from WRDS in cached yearly chunks (see module doc)."""

    name = "wrds"

    def __init__(
        self,
        user: str,
        start_year: int = 1970,
        end_year: int = 2024,
        cache_dir: Path | str | None = None,
        connection_factory: Callable[[str], Any] | None = None,
        progress: bool = True,
        console: Any = None,
    ):
        if not user or not _IDENT.match(user.lower()):
            raise UserError(f"Not a WRDS user name: {user!r}")
        if start_year > end_year:
            raise UserError(f"--start {start_year} is after --end {end_year}")
        if not 1950 <= start_year <= 2100 or not 1950 <= end_year <= 2100:
            raise UserError(f"Years must lie in 1950..2100, got {start_year}..{end_year}")
        self.user = user
        self.start_year = start_year
        self.end_year = end_year
        self.cache_dir = Path(cache_dir) if cache_dir is not None else get_settings().cache_dir
        self.connection_factory = connection_factory or _login
        self.progress = progress
        # A rich Console for the progress bar (the CLI passes its stderr console); a
        # source never imports the command line.
        self.console = console
        self.login_attempts = 0
        self._login_error: UserError | None = None
        self.columns = fundq_columns()
        bad = [c for c in self.columns if not _IDENT.match(c)]
        if bad:  # the list comes from reference/items.csv: a typo there must not reach SQL
            raise UserError(f"reference/items.csv holds non-identifier column names: {bad}")

    # -- what is pulled ----------------------------------------------------------------
    def _folder(self, table: str, template: str) -> Path:
        key = hashlib.sha256(template.encode()).hexdigest()[:12]
        return self.cache_dir / "wrds" / f"{table}-{key}"

    def chunks(self) -> list[Chunk]:
        """Every query of this pull, in order: fundq by year, then industry, then links."""
        fundq_template = (
            f"SELECT {', '.join(self.columns)} FROM comp.fundq "
            f"WHERE {_where(FUNDQ_FILTERS)} AND datadate BETWEEN '{{lo}}' AND '{{hi}}'"
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
            f"WHERE {_where(INDUSTRY_FILTERS)} AND datadate <= '{self.end_year}-12-31'"
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
            f"AND linkprim IN ({_quoted(LINKPRIMS)})"
        )
        out.append(Chunk("ccm_link", "all", links, LINK_SCHEMA, self._folder("ccm_link", links)))
        return out

    def missing(self) -> list[Chunk]:
        return [c for c in self.chunks() if not c.path.exists()]

    def parameters(self) -> dict[str, Any]:
        return {
            "user": self.user,
            "start_year": self.start_year,
            "end_year": self.end_year,
            "fundq_filters": FUNDQ_FILTERS,
            "industry_filters": INDUSTRY_FILTERS,
            "linktype": list(LINKTYPES),
            "linkprim": list(LINKPRIMS),
            "fundq_columns": len(self.columns),
            "cache": str(self.chunks()[0].folder),
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
            return self.connection_factory(self.user)
        except UserError as exc:
            self._login_error = exc
            raise
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - any failure ends the run, once
            # SystemExit too: the wrds client calls sys.exit on some prompt failures.
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            self._login_error = UserError(
                f"WRDS login as {self.user} failed (one attempt was made, none will "
                f"follow): {first}. {_NEVER_RETRY}"
            )
            raise self._login_error from None

    def pull(self) -> int:
        """Fetch every chunk not yet cached, with at most one login; returns chunks fetched."""
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
    def tables(self) -> RawTables:
        self.pull()
        chunks = self.chunks()
        by_table: dict[str, list[Chunk]] = {}
        for c in chunks:
            by_table.setdefault(c.table, []).append(c)
        pulled = sorted(_pulled_at(c.path) for c in chunks if _pulled_at(c.path))
        vintage = f"WRDS pull {pulled[0][:10]}..{pulled[-1][:10]}" if pulled else "WRDS pull"
        return RawTables(
            fundq=_read_chunks(by_table["fundq"]),
            company_industry=_read_chunks(by_table["co_industry"]),
            ccm_link=_read_chunks(by_table["ccm_link"]),
            vintage=vintage,
        )


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
    """Write atomically: a reader never sees half a chunk, a crash leaves no chunk."""
    chunk.folder.mkdir(parents=True, exist_ok=True)
    meta = {
        b"proforma.pulled_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds").encode(),
        b"proforma.sql": chunk.sql.encode(),
    }
    table = table.replace_schema_metadata(meta)
    tmp = chunk.folder / f".{chunk.label}.parquet.tmp-{os.getpid()}"
    pq.write_table(table, tmp, compression="zstd")
    os.replace(tmp, chunk.path)


def _pulled_at(path: Path) -> str:
    meta = pq.read_schema(path).metadata or {}
    return meta.get(b"proforma.pulled_at", b"").decode()


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
