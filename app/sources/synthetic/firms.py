"""Static firm traits: industry (SIC), economics targets, life span, fiscal calendar, CCM links.

Everything is drawn once per panel from the seed, as flat numpy arrays over firms, so the
same traits index the history simulation (one lane per firm) and the oracle (one lane
per origin and path, gathered with `take`).
"""

from __future__ import annotations

import numpy as np

from proforma.app.sources.synthetic.config import SyntheticConfig

Traits = dict[str, np.ndarray]


# Sectors: SIC ranges, share of firms, and economic centre values.
#   gm gross margin, sga variable SG&A ratio, fix fixed SG&A (share of trend revenue),
#   rdp share of firms doing R&D, rd R&D/revenue, inv share holding inventory,
#   dio inventory days, ppe net PP&E / annual revenue, lev target debt/assets,
#   g quarterly trend growth, amp seasonal amplitude (log), peak seasonal peak quarter,
#   dr deferred revenue / quarterly revenue, cyc macro sensitivity.
def _sector(**values: object) -> dict:
    return values


SECTORS: list[dict] = [
    _sector(
        name="energy",
        sic=[(1000, 1499), (2900, 2999)],
        w=0.07,
        gm=0.34,
        sga=0.05,
        fix=0.03,
        rdp=0.25,
        rd=0.01,
        inv=0.9,
        dio=40,
        ppe=1.4,
        lev=0.32,
        g=0.008,
        amp=0.04,
        peak=0,
        dr=0.01,
        cyc=1.8,
    ),
    _sector(
        name="construction",
        sic=[(1500, 1799)],
        w=0.025,
        gm=0.18,
        sga=0.06,
        fix=0.03,
        rdp=0.1,
        rd=0.0,
        inv=0.75,
        dio=50,
        ppe=0.15,
        lev=0.28,
        g=0.009,
        amp=0.14,
        peak=2,
        dr=0.03,
        cyc=1.6,
    ),
    _sector(
        name="consumer_mfg",
        sic=[(2000, 2799), (3000, 3199)],
        w=0.11,
        gm=0.30,
        sga=0.12,
        fix=0.04,
        rdp=0.45,
        rd=0.015,
        inv=0.98,
        dio=60,
        ppe=0.45,
        lev=0.30,
        g=0.008,
        amp=0.06,
        peak=3,
        dr=0.01,
        cyc=0.8,
    ),
    _sector(
        name="chem_pharma",
        sic=[(2800, 2899)],
        w=0.08,
        gm=0.55,
        sga=0.20,
        fix=0.08,
        rdp=0.85,
        rd=0.12,
        inv=0.95,
        dio=90,
        ppe=0.40,
        lev=0.18,
        g=0.014,
        amp=0.02,
        peak=3,
        dr=0.02,
        cyc=0.5,
    ),
    _sector(
        name="industrial",
        sic=[(3200, 3569), (3580, 3599), (3700, 3999)],
        w=0.12,
        gm=0.28,
        sga=0.10,
        fix=0.04,
        rdp=0.75,
        rd=0.03,
        inv=0.98,
        dio=80,
        ppe=0.35,
        lev=0.28,
        g=0.009,
        amp=0.04,
        peak=1,
        dr=0.02,
        cyc=1.3,
    ),
    _sector(
        name="tech_hw",
        sic=[(3570, 3579), (3600, 3699)],
        w=0.09,
        gm=0.40,
        sga=0.14,
        fix=0.06,
        rdp=0.97,
        rd=0.09,
        inv=0.97,
        dio=70,
        ppe=0.25,
        lev=0.12,
        g=0.016,
        amp=0.05,
        peak=3,
        dr=0.04,
        cyc=1.4,
    ),
    _sector(
        name="transport",
        sic=[(4000, 4799)],
        w=0.04,
        gm=0.26,
        sga=0.05,
        fix=0.04,
        rdp=0.1,
        rd=0.0,
        inv=0.5,
        dio=15,
        ppe=0.9,
        lev=0.40,
        g=0.008,
        amp=0.05,
        peak=2,
        dr=0.02,
        cyc=1.2,
    ),
    _sector(
        name="telecom_util",
        sic=[(4800, 4999)],
        w=0.05,
        gm=0.48,
        sga=0.09,
        fix=0.05,
        rdp=0.2,
        rd=0.005,
        inv=0.6,
        dio=25,
        ppe=1.8,
        lev=0.45,
        g=0.007,
        amp=0.07,
        peak=0,
        dr=0.03,
        cyc=0.4,
    ),
    _sector(
        name="wholesale",
        sic=[(5000, 5199)],
        w=0.05,
        gm=0.20,
        sga=0.12,
        fix=0.03,
        rdp=0.2,
        rd=0.003,
        inv=0.99,
        dio=75,
        ppe=0.08,
        lev=0.30,
        g=0.008,
        amp=0.03,
        peak=3,
        dr=0.01,
        cyc=1.0,
    ),
    _sector(
        name="retail",
        sic=[(5200, 5999)],
        w=0.07,
        gm=0.32,
        sga=0.20,
        fix=0.05,
        rdp=0.1,
        rd=0.0,
        inv=0.99,
        dio=85,
        ppe=0.30,
        lev=0.30,
        g=0.010,
        amp=0.16,
        peak=3,
        dr=0.01,
        cyc=1.0,
    ),
    _sector(
        name="financial",
        sic=[(6000, 6999)],
        w=0.11,
        gm=0.60,
        sga=0.30,
        fix=0.08,
        rdp=0.0,
        rd=0.0,
        inv=0.02,
        dio=5,
        ppe=0.06,
        lev=0.60,
        g=0.009,
        amp=0.0,
        peak=0,
        dr=0.01,
        cyc=1.0,
    ),
    _sector(
        name="business_services",
        sic=[(7000, 7399)],
        w=0.10,
        gm=0.55,
        sga=0.28,
        fix=0.10,
        rdp=0.75,
        rd=0.10,
        inv=0.30,
        dio=20,
        ppe=0.15,
        lev=0.14,
        g=0.016,
        amp=0.04,
        peak=3,
        dr=0.12,
        cyc=1.1,
    ),
    _sector(
        name="health_services",
        sic=[(8000, 8099)],
        w=0.03,
        gm=0.30,
        sga=0.14,
        fix=0.04,
        rdp=0.35,
        rd=0.01,
        inv=0.45,
        dio=15,
        ppe=0.35,
        lev=0.35,
        g=0.012,
        amp=0.02,
        peak=0,
        dr=0.02,
        cyc=0.4,
    ),
    _sector(
        name="other",
        sic=[(100, 999), (7400, 7999), (8100, 8999), (9000, 9999)],
        w=0.035,
        gm=0.30,
        sga=0.18,
        fix=0.05,
        rdp=0.3,
        rd=0.01,
        inv=0.50,
        dio=40,
        ppe=0.30,
        lev=0.25,
        g=0.009,
        amp=0.06,
        peak=2,
        dr=0.03,
        cyc=1.0,
    ),
]
SECTOR_KEYS = ("gm", "sga", "fix", "rdp", "rd", "inv", "dio", "ppe", "lev", "g", "amp", "cyc", "dr")

FYR_CHOICES = np.array([12, 6, 9, 3, 1, 2, 4, 5, 7, 8, 10, 11])
FYR_WEIGHTS = np.array([0.64, 0.07, 0.07, 0.06, 0.03, 0.02, 0.02, 0.01, 0.02, 0.02, 0.02, 0.02])


def take(tr: Traits, idx: np.ndarray) -> Traits:
    """Traits of the lanes `idx` (firm indexes; repeats allowed)."""
    return {k: v[idx] for k, v in tr.items()}


def gvkeys(n: int) -> np.ndarray:
    """6-character zero-padded gvkey strings, firm i -> 001000 + i."""
    return np.array([f"{1000 + i:06d}" for i in range(n)], dtype=object)


def draw_firms(cfg: SyntheticConfig, rng: np.random.Generator) -> Traits:
    """All static traits of cfg.firms firms (the draws in a fixed order: each step below
    takes its draws from `rng` after the previous one's)."""
    n = cfg.firms
    sector, sic = _industries(n, rng)
    major = sic // 100  # 2-digit SIC major group: industry of the dynamics

    # Industry (major group) parameters: sector centre plus a per-group deviation.
    ind_rng = np.random.default_rng([cfg.seed, 7])
    ind_dev = {k: ind_rng.normal(0.0, 1.0, 100) for k in ("gm", "g", "k", "ppe", "phase")}
    sec = {k: np.array([s[k] for s in SECTORS])[sector] for k in SECTOR_KEYS}
    peak = np.array([s["peak"] for s in SECTORS])[sector]

    tr: Traits = {"sector": sector, "sic": sic, "major": major}
    _operations(tr, n, rng, sec, ind_dev, major)
    tr["season"] = _seasonality(sec, ind_dev, major, peak)
    _balance_sheet(tr, n, rng, sec)
    _life_span(tr, cfg, n, rng)
    return tr


def _industries(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(sector, SIC code) of each firm: sectors by weight, a SIC range of the sector by
    its width, a code within it."""
    sec_w = np.array([s["w"] for s in SECTORS])
    sector = rng.choice(len(SECTORS), size=n, p=sec_w / sec_w.sum())
    sic = np.empty(n, dtype=np.int64)
    for k, s in enumerate(SECTORS):
        idx = np.flatnonzero(sector == k)
        lo = np.array([r[0] for r in s["sic"]])
        hi = np.array([r[1] for r in s["sic"]])
        which = rng.choice(len(lo), size=idx.size, p=(hi - lo + 1) / (hi - lo + 1).sum())
        sic[idx] = lo[which] + (rng.random(idx.size) * (hi[which] - lo[which] + 1)).astype(np.int64)
    return sector, sic


def _operations(
    tr: Traits,
    n: int,
    rng: np.random.Generator,
    sec: dict[str, np.ndarray],
    ind_dev: dict[str, np.ndarray],
    major: np.ndarray,
) -> None:
    """Margins, cost ratios, working capital, capital intensity, leverage, growth and
    their reversion speeds and volatilities."""
    tr["ind_gm"] = np.clip(sec["gm"] + 0.04 * ind_dev["gm"][major], 0.05, 0.9)
    tr["gm_bar"] = np.clip(tr["ind_gm"] + 0.06 * rng.standard_normal(n), 0.03, 0.92)
    tr["sga_bar"] = np.clip(sec["sga"] * np.exp(0.3 * rng.standard_normal(n)), 0.01, 0.8)
    tr["fix"] = np.clip(sec["fix"] * np.exp(0.4 * rng.standard_normal(n)), 0.0, 0.4)
    has_rd = rng.random(n) < sec["rdp"]
    tr["has_rd"] = has_rd
    tr["rd"] = has_rd * sec["rd"] * np.exp(0.6 * rng.standard_normal(n))
    tr["has_inv"] = rng.random(n) < sec["inv"]
    # most firms without inventory still fill the field with 0; the rest leave it empty
    tr["inv_field"] = tr["has_inv"] | (rng.random(n) < 0.75)
    tr["dio_bar"] = sec["dio"] * np.exp(0.3 * rng.standard_normal(n))
    tr["dso_bar"] = 50 * np.exp(0.3 * rng.standard_normal(n))
    tr["dpo_bar"] = 35 * np.exp(0.3 * rng.standard_normal(n))
    tr["ppe_bar"] = sec["ppe"] * np.exp(0.1 * ind_dev["ppe"][major] + 0.4 * rng.standard_normal(n))
    tr["lev_bar"] = np.clip(
        sec["lev"] + 0.08 * rng.standard_normal(n) + 0.05 * (tr["ppe_bar"] > 0.8), 0.0, 0.8
    )
    tr["g_bar"] = sec["g"] + 0.002 * ind_dev["g"][major] + 0.004 * rng.standard_normal(n)
    tr["cyc"] = sec["cyc"] * np.exp(0.3 * rng.standard_normal(n))
    # Industry-wide reversion speeds: competitive industries revert margins faster.
    tr["k_gm"] = 0.10 * np.exp(0.3 * ind_dev["k"][major])
    tr["k_g"] = 0.25 * np.exp(0.2 * ind_dev["k"][major] + 0.2 * rng.standard_normal(n))
    tr["k_sga"] = 0.12 * np.exp(0.2 * rng.standard_normal(n))
    vol = np.exp(0.35 * rng.standard_normal(n))  # firm volatility multiplier
    tr["sig_g"] = 0.012 * vol
    tr["sig_s"] = 0.02 * vol
    tr["sig_gm"] = 0.008 * vol
    tr["sig_sga"] = 0.006 * vol
    tr["sig_e"] = 0.05 * vol


def _seasonality(
    sec: dict[str, np.ndarray], ind_dev: dict[str, np.ndarray], major: np.ndarray, peak: np.ndarray
) -> np.ndarray:
    """Log factors per calendar quarter; peak quarter shifted per industry."""
    amp = sec["amp"] * np.exp(0.2 * ind_dev["phase"][major])
    qs = np.arange(4)
    shape = np.cos(2 * np.pi * (qs[None, :] - peak[:, None]) / 4) + 0.3 * np.cos(
        np.pi * (qs[None, :] - peak[:, None])
    )
    shape -= shape.mean(axis=1, keepdims=True)
    return amp[:, None] * shape


def _balance_sheet(
    tr: Traits, n: int, rng: np.random.Generator, sec: dict[str, np.ndarray]
) -> None:
    """Balance-sheet ratios and policies (payout, leverage, debt, taxes, investment) and
    the size at entry."""
    tr["aco_r"] = 0.05 * np.exp(0.4 * rng.standard_normal(n))
    tr["lco_r"] = 0.15 * np.exp(0.4 * rng.standard_normal(n))
    has_dr = rng.random(n) < np.clip(sec["dr"] * 6, 0, 0.8)
    tr["dr_r"] = has_dr * sec["dr"] * 4 * np.exp(0.5 * rng.standard_normal(n))
    tr["drlt_r"] = has_dr * 0.3 * tr["dr_r"] * np.exp(0.3 * rng.standard_normal(n))
    tr["lo_r"] = 0.06 * np.exp(0.5 * rng.standard_normal(n))
    tr["ao_r"] = 0.05 * np.exp(0.5 * rng.standard_normal(n))
    tr["inv_r"] = 0.04 * np.exp(0.8 * rng.standard_normal(n)) * (rng.random(n) < 0.6)
    tr["sti_r"] = 0.3 * rng.random(n) * (rng.random(n) < 0.5)
    tr["dt_r"] = 0.08 * np.exp(0.4 * rng.standard_normal(n))
    tr["cash_bar"] = np.clip(0.05 + 1.2 * tr["rd"] + 0.04 * rng.standard_normal(n), 0.02, 0.6)
    tr["payout"] = (rng.random(n) < 0.45) * np.clip(0.35 + 0.12 * rng.standard_normal(n), 0.05, 0.9)
    tr["bb_p"] = 0.15 * (tr["payout"] > 0) + 0.03
    tr["k_lev"] = 0.08 * np.exp(0.3 * rng.standard_normal(n))
    tr["cur_share"] = np.clip(0.15 * np.exp(0.5 * rng.standard_normal(n)), 0.01, 0.9)
    tr["mat"] = 0.03 * np.exp(0.3 * rng.standard_normal(n))
    tr["r_debt"] = 0.015 * np.exp(0.25 * rng.standard_normal(n))
    tr["tax"] = np.clip(0.33 + 0.05 * rng.standard_normal(n), 0.1, 0.5)
    tr["nci"] = (rng.random(n) < 0.25) * 0.05 * rng.random(n)
    tr["has_pref"] = rng.random(n) < 0.12
    tr["fx"] = (rng.random(n) < 0.45) * np.exp(0.5 * rng.standard_normal(n))
    tr["stk"] = 0.04 * np.exp(0.6 * rng.standard_normal(n)) * (1 + 2 * tr["has_rd"])
    tr["dep"] = 0.03 * np.exp(0.25 * rng.standard_normal(n))
    tr["amort"] = 0.025 * np.exp(0.3 * rng.standard_normal(n))
    tr["acq_p"] = 0.012 * np.exp(0.8 * rng.standard_normal(n))
    tr["ev_sales"] = 1.2 * np.exp(0.4 * rng.standard_normal(n))
    tr["gw0"] = (rng.random(n) < 0.4) * 0.15 * np.exp(0.7 * rng.standard_normal(n))
    # Size: log annual revenue in $ millions at entry.
    tr["s0"] = 4.6 + 1.9 * rng.standard_normal(n)


def _life_span(tr: Traits, cfg: SyntheticConfig, n: int, rng: np.random.Generator) -> None:
    """Entry and exit quarters, fiscal year ends, missing SIC and CCM links."""
    # Life span. 22% of firms exist when the panel starts; entries peak in the 1980s-90s.
    q0, q1 = cfg.q_start, cfg.q_end
    quarters = np.arange(q0, q1 + 1)
    years = quarters // 4
    w = (
        1
        + 0.8 * np.exp(-(((years - 1996) / 6.0) ** 2))
        + 0.4 * np.exp(-(((years - 1984) / 4.0) ** 2))
    )
    w = np.where(years >= 2018, 0.5, w)
    entry = quarters[rng.choice(quarters.size, size=n, p=w / w.sum())]
    entry = np.where(rng.random(n) < 0.22, q0, entry)
    mean_life = 50 * np.exp(0.25 * (tr["s0"] - 4.6) / 1.9 + 0.3 * rng.standard_normal(n))
    life = 1 + rng.geometric(1.0 / np.maximum(mean_life, 4.0))
    tr["entry_q"] = entry
    tr["exit_q"] = np.minimum(entry + life - 1, q1)
    # the uncensored last quarter (no draw): a panel grown past q1 lets firms live on
    tr["life_end_q"] = entry + life - 1
    if cfg.single_quarter_share > 0:
        # its own stream, so every other draw (and the default panel) stays as it is
        once = np.random.default_rng([cfg.seed, 29]).random(n) < cfg.single_quarter_share
        tr["exit_q"] = np.where(once, entry, tr["exit_q"])
    tr["fyr"] = rng.choice(FYR_CHOICES, size=n, p=FYR_WEIGHTS / FYR_WEIGHTS.sum())
    # Missing SIC (no co_industry record at all) and CCM links.
    tr["sic_missing"] = rng.random(n) < 0.05
    tr["linked"] = rng.random(n) < 0.62
