"""The upload store: a validated upload of one forecast per cell kept as one immutable,
content-addressed parquet file, scanned in place by DuckDB for scoring and rescoring.

A point file (no sigma) or a single-family density file (a sigma; no component column,
not a quantile forecast) is validated as before (019 codes its keys, 033 or 030, and 035
check them) but its rows are staged in a temporary table, not inserted into
eval.forecast_points or eval.forecast_rows: once valid they are written to
`{store}/{sha256}.b{build_id}.parquet` (the upload's checksum, its identity, and the
build whose integer keys the file holds) as the packed cell key (eval.cell_key), mu and,
for a density file, sigma. Re-uploading the same bytes against the same build finds the
file and writes nothing. eval.submission_files says which submission reads which file;
scoring reads it in place, its cells meeting the truth by position in the cell grid
(proforma.app.scoring.positional), coherence and reconciliation through
`forecast_relation`. A file is never
changed once written (a new one is written beside it and renamed into place); one that
is missing, truncated or unreadable is a clear error naming it, never a silent empty
submission.

The store lives beside the warehouse (`<warehouse>.uploads/`) unless
`PROFORMA_UPLOAD_STORE` names another folder.
"""

from __future__ import annotations

import os
import secrets
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from proforma.app.store.settings import get_settings
from proforma.app.store.warehouse import Warehouse, streamed_error
from proforma.contracts.errors import UserError
from proforma.contracts.provenance import utcnow


class StoreError(UserError):
    """A submission's stored upload file is missing or damaged."""


#: Rows per row group of a stored file (DuckDB's own default).
ROW_GROUP = 122_880
#: The temp view of a written upload's rows decoded to 020's columns, for the checks.
STAGED = "upload_points"
#: The temp view `forecast_relation` makes over a stored file.
FILE_VIEW = "stored_forecasts"
#: The temp view `point_relation` makes: one submission's point forecast per cell (079).
POINTS_VIEW = "submission_points"
#: 049's temp view: one submission's (cell, mu, sigma, actual) from eval.forecasts.
CELL_VIEW = "submission_cells"


def store_dir(wh: Warehouse) -> Path:
    """The upload store's folder: PROFORMA_UPLOAD_STORE, else beside the warehouse."""
    configured = get_settings().upload_store
    if configured is not None:
        return Path(configured)
    path = Path(wh.path)
    if str(path) in ("", ":memory:"):
        raise UserError("An in-memory warehouse has no upload store: set PROFORMA_UPLOAD_STORE")
    return path.with_name(path.name + ".uploads")


def file_name(checksum: str, build_id: int | None) -> str:
    return f"{checksum}.b{build_id if build_id is not None else 0}.parquet"


def write_upload(wh: Warehouse, checksum: str, build_id: int | None, *, sigma: bool) -> Path:
    """022's view upload_cells (cell, mu, and sigma when `sigma`) written, in one streaming
    pass over the upload, to a temporary file in the store (renamed into place by `keep`
    once its checks pass; `discard` removes it otherwise); or the file the same bytes made
    before, when it is intact. Returns the file to check."""
    folder = store_dir(wh)
    folder.mkdir(parents=True, exist_ok=True)
    name = file_name(checksum, build_id)
    final = folder / name
    if _intact(final):
        return final
    tmp = folder / f".{name}.{secrets.token_hex(6)}.tmp"
    try:
        # lz4, not zstd: every scoring reads the file whole (its layout on the cell grid),
        # and lz4 writes and reads it in a fraction of zstd's time at about twice the size
        # (a 10M-row density file: 100 against 53 MB). Arrow's writer, fed by DuckDB's
        # stream of the rows, not DuckDB's COPY: without a dictionary attempt on columns
        # of distinct doubles and with statistics for the key only, it writes the same
        # file for a third less CPU (docs/scoring.md, "Figures behind the code's
        # choices"). Groups of ROW_GROUP
        # rows, as COPY wrote them: a scoring's layout reads one group at a time.
        # (the reader closed whatever happens: a result left open on the connection
        # would fail the rollback and the explanation that follow a failed write)
        with (
            wh.reader(
                f"SELECT cell, mu{', sigma' if sigma else ''} FROM upload_cells",
                batch_size=ROW_GROUP,
            ) as reader,
            pq.ParquetWriter(
                tmp,
                reader.schema,
                compression="lz4",
                use_dictionary=False,
                write_statistics=["cell"],
            ) as out,
        ):
            for batch in reader:
                out.write_batch(batch, row_group_size=ROW_GROUP)
        _start_sync(tmp)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        # DuckDB's error mid-stream comes through Arrow as an OSError: raised as DuckDB's
        # own, so that the caller tells a bad file from the machine's limits as before
        if isinstance(exc, OSError) and (cause := streamed_error(exc)) is not exc:
            raise cause from None
        raise
    return tmp


def stage(wh: Warehouse, sid: int, path: Path) -> None:
    """The temp views the checks read over a written upload: `upload_file` (cell, mu,
    sigma: 034's stored) and STAGED, its rows decoded to 020's columns (031, 035)."""
    literal = _literal(str(path))
    sigma = "sigma" if "sigma" in pq.ParquetFile(path).schema_arrow.names else "NULL::DOUBLE"
    wh.execute(
        f"CREATE OR REPLACE TEMP VIEW upload_file AS SELECT cell, mu, {sigma} AS sigma "
        f"FROM read_parquet({literal})"
    )
    wh.execute(f"CREATE OR REPLACE TEMP VIEW {STAGED} AS {_decoded(sid, 'upload_file')}")


def keep(
    wh: Warehouse,
    sid: int,
    path: Path,
    checksum: str,
    build_id: int | None,
    first_q: int,
    last_q: int,
) -> Path:
    """Keep the checked upload `path` (from write_upload) as submission `sid`'s
    content-addressed file and record it in eval.submission_files (inside the caller's
    transaction). Returns the file."""
    final = store_dir(wh) / file_name(checksum, build_id)
    if path != final:
        _wait_sync(path)  # on the disk before its name says it is kept
        os.replace(path, final)
        # the rename itself is an entry of the folder: until the folder is on the disk,
        # a power loss can leave the row this transaction commits pointing at no file
        sync_folder(final.parent)
    rows = pq.ParquetFile(final).metadata.num_rows
    wh.execute(
        "INSERT INTO eval.submission_files VALUES (?, ?, ?, ?, ?, ?, ?)",
        [sid, final.name, rows, final.stat().st_size, first_q, last_q, utcnow()],
    )
    return final


def sync_folder(folder: Path) -> None:
    """fsync a folder, so that the names renamed into it survive a power loss (POSIX
    makes a rename durable only once its directory is synced)."""
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def discard(path: Path | None) -> None:
    """Remove a temporary upload file `keep` did not take (a rejected upload)."""
    if path is not None and path.name.endswith(".tmp"):
        _finished_sync(path)  # its error, if any, goes with the file
        path.unlink(missing_ok=True)


class _Sync:
    """A written file's fsync, run on a thread of its own while the checks read the
    file (0.3 s of a 15.7M-row upload on this machine's disk) and waited for before
    `keep` renames it into place. A daemon thread: a process that ends before `keep`
    keeps nothing of the file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.error: OSError | None = None
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        try:
            with open(self.path, "rb") as fh:
                os.fsync(fh.fileno())
        except OSError as exc:
            self.error = exc


_syncs: dict[Path, _Sync] = {}
_syncs_lock = threading.Lock()


def _start_sync(path: Path) -> None:
    sync = _Sync(path)
    with _syncs_lock:
        _syncs[path] = sync
    sync.thread.start()


def _finished_sync(path: Path) -> _Sync | None:
    """The fsync started for `path`, finished; None when none was started."""
    with _syncs_lock:
        sync = _syncs.pop(path, None)
    if sync is not None:
        sync.thread.join()
    return sync


def _wait_sync(path: Path) -> None:
    """The fsync of `path` has finished (done here when none was started); its error
    is raised."""
    sync = _finished_sync(path)
    if sync is None:
        sync = _Sync(path)
        sync.run()
    if sync.error is not None:
        raise sync.error


def _intact(path: Path, rows: int | None = None) -> bool:
    """The file is there and its parquet footer reads (with `rows` rows when given)."""
    try:
        meta = pq.ParquetFile(path).metadata
    except (OSError, pa.ArrowException):
        return False
    return rows is None or meta.num_rows == rows


def stored_file(wh: Warehouse, sid: int) -> dict[str, Any] | None:
    """The submission's stored file record (path checked), or None when its rows are in
    the forecast tables. A missing or damaged file is a UserError naming it."""
    rows = wh.arrow(
        "SELECT file, rows, bytes, first_q, last_q FROM eval.submission_files "
        "WHERE submission_id = ?",
        [sid],
    ).to_pylist()
    if not rows:
        return None
    rec = rows[0]
    path = store_dir(wh) / rec["file"]
    if not path.is_file():
        raise StoreError(
            f"Submission {sid}'s stored upload {path} is missing: the upload store must keep "
            f"every file (restore it from a backup, or upload the submission again)"
        )
    if path.stat().st_size != rec["bytes"] or not _intact(path, rec["rows"]):
        raise StoreError(
            f"Submission {sid}'s stored upload {path} is damaged (expected {rec['rows']:,} rows "
            f"in {rec['bytes']:,} bytes): restore it from a backup, or upload the submission again"
        )
    rec["path"] = str(path)
    rec["sigma"] = "sigma" in pq.ParquetFile(path).schema_arrow.names
    return rec


def _literal(path: str) -> str:
    return "'" + path.replace("'", "''") + "'"


def _decoded(sid: int, source: str) -> str:
    """SQL of the rows of `source` (cell, mu, sigma) with eval.forecasts' columns."""
    return (
        f"SELECT CAST({int(sid)} AS INTEGER) AS submission_id, "
        "CAST(cell // 67108864 AS INTEGER) AS firm_id, "
        "CAST(cell // 4096 % 16384 AS INTEGER) AS origin_q, "
        "CAST(cell // 32 % 128 AS SMALLINT) AS item_id, CAST(cell % 32 AS TINYINT) AS horizon, "
        f"CAST(0 AS SMALLINT) AS component, mu, sigma FROM {source}"
    )


def forecast_relation(wh: Warehouse, sid: int) -> str:
    """The relation holding submission `sid`'s forecast rows (the columns of
    eval.forecasts): eval.forecasts, or a temp view over its stored file."""
    rec = stored_file(wh, sid)
    if rec is None:
        return "eval.forecasts"
    sigma = "sigma" if rec["sigma"] else "CAST(NULL AS DOUBLE)"
    wh.execute(
        f"CREATE OR REPLACE TEMP VIEW {FILE_VIEW} AS "
        + _decoded(
            sid, f"(SELECT cell, mu, {sigma} AS sigma FROM read_parquet({_literal(rec['path'])}))"
        )
    )
    return FILE_VIEW


def point_relation(wh: Warehouse, sid: int) -> str:
    """The temp view of submission `sid`'s point forecast and its sd per cell
    (sql/eval/079: a single forecast's rows as they are, a mixture's averaged), over its
    forecast rows wherever they are kept; `drop_relations` drops it."""
    components = wh.scalar(
        "SELECT n_components FROM eval.submissions WHERE submission_id = ?", [sid]
    )
    wh.run_step(
        "eval/079_submission_points",
        {"points_id": sid, "points_components": int(components or 1)},
        identifiers={"forecasts": forecast_relation(wh, sid)},
    )
    return POINTS_VIEW


def drop_relations(wh: Warehouse) -> None:
    """Drop the temp views `point_relation` and `forecast_relation` made on this
    connection."""
    wh.execute(f"DROP VIEW IF EXISTS {POINTS_VIEW}")
    wh.execute(f"DROP VIEW IF EXISTS {FILE_VIEW}")
