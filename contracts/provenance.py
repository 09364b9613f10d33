"""The clock and the file digests that provenance records (builds, ingests, submissions,
jobs) are stamped with."""

from __future__ import annotations

import datetime as dt
import hashlib
from pathlib import Path


def utcnow() -> dt.datetime:
    """Now in UTC as a naive timestamp (DuckDB TIMESTAMP columns hold UTC)."""
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def file_sha256(path: str | Path, chunk: int = 8 << 20) -> str:
    """sha256 (hex) of a file, streamed in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()
