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

    # Where sources cache downloads (WRDS yearly chunks) so interrupted pulls resume.
    cache_dir: Path = Path("data/cache")


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
