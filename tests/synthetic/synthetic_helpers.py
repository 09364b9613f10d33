"""Tiny synthetic panels shared by the tests of tests/synthetic (imported by name)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from proforma.app.sources.synthetic import Simulation, SyntheticConfig


def tiny_config(**overrides) -> SyntheticConfig:
    values = {
        "firms": 60,
        "start": 1998,
        "end": 2013,
        "seed": 5,
        "oracle_origins": 6,
        "oracle_paths": 4,
        "oracle_horizon": 6,
    }
    values.update(overrides)
    return SyntheticConfig.for_scale("demo", **values)


class Recorded:
    """A simulation run with every quarter's true values and states kept."""

    def __init__(self, cfg: SyntheticConfig):
        self.sim = Simulation(cfg)
        self.values: dict[int, dict[str, np.ndarray]] = {}
        self.states: dict[int, dict[str, np.ndarray]] = {}
        self.rng_states: dict[int, dict] = {}

        def observer(q, st, values, rng_state):
            self.values[q] = {k: v.copy() for k, v in values.items()}
            self.states[q] = {k: v.copy() for k, v in st.items()}
            self.rng_states[q] = rng_state

        self.fundq = pa.Table.from_batches(list(self.sim.history(observer=observer)))

    def firm_quarter(self) -> tuple[np.ndarray, np.ndarray]:
        """(firm index, calendar quarter) of every raw row."""
        firm = np.array([int(g) - 1000 for g in self.fundq["gvkey"].to_pylist()])
        dates = self.fundq["datadate"].to_numpy().astype("datetime64[M]").astype(np.int64)
        q = (dates // 12 + 1970) * 4 + (dates % 12) // 3
        return firm, q
