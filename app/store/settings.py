"""The one settings class. Every value can be set as PROFORMA_<NAME> in the environment."""

from functools import lru_cache
from pathlib import Path

from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PROFORMA_", env_file=".env", extra="ignore")

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
    # The snapshot keeps each footprint's latest runs only (older ones stay in the warehouse).
    public_history_runs: int = 3
    # Per-item detail of the current board's top N per track (and the in-house models).
    public_detail_top: int = 10


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
