"""The history: all firms simulated together, quarter by quarter, straight to Arrow.

`Simulation` draws the static parts once (traits, links, the macro path, the oracle
origin sample); `history()` runs the quarterly loop as a generator of raw.fundq record
batches and captures the true state at every oracle origin on the way. Every run of
`history()` restarts its random streams, so a panel is a pure function of its config.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from proforma.app.sources.synthetic import economics as econ
from proforma.app.sources.synthetic.config import SyntheticConfig
from proforma.app.sources.synthetic.firms import draw_firms, gvkeys, take
from proforma.app.sources.synthetic.origins import frontier_origins, sample_origins
from proforma.app.sources.synthetic.reporting import Reporter, draw_links

#: quarters simulated, unreported, before a firm's first filing
BURN_IN = 4

Observer = Callable[[int, econ.State, dict[str, np.ndarray], Mapping[str, Any]], None]


class Simulation:
    """One synthetic panel: static draws at construction, the history on demand."""

    def __init__(self, cfg: SyntheticConfig):
        cfg.check()
        self.cfg = cfg
        seeds = np.random.SeedSequence(cfg.seed).spawn(6)
        self._seeds = dict(
            zip(("traits", "macro", "shocks", "report", "links", "oracle"), seeds, strict=True)
        )
        self.traits = draw_firms(cfg, self._rng("traits"))
        self.n = self.traits["sic"].size
        self.gvkeys = gvkeys(self.n)
        self.links = draw_links(cfg, self.traits, self._rng("links"))
        self.q0 = cfg.q_start - BURN_IN
        # The common macro factor for every quarter from q0 - 2 on (index q - q0 + 2).
        rng = self._rng("macro")
        m = np.zeros(cfg.q_last - self.q0 + 3)
        for i in range(2, m.size):
            m[i] = econ.macro_step(m[i - 1 : i], m[i - 2 : i - 1], rng)[0]
        self._macro = m
        self.origin_firm, self.origin_q = sample_origins(
            cfg, self.traits, self.links, self._rng("oracle")
        )
        #: origins sampled from the test split; a grown panel appends its frontier origins
        #: (every quarter from the design window's end on) after them
        self.n_sampled = self.origin_q.size
        if cfg.through is not None:
            ff, fq = frontier_origins(cfg, self.traits, self.links)
            self.origin_firm = np.concatenate([self.origin_firm, ff])
            self.origin_q = np.concatenate([self.origin_q, fq])
        # Firms alive at the design window's end live on in a grown panel (their uncensored
        # life); every draw before the end is the same, so is the history through it.
        self.run_traits = self.traits
        if cfg.through is not None:
            grown = cfg.through
            self.run_traits = dict(self.traits)
            exit_q = self.traits["exit_q"]
            self.run_traits["exit_q"] = np.where(
                exit_q >= cfg.q_end, np.minimum(self.traits["life_end_q"], grown), exit_q
            )
        self.captured: dict[str, econ.State] | None = None
        self.rows = 0
        self.fyr_changes = 0

    def _rng(self, name: str) -> np.random.Generator:
        return np.random.Generator(np.random.PCG64(self._seeds[name]))

    def oracle_rng(self) -> np.random.Generator:
        return np.random.Generator(np.random.PCG64(self._seeds["oracle"].spawn(1)[0]))

    def macro(self, q: int | np.ndarray) -> np.ndarray:
        """The macro factor in quarter q (q >= q0 - 2)."""
        return self._macro[np.asarray(q) - self.q0 + 2]

    def history(
        self, observer: Observer | None = None, progress: Callable[[int], None] | None = None
    ) -> Iterator[pa.RecordBatch]:
        """raw.fundq batches, one per calendar quarter; captures oracle origin states."""
        cfg, tr, n = self.cfg, self.run_traits, self.n
        rng = self._rng("shocks")
        reporter = Reporter(cfg, tr, self.gvkeys, self._rng("report"))
        st = econ.init_state(tr, rng)
        init_q = np.maximum(tr["entry_q"] - BURN_IN, self.q0)
        order = np.argsort(self.origin_q, kind="stable")
        cap_state: dict[str, np.ndarray] = {k: np.empty(self.origin_q.size) for k in st}
        cap_values: dict[str, np.ndarray] = {}
        for q in range(self.q0, cfg.q_last + 1):
            fresh = np.flatnonzero((init_q == q) & (q > self.q0))
            if fresh.size:  # entrants start from a fresh opening balance sheet
                new = econ.init_state(take(tr, fresh), rng)
                for k, v in new.items():
                    st[k][fresh] = v
            rng_state = rng.bit_generator.state if observer else {}
            m = np.full(n, self.macro(q))
            values = econ.step(tr, st, np.full(n, q % 4), q // 4, m, rng)
            hit = order[
                np.searchsorted(self.origin_q[order], q, "left") : np.searchsorted(
                    self.origin_q[order], q, "right"
                )
            ]
            if hit.size:
                firms = self.origin_firm[hit]
                for k, v in st.items():
                    cap_state[k][hit] = v[firms]
                for k, v in values.items():
                    cap_values.setdefault(k, np.empty(self.origin_q.size))[hit] = v[firms]
            if observer is not None:
                observer(q, st, values, rng_state)
            if q < cfg.q_start:
                reporter.accumulate(q, values)
                continue
            batch = reporter.quarter(q, values)
            if progress is not None:
                progress(q)
            if batch is not None:
                yield batch
        self.rows = reporter.rows
        self.fyr_changes = reporter.fyr_changes
        self.captured = {"state": cap_state, "values": cap_values}

    def ensure_captured(self) -> dict[str, econ.State]:
        """The origin states, running the history (output discarded) if not yet run."""
        if self.captured is None:
            for _ in self.history():
                pass
        assert self.captured is not None
        return self.captured
