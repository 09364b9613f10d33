"""`SyntheticSource`: the synthetic panel as a Source (raw tables + oracle extras)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from proforma.app.sources.base import RawTables, Source
from proforma.app.sources.synthetic.config import SyntheticConfig
from proforma.app.sources.synthetic.oracle import PATHS_SCHEMA, origins_table, path_batches
from proforma.app.sources.synthetic.reporting import (
    FUNDQ_SCHEMA,
    ccm_link_table,
    company_industry_table,
)
from proforma.app.sources.synthetic.simulation import Simulation

VINTAGE = "synthetic-v1"


class SyntheticSource(Source):
    """A Compustat-shaped synthetic panel with a known oracle; deterministic for a config."""

    name = "synthetic"

    def __init__(
        self, cfg: SyntheticConfig | None = None, progress: Callable[[int], None] | None = None
    ):
        self.cfg = cfg or SyntheticConfig.for_scale("demo")
        self.cfg.check()
        self.progress = progress
        self.simulation: Simulation | None = None

    def parameters(self) -> dict[str, Any]:
        return {**self.cfg.as_dict(), "generator": VINTAGE}

    def tables(self) -> RawTables:
        sim = self.simulation = Simulation(self.cfg)
        rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([self.cfg.seed, 11])))
        meta = pa.table({"parameters": [json.dumps(self.parameters())]})
        return RawTables(
            fundq=pa.RecordBatchReader.from_batches(FUNDQ_SCHEMA, self._fundq(sim)),
            company_industry=company_industry_table(self.cfg, sim.traits, sim.gvkeys, rng),
            ccm_link=ccm_link_table(self.cfg, sim.traits, sim.links, sim.gvkeys),
            vintage=VINTAGE,
            extras={
                # replace: these tables describe only the current synthetic ingest
                "raw.oracle_meta": ("replace", meta),
                "raw.oracle_origins": ("replace", _Lazy(lambda: origins_table(sim))),
                "raw.oracle_paths": (
                    "replace",
                    pa.RecordBatchReader.from_batches(PATHS_SCHEMA, path_batches(sim)),
                ),
            },
        )

    def _fundq(self, sim: Simulation) -> Iterator[pa.RecordBatch]:
        yield from sim.history(progress=self.progress)


class _Lazy:
    """An iterable of batches computed only when consumed (after the history ran)."""

    def __init__(self, make: Callable[[], pa.Table]):
        self.make = make

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        table = self.make()
        batches = table.to_batches()
        # an empty table has no batches; its writer still needs one (no oracle origins)
        yield from batches or [pa.RecordBatch.from_pylist([], schema=table.schema)]
