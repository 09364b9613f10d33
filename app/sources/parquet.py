"""The parquet source: a Compustat-shaped raw panel file, as the published benchmark ships it.

The panel holds one row per comp.fundq record: keys `gvkey` (6-character text),
`datadate`, `fyearq`, `fqtr` (`fyr` optional), the 72 item columns of raw.fundq
(52 balance-sheet and income-statement items, 20 year-to-date `*y` sources), and
the attached `sich`, `naicsh`, `permno`. Other columns (tic, conm, permco, the
query filters) are ignored.

Without `--industry`, raw.company_industry comes from the panel's own sich/naicsh
(sql/sources/parquet_company_industry.sql); without `--links`, raw.ccm_link comes
from its permno column (sql/sources/parquet_ccm_link.sql), and a panel without a
permno column gives an empty link table (every firm kept whole).

Everything is validated BEFORE anything is written, in DuckDB over the files (no
pandas): unreadable or empty files, missing or mistyped columns, null keys,
unparsable dates, out-of-range fiscal fields and duplicate rows each raise one
ValidationError naming the column and a few example rows (numbered from 1).
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from proforma.app.sources.base import RawTables, Source
from proforma.app.store.reference import raw_item_columns_from_file
from proforma.app.store.settings import Settings, get_settings
from proforma.app.store.sqlfiles import sql_file
from proforma.app.store.warehouse import one_row
from proforma.contracts.errors import UserError, ValidationError
from proforma.contracts.raw import FUNDQ_ROW_KEY, LINKPRIMS, LINKTYPES

_INT = re.compile(r"^(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|UHUGEINT)$")
_FLOAT = re.compile(r"^(FLOAT|DOUBLE|REAL|DECIMAL\(\d+,\s*\d+\))$")
_TIMESTAMP = re.compile(r"^TIMESTAMP")
_GVKEY_FIX = (
    "gvkeys are 6-character strings with leading zeros ('001004'), never numbers. Fix "
    "the file, e.g. in DuckDB: COPY (SELECT * REPLACE (lpad(CAST(gvkey AS VARCHAR), 6, "
    "'0') AS gvkey) FROM 'in.parquet') TO 'out.parquet'."
)


def _kind(duck_type: str) -> str:
    t = duck_type.strip('"').upper()
    if _INT.match(t):
        return "int"
    if _FLOAT.match(t):
        return "float"
    if t == "VARCHAR":
        return "text"
    if t == "DATE":
        return "date"
    if _TIMESTAMP.match(t):
        return "timestamp"
    if t == "NULL":
        return "null"
    return "other"


def _show(value: Any) -> str:
    """A value as a user would write it: ISO dates, quoted text, NULL."""
    if value is None:
        return "NULL"
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, str):
        return repr(value[:40])
    return str(value)


def _lit(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


class _File:
    """One parquet file under validation, registered as a DuckDB view `name`."""

    def __init__(self, con: duckdb.DuckDBPyConnection, path: Path, name: str, role: str):
        self.con, self.path, self.name, self.role = con, Path(path), name, role
        if not self.path.is_file():
            what = "is a folder, not a file" if self.path.is_dir() else "does not exist"
            raise ValidationError(f"The {role} file {self.path} {what}. Nothing was written.")
        # can_have_nan: pyarrow leaves NaN out of the min/max statistics, and without
        # this DuckDB 2.0 trusts them and folds isnan()/nullif() away (duckdb#25521).
        source = f"read_parquet({_lit(self.path)}, file_row_number = true, can_have_nan = true)"
        try:
            described = con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()
            # NaN is how many tools write a missing float: it becomes NULL here, once,
            # so every check and every output sees one kind of missing value.
            floats = [r[0] for r in described if r[1] in ("FLOAT", "DOUBLE")]
            replace = ", ".join(f'nullif("{c}", \'NaN\'::DOUBLE) AS "{c}"' for c in floats)
            self.select = f"SELECT * {f'REPLACE ({replace}) ' if replace else ''}FROM {source}"
            con.execute(f"CREATE OR REPLACE VIEW {name} AS {self.select}")
            self.rows = one_row(con.execute(f"SELECT count(*) FROM {name}"))[0]
        except duckdb.Error as exc:
            first = str(exc).strip().splitlines()[0]
            raise ValidationError(
                f"The {role} file {self.path} is not a readable parquet file: {first}. "
                f"Nothing was written."
            ) from None
        # Column names match case-insensitively, as DuckDB resolves them.
        self.types = {r[0].lower(): r[1] for r in described if r[0] != "file_row_number"}
        if self.rows == 0:
            raise ValidationError(
                f"The {role} file {self.path} holds no rows. Nothing was written."
            )

    def fail(
        self,
        column: str,
        problem: str,
        where: str,
        show: list[str],
        hint: str = "",
        subject: str | None = None,
        order: str = "file_row_number",
    ) -> None:
        """Raise one ValidationError with up to 3 example rows matching `where`."""
        n = one_row(self.con.execute(f"SELECT count(*) FROM {self.name} WHERE {where}"))[0]
        cols = list(dict.fromkeys(c for c in [column, *show] if c in self.types))
        select = ", ".join(f'"{c}"' for c in cols)
        rows = self.con.execute(
            f"SELECT file_row_number + 1, {select} FROM {self.name} WHERE {where} "
            f"ORDER BY {order} LIMIT 3"
        ).fetchall()
        examples = "; ".join(
            f"row {r[0]}: " + ", ".join(f"{c}={_show(v)}" for c, v in zip(cols, r[1:], strict=True))
            for r in rows
        )
        message = (
            f"{self.path.name}: {subject or f'column {column!r}'} {problem} "
            f"({n:,} row(s), e.g. {examples}).{' ' + hint if hint else ''} Nothing was written."
        )
        raise ValidationError(
            message,
            [
                {
                    "file": str(self.path),
                    "column": column,
                    "problem": problem,
                    "rows": n,
                    "examples": [list(map(str, r)) for r in rows],
                }
            ],
        )

    def require(self, columns: list[str], what: str, hint: str = "") -> None:
        missing = [c for c in columns if c not in self.types]
        if missing:
            shown = ", ".join(missing[:12]) + (
                f" and {len(missing) - 12} more" if len(missing) > 12 else ""
            )
            raise ValidationError(
                f"{self.path.name}: missing {what} column(s) {shown}; found "
                f"{len(self.types)} column(s) such as {', '.join(list(self.types)[:6])}."
                f"{' ' + hint if hint else ''} Nothing was written.",
                [{"file": str(self.path), "column": c, "problem": "missing"} for c in missing],
            )

    def kind(self, column: str) -> str:
        return _kind(self.types[column])

    # -- typed checks ---------------------------------------------------------------------
    def check_gvkey(self) -> None:
        k = self.kind("gvkey")
        if k in ("int", "float"):
            self.fail("gvkey", f"is numeric ({self.types['gvkey']})", "true", ["gvkey"], _GVKEY_FIX)
        if k != "text":
            self.fail(
                "gvkey", f"has type {self.types['gvkey']}, not text", "true", ["gvkey"], _GVKEY_FIX
            )
        self.fail_if("gvkey", "is null", "gvkey IS NULL", ["datadate"])
        self.fail_if(
            "gvkey",
            "is not a 6-character code",
            "length(gvkey) <> 6",
            ["gvkey", "datadate"],
            _GVKEY_FIX,
        )

    def check_date(self, column: str, nullable: bool = False) -> None:
        k = self.kind(column)
        show = ["gvkey", column]
        if k == "text":
            self.fail_if(
                column,
                "holds text that is not a date (YYYY-MM-DD)",
                f'"{column}" IS NOT NULL AND try_cast("{column}" AS DATE) IS NULL',
                show,
            )
        elif k not in ("date", "timestamp", "null"):
            self.fail(
                column,
                f"has type {self.types[column]}, not a date",
                f'"{column}" IS NOT NULL',
                show,
                "Store dates as DATE (or ISO text 'YYYY-MM-DD').",
            )
        if not nullable:
            self.fail_if(column, "is null", f'"{column}" IS NULL', show)

    def check_number(
        self, column: str, integral: bool, lo: float | None = None, hi: float | None = None
    ) -> None:
        k = self.kind(column)
        show = ["gvkey", "datadate", column]
        if k not in ("int", "float", "null"):
            self.fail(
                column,
                f"has type {self.types[column]}, not a number",
                f'"{column}" IS NOT NULL',
                show,
                "Item and code columns must be numeric.",
            )
        if integral and k == "float":
            self.fail_if(
                column,
                "holds non-integer values",
                f'"{column}" IS NOT NULL AND "{column}" <> round("{column}")',
                show,
            )
        if lo is not None and k != "null":
            self.fail_if(
                column,
                f"lies outside {lo:g}..{hi:g}",
                f'"{column}" IS NOT NULL AND NOT ("{column}" BETWEEN {lo} AND {hi})',
                show,
            )

    def check_finite(self, columns: list[str]) -> None:
        """One scan for infinite values in many float columns (the item columns)."""
        floats = [c for c in columns if c in self.types and self.kind(c) == "float"]
        if floats:
            flags = ", ".join(f'bool_or(isinf("{c}"))' for c in floats)
            hits = one_row(self.con.execute(f"SELECT {flags} FROM {self.name}"))
            for c, hit in zip(floats, hits, strict=True):
                if hit:
                    self.fail(c, "holds infinite values", f'isinf("{c}")', ["gvkey", "datadate"])

    def fail_if(
        self, column: str, problem: str, where: str, show: list[str], hint: str = ""
    ) -> None:
        hit = self.con.execute(f"SELECT 1 FROM {self.name} WHERE {where} LIMIT 1").fetchone()
        if hit:
            self.fail(column, problem, where, show, hint)

    def check_unique(self, keys: list[str]) -> None:
        cols = ", ".join(f'"{c}"' for c in keys)
        # A window, not IN: partitions treat NULL keys as equal, as GROUP BY does.
        dup = (
            f"file_row_number IN (SELECT file_row_number FROM (SELECT file_row_number, "
            f"count(*) OVER (PARTITION BY {cols}) AS n FROM {self.name}) WHERE n > 1)"
        )
        hit = self.con.execute(
            f"SELECT 1 FROM {self.name} GROUP BY {cols} HAVING count(*) > 1 LIMIT 1"
        ).fetchone()
        if hit:
            self.fail(
                keys[0],
                "appear more than once",
                dup,
                keys,
                "Each key must appear once; remove the duplicates.",
                subject=f"duplicate ({', '.join(keys)}) rows",
                order=f"{cols}, file_row_number",
            )


class ParquetSource(Source):
    """A raw panel parquet (and optional industry and link files) as the raw tables."""

    name = "parquet"

    def __init__(
        self,
        path: Path | str,
        industry: Path | str | None = None,
        links: Path | str | None = None,
        settings: Settings | None = None,
    ):
        self.path = Path(path)
        self.industry = Path(industry) if industry is not None else None
        self.links = Path(links) if links is not None else None
        self.settings = settings or get_settings()
        self.items = raw_item_columns_from_file()
        self.notes: list[str] = []
        self._con: duckdb.DuckDBPyConnection | None = None
        self._validated = False

    def parameters(self) -> dict[str, Any]:
        stat = self.path.stat() if self.path.is_file() else None
        return {
            "path": str(self.path.resolve()),
            "bytes": stat.st_size if stat else None,
            "modified": stat.st_mtime if stat else None,
            "industry": str(self.industry.resolve()) if self.industry else "from panel sich/naicsh",
            "links": str(self.links.resolve()) if self.links else "from panel permno",
            "notes": self.notes,
        }

    def _connection(self) -> duckdb.DuckDBPyConnection:
        if self._con is None:
            config: dict[str, Any] = {"memory_limit": self.settings.memory_limit}
            if self.settings.threads:
                config["threads"] = self.settings.threads
            self.settings.temp_directory.mkdir(parents=True, exist_ok=True)
            config["temp_directory"] = str(self.settings.temp_directory)
            self._con = duckdb.connect(":memory:", config=config)
        return self._con

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None
            self._validated = False

    # -- validation -----------------------------------------------------------------------
    def validate(self) -> None:
        """Check every file; raise one ValidationError for the first problem found."""
        con = self._connection()
        self._validate_panel(con)
        if self.industry is not None:
            self._validate_industry(con, self.industry)
        if self.links is not None:
            self._validate_links(con, self.links)
        elif not self.has_permno:
            self.notes.append(
                "the panel has no permno column and no --links file was given: raw.ccm_link "
                "is empty, so every firm is kept whole by the link-window trim"
            )
        self._validated = True

    def _validate_panel(self, con: duckdb.DuckDBPyConnection) -> None:
        """Check the panel file: its keys, items and industry code, their types, ranges and
        finiteness, one row per key; note which optional columns it has."""
        panel = self._panel = _File(con, self.path, "panel", "panel")
        self.has_fyr = "fyr" in panel.types
        self.has_permno = "permno" in panel.types
        self.has_naicsh = "naicsh" in panel.types
        panel.require(
            list(FUNDQ_ROW_KEY),
            "key",
            "The panel needs gvkey, datadate, fyearq and fqtr (Compustat names).",
        )
        panel.require(
            self.items,
            "item",
            "The raw panel carries the 52 balance-sheet and income-statement items and the "
            "20 year-to-date cash-flow sources (*y) listed in reference/items.csv.",
        )
        if self.industry is None:
            panel.require(["sich"], "industry", "Give --industry FILE or a panel with sich.")
        panel.check_gvkey()
        panel.check_date("datadate")
        for item in self.items:  # types first (no scan), then one scan for infinities
            panel.check_number(item, integral=False)
        panel.check_finite([*self.items, "fyearq", "fqtr", "fyr", "sich", "naicsh", "permno"])
        # Compustat ships a few records without a fiscal quarter (changed fiscal year
        # ends); they are kept, and the build treats them as having no fiscal position.
        panel.check_number("fyearq", integral=True, lo=1900, hi=2100)
        panel.check_number("fqtr", integral=True, lo=1, hi=4)
        if self.has_fyr:
            panel.check_number("fyr", integral=True, lo=1, hi=12)
        for code in ("sich", "naicsh", "permno"):
            if code in panel.types:
                panel.check_number(code, integral=True, lo=0, hi=2_147_483_647)
        panel.check_unique(list(FUNDQ_ROW_KEY))

    def _validate_industry(self, con: duckdb.DuckDBPyConnection, path: Path) -> None:
        """Check the industry file: keys, codes, one row per (gvkey, datadate)."""
        ind = _File(con, path, "industry", "industry")
        ind.require(["gvkey", "datadate", "sich"], "industry")
        self.industry_has_naicsh = "naicsh" in ind.types
        ind.check_gvkey()
        ind.check_date("datadate")
        ind.check_finite(["sich", "naicsh"])
        for code in ("sich", "naicsh"):
            if code in ind.types:
                ind.check_number(code, integral=True, lo=0, hi=2_147_483_647)
        ind.check_unique(["gvkey", "datadate"])

    def _validate_links(self, con: duckdb.DuckDBPyConnection, path: Path) -> None:
        """Check the link file (crsp.ccmxpf_lnkhist's columns, their types, link windows
        that do not end before they start) and note the rows its link filter drops."""
        lk = _File(con, path, "links", "links")
        lk.require(
            ["gvkey", "lpermno", "linktype", "linkprim", "linkdt", "linkenddt"],
            "link",
            "The link file has crsp.ccmxpf_lnkhist's columns.",
        )
        lk.check_gvkey()
        lk.check_finite(["lpermno"])
        lk.check_number("lpermno", integral=True, lo=0, hi=2_147_483_647)
        lk.check_date("linkdt")
        lk.check_date("linkenddt", nullable=True)  # null: the link is still active
        for col in ("linktype", "linkprim"):
            if lk.kind(col) != "text":
                lk.fail(col, f"has type {lk.types[col]}, not text", "true", ["gvkey", col])
        lk.fail_if(
            "linkenddt",
            "is before linkdt",
            "linkenddt < linkdt",
            ["gvkey", "lpermno", "linkdt"],
        )
        kept, total = one_row(
            con.execute(
                f"SELECT count(*) FILTER (WHERE linktype IN {LINKTYPES} AND linkprim IN "
                f"{LINKPRIMS}), count(*) FROM links"
            )
        )
        if kept < total:
            self.notes.append(
                f"{total - kept:,} of {total:,} link rows dropped (only link types "
                f"LU/LC with primary flags P/C are used)"
            )

    # -- the raw tables -------------------------------------------------------------------
    def tables(self) -> RawTables:
        if not self._validated:
            self.validate()
        con = self._connection()
        fyr = "CAST(fyr AS TINYINT)" if self.has_fyr else "CAST(NULL AS TINYINT)"
        items = ", ".join(f"CAST({c} AS DOUBLE) AS {c}" for c in self.items)
        fundq = (
            "SELECT gvkey, CAST(datadate AS DATE) AS datadate, CAST(fyearq AS INTEGER) AS fyearq, "
            f"CAST(fqtr AS TINYINT) AS fqtr, {fyr} AS fyr, {items} FROM panel"
        )
        if self.industry is not None:
            naicsh = (
                "CAST(naicsh AS INTEGER)" if self.industry_has_naicsh else "CAST(NULL AS INTEGER)"
            )
            industry = (
                "SELECT gvkey, CAST(datadate AS DATE) AS datadate, CAST(sich AS INTEGER) AS sich, "
                f"{naicsh} AS naicsh FROM industry"
            )
        else:
            if not self.has_naicsh:
                con.execute(
                    "CREATE OR REPLACE VIEW panel AS SELECT *, CAST(NULL AS INTEGER) AS naicsh "
                    f"FROM ({self._panel.select})"
                )
            industry = sql_file("sources/parquet_company_industry").text
        if self.links is not None:
            links = (
                "SELECT gvkey, CAST(lpermno AS INTEGER) AS lpermno, linktype, linkprim, "
                "CAST(linkdt AS DATE) AS linkdt, CAST(linkenddt AS DATE) AS linkenddt FROM links "
                f"WHERE linktype IN {LINKTYPES} AND linkprim IN {LINKPRIMS}"
            )
        elif self.has_permno:
            links = sql_file("sources/parquet_ccm_link").text
        else:
            links = (
                "SELECT CAST(NULL AS VARCHAR) AS gvkey, CAST(NULL AS INTEGER) AS lpermno, "
                "CAST(NULL AS VARCHAR) AS linktype, CAST(NULL AS VARCHAR) AS linkprim, "
                "CAST(NULL AS DATE) AS linkdt, CAST(NULL AS DATE) AS linkenddt LIMIT 0"
            )
        try:
            return RawTables(
                fundq=self._reader(fundq),
                company_industry=self._reader(industry),
                ccm_link=self._reader(links),
                vintage=f"parquet {self.path.name}",
            )
        except duckdb.Error as exc:
            raise UserError(f"Cannot read {self.path}: {str(exc).splitlines()[0]}") from None

    def _reader(self, sql: str) -> pa.RecordBatchReader:
        # Each reader runs on its own cursor: DuckDB streams one open result per cursor.
        return self._connection().cursor().sql(sql).to_arrow_reader(131_072)
