"""The one settings class. Every value can be set as PROFORMA_<NAME> in the environment
or in a `.env` file of the working folder (the name in any case); the environment wins
over `.env`, and arguments to `Settings(...)` win over both.

A dataclass read here by hand, not pydantic-settings: importing pydantic took 0.3 s of
every command's start, a tenth of a `proforma submit` of a demo-sized file. A value
that does not read as its field's type is a UserError naming the variable; an empty
value of an optional field is None.
"""

from __future__ import annotations

import dataclasses
import os
import types
import typing
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from proforma.contracts.errors import UserError

PREFIX = "PROFORMA_"
ENV_FILE = ".env"


@dataclass(init=False)
class Settings:
    # Warehouse (DuckDB)
    warehouse: Path = Path("data/warehouse.duckdb")
    memory_limit: str = "6GB"
    threads: int | None = None
    temp_directory: Path = Path("data/tmp")
    # DuckDB's memory limit while the reference baselines are written and checked (never
    # above memory_limit; app/scoring/baselines.py): it bounds the pages DuckDB caches.
    # Empty: memory_limit.
    reference_memory_limit: str = "512MB"

    # Where sources cache downloads (WRDS yearly chunks) so interrupted pulls resume.
    cache_dir: Path = Path("data/cache")
    # The WRDS PostgreSQL server `proforma ingest wrds` connects to (the wrds client's
    # own defaults; SSL is always required). PGHOST is not read: set these instead.
    wrds_host: str = "wrds-pgdata.wharton.upenn.edu"
    wrds_port: int = 9737
    wrds_database: str = "wrds"

    # The LLM panel's prices table (docs/llm.md); None: reference/llm_prices.csv.
    llm_prices: Path | None = None

    # Trained model checkpoints and fit registries (models/*), one folder per model.
    models_dir: Path = Path("data/models")

    # `proforma report` writes the paper's exhibits here; the service serves the folder at /report.
    report_dir: Path = Path("data/report")

    # Service (app/api): uploads stream to upload_dir, capped at upload_max_bytes.
    upload_dir: Path = Path("data/uploads")
    # Validated point uploads, one immutable content-addressed parquet file each, scanned
    # in place for scoring (app/scoring/submissions/store.py); None: `<warehouse>.uploads/`.
    upload_store: Path | None = None
    upload_max_bytes: int = 2 * 1024**3
    uploads_per_day: int = 20  # per user, UTC day; a user's own daily_limit overrides it
    # footprints an upload's numbers are public on (the first names made; its noise is
    # budgeted for them: app/read/noise_budget.py)
    upload_footprints: int = 4
    # Public SQL runs on this read-only snapshot (aggregates only), bounded in rows and time.
    public_snapshot: Path = Path("data/public.duckdb")
    query_max_rows: int = 10_000
    query_timeout_s: float = 5.0
    query_memory_limit: str = "512MB"
    # The console's bounds (app/api/console_gate.py): per client a rate and a concurrency;
    # overall a concurrency (None: CPUs - 1) and how long a query may wait for a place.
    query_rate_per_min: float = 30.0
    query_burst: int = 10
    query_per_client: int = 1
    query_concurrency: int | None = None
    query_queue_s: float = 2.0
    # Aggregates over fewer cells than this stay out of the public snapshot.
    public_min_cells: int = 30
    # The in-house models' forecasts (firm-level values; a random walk's are the panel's own
    # lagged levels) go to any user's client only where the data may be shared (the
    # synthetic panel); admins may always fetch them, a user always their own uploads.
    share_inhouse_forecasts: bool = False
    # The snapshot keeps each footprint's latest runs only (older ones stay in the warehouse).
    public_history_runs: int = 3
    # Per-item detail of the current board's top N per track (and the in-house models).
    public_detail_top: int = 10

    def __init__(self, **values: Any) -> None:
        hints = _hints()
        unknown = set(values) - set(hints)
        if unknown:
            raise TypeError(f"Settings has no field {', '.join(sorted(unknown))}")
        environment: dict[str, str] | None = None
        for field in dataclasses.fields(self):
            if field.name in values:
                value = _read(field.name, hints[field.name], values[field.name], "")
            else:
                if environment is None:
                    environment = _environment()
                given = environment.get(field.name.upper())
                value = (
                    field.default
                    if given is None
                    else _read(field.name, hints[field.name], given, PREFIX + field.name.upper())
                )
            setattr(self, field.name, value)


#: The folder every default path of the service lies in.
DATA_DIR = Path("data")


def paths_under(folder: Path) -> dict[str, str]:
    """The PROFORMA_ variables that move every path the service keeps under data/ by
    default (the warehouse, its temp and cache folders, models, report, uploads, the
    public snapshot) into `folder`, each under its default name: a throwaway service for
    a bench or a test."""
    return {
        PREFIX + f.name.upper(): str(folder / f.default.relative_to(DATA_DIR))
        for f in dataclasses.fields(Settings)
        if isinstance(f.default, Path) and f.default.is_relative_to(DATA_DIR)
    }


@lru_cache(maxsize=1)
def _hints() -> dict[str, Any]:
    return typing.get_type_hints(Settings)


def _environment() -> dict[str, str]:
    """PROFORMA_ variables by field name in upper case: the `.env` file's, then the
    environment's over them."""
    found: dict[str, str] = {}
    env_file = Path(ENV_FILE)
    if env_file.is_file():
        found.update(_dotenv(env_file.read_text(encoding="utf-8", errors="replace")))
    found.update(
        {k[len(PREFIX) :].upper(): v for k, v in os.environ.items() if k.upper().startswith(PREFIX)}
    )
    return found


def _dotenv(text: str) -> dict[str, str]:
    """The PROFORMA_ assignments of a .env file: `NAME=value` lines, optionally after
    `export`, the value optionally quoted; `#` starts a comment outside quotes."""
    found: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("export "):
            line = line[len("export ") :].lstrip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, value = (part.strip() for part in line.split("=", 1))
        if value[:1] in ("'", '"') and value[0] in value[1:]:
            value = value[1 : value.index(value[0], 1)]
        elif " #" in value:
            value = value[: value.index(" #")].rstrip()
        if name.upper().startswith(PREFIX):
            found[name[len(PREFIX) :].upper()] = value
    return found


def _read(name: str, hint: Any, value: Any, variable: str) -> Any:
    """`value` as the field's type (`hint`); `variable` names where it came from."""
    kinds = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    optional = type(None) in kinds
    kind = next(k for k in kinds if k is not type(None))
    if optional and (value is None or (isinstance(value, str) and not value.strip())):
        return None
    try:
        return _convert(kind, value)
    except (TypeError, ValueError):
        what = _KINDS.get(kind, str(kind))
        raise UserError(f"setting {variable or name}: {value!r} is not {what}") from None


_KINDS = {
    int: "an integer",
    float: "a number",
    Path: "a path",
    str: "text",
    bool: "true or false (1, 0, yes, no)",
}
_BOOLS = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}


def _convert(kind: Any, value: Any) -> Any:
    if isinstance(value, bool) and kind in (int, float):
        raise TypeError(value)
    text = value.strip() if isinstance(value, str) else value
    if kind is Path:
        return Path(value)
    if kind is int:
        if isinstance(value, float) and not value.is_integer():
            raise ValueError(value)
        return int(text)
    if kind is float:
        return float(text)
    if kind is str:
        return str(value)
    if kind is bool:
        if isinstance(value, bool):
            return value
        if str(text).lower() not in _BOOLS:
            raise ValueError(value)
        return _BOOLS[str(text).lower()]
    raise TypeError(f"no reader for {kind}")


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
