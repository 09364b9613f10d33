"""The oracle's origins: test firm-quarters that the build will keep (non-financial,
inside a CCM link window, at least four quarters of history, one future quarter left).
The simulation draws them up front; the oracle (proforma.app.sources.synthetic.oracle) simulates
futures from them."""

from __future__ import annotations

import numpy as np

from proforma.app.sources.synthetic.config import TEST_START_YEAR, SyntheticConfig
from proforma.app.sources.synthetic.firms import Traits
from proforma.app.sources.synthetic.reporting import in_link_window


def sample_origins(
    cfg: SyntheticConfig, tr: Traits, links: dict[str, np.ndarray], rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """(firm index, origin quarter) of cfg.oracle_origins test origins, sorted, no repeats."""
    lo = np.maximum(tr["entry_q"] + 3, max(TEST_START_YEAR * 4, cfg.q_start))
    hi = np.minimum(tr["exit_q"], cfg.q_end - 1)
    financial = (tr["sic"] >= 6000) & (tr["sic"] <= 6999) & ~tr["sic_missing"]
    count = np.where(financial, 0, np.maximum(hi - lo + 1, 0))
    firm = np.repeat(np.arange(count.size), count)
    q = lo[firm] + (np.arange(firm.size) - np.repeat(np.cumsum(count) - count, count))
    keep = in_link_window(links, firm, q)
    firm, q = firm[keep], q[keep]
    k = min(cfg.oracle_origins, firm.size)
    pick = (
        np.sort(rng.choice(firm.size, size=k, replace=False)) if k else np.array([], dtype=np.int64)
    )
    return firm[pick].astype(np.int64), q[pick].astype(np.int64)


def frontier_quarters(cfg: SyntheticConfig) -> list[int]:
    """Quarters of a grown panel's frontier origins: the design window's last quarter and
    the grown panel's last (where rounds open, docs/rounds.md)."""
    assert cfg.through is not None
    return sorted({cfg.q_end, cfg.through})


def frontier_origins(
    cfg: SyntheticConfig, tr: Traits, links: dict[str, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """(firm index, quarter) of the oracle origins at each frontier quarter: up to
    cfg.oracle_origins non-financial firms that file then with three quarters behind them,
    inside a link window or under a link still open. Each quarter draws from its own stream
    ([seed, 43, quarter]), so a panel grown further keeps the earlier frontiers' origins."""
    exit_q = np.where(tr["exit_q"] >= cfg.q_end, tr["life_end_q"], tr["exit_q"])
    financial = (tr["sic"] >= 6000) & (tr["sic"] <= 6999) & ~tr["sic_missing"]
    firms, quarters = [], []
    for q in frontier_quarters(cfg):
        idx = np.flatnonzero(~financial & (tr["entry_q"] + 3 <= q) & (exit_q >= q))
        qs = np.full(idx.size, q)
        keep = in_link_window(links, idx, qs) | links["open"][idx]
        idx = idx[keep]
        k = min(cfg.oracle_origins, idx.size)
        rng = np.random.default_rng([cfg.seed, 43, q])
        pick = np.sort(rng.choice(idx.size, size=k, replace=False)) if k else idx[:0]
        firms.append(idx[pick])
        quarters.append(np.full(k, q))
    return (
        np.concatenate(firms).astype(np.int64),
        np.concatenate(quarters).astype(np.int64),
    )
