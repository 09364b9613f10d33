"""Finished origin chunks of a Chronos-2 run, kept on disk so a rerun continues.

One folder per run key (model weights + panel + origin plan + settings that change the
numbers); chunk i holds the quantile cells (CELL_SCHEMA) of the plan's origins [i*C, (i+1)*C) as
an Arrow IPC file, written to a temporary name and renamed, so a file that exists is
complete. An interrupted run loses at most the chunk in flight.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from proforma.models.chronos import CELL_SCHEMA, QUANTILE_SCHEMA


def run_key(parts: dict[str, Any]) -> str:
    """A short, stable key of everything that changes a run's numbers."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:20]


class ChunkCache:
    """The chunk files of one run key under `root`."""

    def __init__(self, root: Path, key: str, manifest: dict[str, Any] | None = None):
        self.folder = Path(root) / key
        self.folder.mkdir(parents=True, exist_ok=True)
        if manifest is not None:
            (self.folder / "manifest.json").write_text(json.dumps(manifest, indent=1, default=str))

    def path(self, index: int) -> Path:
        return self.folder / f"chunk-{index:06d}.arrow"

    def done(self) -> set[int]:
        """Indices of the finished chunks."""
        return {int(p.stem.removeprefix("chunk-")) for p in self.folder.glob("chunk-*.arrow")}

    def write(self, index: int, table: pa.Table, stats: dict[str, int]) -> None:
        """Chunk `index`'s rows, with its counts (ForecastStats) in the file's metadata."""
        schema = CELL_SCHEMA.with_metadata({"stats": json.dumps(stats)})
        tmp = self.folder / f".chunk-{index:06d}.arrow.part"
        with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, schema) as writer:
            writer.write_table(table.cast(CELL_SCHEMA).replace_schema_metadata(schema.metadata))
        os.replace(tmp, self.path(index))

    def stats(self) -> dict[str, int]:
        """The finished chunks' counts, summed."""
        total: dict[str, int] = {}
        for index in sorted(self.done()):
            meta = self._open(index).schema.metadata or {}
            for k, v in json.loads(meta.get(b"stats", b"{}")).items():
                total[k] = total.get(k, 0) + int(v)
        return total

    def cells(self) -> int:
        """Cells held by the finished chunks."""
        total = 0
        for index in sorted(self.done()):
            f = self._open(index)
            total += sum(f.get_batch(b).num_rows for b in range(f.num_record_batches))
        return total

    def _open(self, index: int) -> pa.ipc.RecordBatchFileReader:
        return pa.ipc.open_file(pa.memory_map(str(self.path(index))))

    def reader(self) -> pa.RecordBatchReader:
        """Every finished chunk's cells in chunk order, as long-form QUANTILE_SCHEMA batches."""
        from proforma.models.chronos.forecast import long_form

        def batches() -> Iterator[pa.RecordBatch]:
            for index in sorted(self.done()):
                f = self._open(index)
                for b in range(f.num_record_batches):
                    batch = f.get_batch(b)
                    if batch.num_rows:
                        yield from long_form(batch).to_batches()

        return pa.RecordBatchReader.from_batches(QUANTILE_SCHEMA, batches())
