"""How a public snapshot version is opened for console queries: read-only, with no
external access, no extension loading, a memory limit, one thread and the configuration
locked. One definition for the server's in-process path (app/read/sqlguard.py) and the
console's worker processes (app/read/console_workers.py)."""

from __future__ import annotations

from pathlib import Path

import duckdb

from proforma.app.store.warehouse import one_row


def open_snapshot(real: Path, memory_limit: str) -> duckdb.DuckDBPyConnection:
    """A new read-only, external-access-free, configuration-locked connection."""
    con = duckdb.connect(
        str(real),
        read_only=True,
        config={
            "enable_external_access": False,
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
            "allow_community_extensions": False,
            "memory_limit": memory_limit,
            "threads": 1,
        },
    )
    if not one_row(con.execute("SELECT current_setting('lock_configuration')"))[0]:
        con.execute("SET lock_configuration = true")
    return con
