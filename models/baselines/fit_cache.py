"""Finished fits on disk, so an interrupted run resumes where it stopped.

Layout under `settings.models_dir / "baselines"`:

    <model>/<run_key>/manifest.json     the run's configuration and data fingerprint
    <model>/<run_key>/<stage>/<name>.joblib   one finished fit (selection score,
                                              test predictions, small model state)

`run_key` hashes the model's configuration and the fingerprint of the data it was fit
on, so a changed grid or a rebuilt panel starts a fresh run instead of reusing stale
fits. Each record is written to a temporary file and renamed into place: a killed
process leaves either a whole record or none.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import joblib


def run_key(model: str, config: dict[str, Any], fingerprint: str) -> str:
    blob = json.dumps(
        {"model": model, "config": config, "data": fingerprint}, sort_keys=True, default=str
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


class FitCache:
    """The finished fits of one model run."""

    def __init__(self, root: Path, model: str, config: dict[str, Any], fingerprint: str):
        self.model = model
        self.key = run_key(model, config, fingerprint)
        self.dir = Path(root) / model / self.key
        self.dir.mkdir(parents=True, exist_ok=True)
        manifest = self.dir / "manifest.json"
        if not manifest.exists():
            _atomic_write_text(
                manifest,
                json.dumps(
                    {"model": model, "config": config, "data": fingerprint}, indent=2, default=str
                ),
            )

    def path(self, stage: str, name: str) -> Path:
        return self.dir / stage / f"{name}.joblib"

    def has(self, stage: str, name: str) -> bool:
        return self.path(stage, name).exists()

    def load(self, stage: str, name: str) -> Any:
        return joblib.load(self.path(stage, name))

    def save(self, stage: str, name: str, obj: Any) -> None:
        target = self.path(stage, name)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".part")
        os.close(fd)
        try:
            joblib.dump(obj, tmp)
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)

    def finished(self, stage: str) -> list[str]:
        folder = self.dir / stage
        return sorted(p.stem for p in folder.glob("*.joblib")) if folder.exists() else []


def _atomic_write_text(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".part")
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)
