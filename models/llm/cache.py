"""The response cache: one JSON file per answered request, so a rerun never pays twice
and an interrupted run resumes where it stopped.

The key is the sha256 of everything that determines the request: provider, model,
settings, system text, user text, draw and attempt. Files are written to a temporary
name in the same folder and renamed (atomic on POSIX), so a crash never leaves a
half-written answer; an unreadable file counts as absent and is answered again.
Only successful calls are cached; a failed call is tried again on the next run.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def request_key(
    provider: str,
    model: str,
    settings: dict[str, Any],
    system: str,
    user: str,
    draw: int,
    attempt: int,
) -> str:
    """The cache key of one request (hex sha256)."""
    payload = json.dumps(
        {
            "provider": provider,
            "model": model,
            "settings": settings,
            "system": system,
            "user": user,
            "draw": draw,
            "attempt": attempt,
        },
        sort_keys=True,
        ensure_ascii=True,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


class ResponseCache:
    """Answers on disk under `root` (settings.cache_dir / "llm" by default)."""

    def __init__(self, root: Path):
        self.root = Path(root)

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            record = json.loads(self.path(key).read_text())
        except (OSError, ValueError):
            return None
        return record if isinstance(record, dict) and record.get("key") == key else None

    def put(self, key: str, record: dict[str, Any]) -> None:
        target = self.path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{key[:8]}-", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump({**record, "key": key}, f, sort_keys=True)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
