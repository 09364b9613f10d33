"""Latent firm states and the quarterly step that closes the books.

One call of `step` advances every lane (a firm in the history, or an origin x path in
the oracle) by one calendar quarter: latent states move with conditional mean
reversion, a macro factor and heavy-tailed shocks; then the income statement, the
investing and financing decisions and the balance sheet follow, with cash as the
balancing item and operating cash flow as the change in cash not explained by the
other two sections. Every one of the 26 identities holds by construction.
"""

from __future__ import annotations

import numpy as np

from proforma.app.sources.synthetic.firms import Traits

State = dict[str, np.ndarray]

STATE_KEYS = (
    # latent economics
    "s",
    "g",
    "gm",
    "sga",
    "ppe_i",
    "dso",
    "dio",
    "dpo",
    "e_rev",
    "div",
    "ni4",
    # balances carried between quarters
    "ppegt",
    "dpact",
    "gdwl",
    "intano",
    "invlt",
    "aoo",
    "sti",
    "cash",
    "debt",
    "dlc",
    "dltt",
    "cstk",
    "caps",
    "re",
    "tstk",
    "pstk",
    "mib",
    "acominc",
    "txditc",
    "at",
)


def take(st: State, idx: np.ndarray) -> State:
    return {k: v[idx].copy() for k, v in st.items()}


def copy(st: State) -> State:
    return {k: v.copy() for k, v in st.items()}


def _t(rng: np.random.Generator, df: float, n: int) -> np.ndarray:
    """Student-t draws scaled to unit variance (heavy tails)."""
    return rng.standard_t(df, n) / np.sqrt(df / (df - 2.0))


def macro_step(m: np.ndarray, m1: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The common business cycle: AR(2) with t(5) innovations (stationary s.d. about 0.9)."""
    return 1.3 * m - 0.45 * m1 + 0.35 * _t(rng, 5.0, m.size)


def init_state(tr: Traits, rng: np.random.Generator) -> State:
    """A consistent opening balance sheet at steady-state ratios for every lane."""
    n = tr["s0"].size
    s = tr["s0"].copy()
    rev4 = np.exp(s)  # annual revenue
    st: State = {
        "s": s,
        "g": tr["g_bar"] + 0.01 * rng.standard_normal(n),
        "gm": np.clip(tr["gm_bar"] + 0.03 * rng.standard_normal(n), 0.02, 0.95),
        "sga": tr["sga_bar"].copy(),
        "ppe_i": tr["ppe_bar"].copy(),
        "dso": tr["dso_bar"].copy(),
        "dio": tr["dio_bar"].copy(),
        "dpo": tr["dpo_bar"].copy(),
        "e_rev": 0.05 * rng.standard_normal(n),
    }
    ppent = st["ppe_i"] * rev4
    st["dpact"] = 0.6 * ppent
    st["ppegt"] = ppent + st["dpact"]
    st["gdwl"] = tr["gw0"] * rev4
    st["intano"] = 0.3 * st["gdwl"]
    st["aoo"] = tr["ao_r"] * rev4
    a_op = rev4 * (0.2 + 0.15 * tr["has_inv"]) + ppent + st["gdwl"] + st["intano"] + st["aoo"]
    st["invlt"] = tr["inv_r"] * a_op
    st["sti"] = tr["sti_r"] * tr["cash_bar"] * a_op
    a_nc = a_op + st["invlt"] + st["sti"]
    st["cash"] = tr["cash_bar"] * a_nc
    at = a_nc + st["cash"]
    st["debt"] = tr["lev_bar"] * at
    st["dlc"] = tr["cur_share"] * st["debt"]
    st["dltt"] = st["debt"] - st["dlc"]
    st["txditc"] = tr["dt_r"] * ppent
    st["mib"] = (tr["nci"] > 0) * 0.03 * at
    st["pstk"] = tr["has_pref"] * 0.03 * at
    liab = st["debt"] + st["txditc"] + rev4 * (0.1 + tr["lo_r"])
    seq = at - liab - st["mib"]
    ceq = seq - st["pstk"]
    st["cstk"] = 0.02 * at
    st["tstk"] = (tr["payout"] > 0) * 0.02 * at
    st["re"] = 0.6 * ceq
    st["caps"] = ceq - st["cstk"] - st["re"] + st["tstk"]
    st["acominc"] = np.zeros(n)
    st["at"] = at
    margin = st["gm"] - tr["sga_bar"] - tr["fix"] - tr["rd"]
    st["ni4"] = 0.5 * margin * rev4 / 4
    st["div"] = tr["payout"] * np.maximum(st["ni4"], 0)
    return st


def _sig(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def step(
    tr: Traits,
    st: State,
    cal_q: np.ndarray,
    year: np.ndarray | int,
    m: np.ndarray,
    rng: np.random.Generator,
) -> dict[str, np.ndarray]:
    """Advance every lane one quarter (mutates `st`); returns the 72 quarterly raw items.

    Lanes not yet alive (before a firm's entry) may overflow harmlessly: silenced here,
    per call, because the callers are generators resumed in other threads.
    """
    with np.errstate(all="ignore"):
        return _step(tr, st, cal_q, year, m, rng)


def _step(tr, st, cal_q, year, m, rng) -> dict[str, np.ndarray]:
    """The quarter in stages, in the order the books close. Each stage draws its shocks
    in the order of the one function it was cut from (bit-identical output: a generated
    raw.fundq hashes the same)."""
    v: dict[str, np.ndarray] = {}
    v.update(_latent(tr, st, m, rng))
    v.update(_income(tr, st, m, cal_q, rng, v))
    v.update(_operating(tr, v))
    v.update(_investing(tr, st, rng, v))
    v.update(_payout(tr, st, year, rng, v))
    v.update(_balance(tr, st, rng, v))
    # acquisitions raise the revenue trend from next quarter on
    v["s"] = v["s"] + np.log1p(v["acq_size"])
    st.update({k: v[k] for k in STATE_KEYS})
    return {item: v[name] for item, name in RAW_ITEMS.items()}


def _latent(
    tr: Traits, st: State, m: np.ndarray, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """Latent states: conditional mean reversion."""
    n = st["s"].size
    z = rng.standard_normal
    at_prev = np.maximum(st["at"], 1e-6)
    lev_now = st["debt"] / at_prev
    cash_ratio = st["cash"] / at_prev
    small = _sig(-(st["s"] - 4.6))  # ~1 for small firms, ~0 for large
    # Financially constrained: leverage well above target and little cash.
    constrained = _sig((lev_now - tr["lev_bar"] - 0.15) / 0.05) * _sig((0.06 - cash_ratio) / 0.02)
    # Growth reverts faster for small firms; margins above target sustain growth (moats),
    # constraints hold it back.
    g_target = (
        tr["g_bar"] + 0.012 * tr["cyc"] * m + 0.08 * (st["gm"] - tr["gm_bar"]) - 0.01 * constrained
    )
    k_g = np.clip(tr["k_g"] * (0.5 + 1.0 * small), 0.02, 0.9)
    g = st["g"] + k_g * (g_target - st["g"]) + tr["sig_g"] * _t(rng, 4.0, n)
    # Gross margin: asymmetric reversion. Above target (moat) it decays slowly, below
    # target competition or restructuring closes the gap fast; large firms move slower.
    gap = tr["gm_bar"] - st["gm"]
    k_gm = tr["k_gm"] * (0.3 + 1.6 * _sig(gap / 0.03)) * (0.6 + 0.8 * small)
    gm = st["gm"] + k_gm * gap + 0.006 * tr["cyc"] * m + tr["sig_gm"] * _t(rng, 4.0, n)
    gm = np.clip(gm, -0.6, 0.95)
    # SG&A ratio: constrained firms cut overheads three times faster.
    k_sga = tr["k_sga"] * (1.0 + 2.0 * constrained)
    sga = (
        st["sga"]
        + k_sga * (tr["sga_bar"] - st["sga"])
        - 0.003 * m
        + tr["sig_sga"] * _t(rng, 4.0, n)
    )
    sga = np.clip(sga, 0.005, 1.5)
    ppe_i = st["ppe_i"] + 0.05 * (tr["ppe_bar"] - st["ppe_i"]) + 0.02 * tr["ppe_bar"] * z(n)
    ppe_i = np.maximum(ppe_i, 0.01)
    dso = np.clip(st["dso"] + 0.15 * (tr["dso_bar"] - st["dso"]) + 2.5 * z(n), 5, 250)
    dio = np.clip(st["dio"] + 0.12 * (tr["dio_bar"] - st["dio"]) + 3.0 * z(n), 2, 400)
    dpo = np.clip(st["dpo"] + 0.15 * (tr["dpo_bar"] - st["dpo"]) + 2.0 * z(n), 5, 200)
    e_rev = 0.55 * st["e_rev"] + tr["sig_e"] * _t(rng, 3.0, n)
    s = st["s"] + g + tr["sig_s"] * z(n)
    return {
        "at_prev": at_prev,
        "cash_ratio": cash_ratio,
        "constrained": constrained,
        "g": g,
        "gm": gm,
        "sga": sga,
        "ppe_i": ppe_i,
        "dso": dso,
        "dio": dio,
        "dpo": dpo,
        "e_rev": e_rev,
        "s": s,
    }


def _income(
    tr: Traits,
    st: State,
    m: np.ndarray,
    cal_q: np.ndarray,
    rng: np.random.Generator,
    v: dict[str, np.ndarray],
) -> dict[str, np.ndarray]:
    """The income statement."""
    n = st["s"].size
    z = rng.standard_normal
    u = rng.random
    e_rev = v["e_rev"]
    gm = v["gm"]
    s = v["s"]
    sga = v["sga"]
    r_trend = np.exp(s) / 4.0
    season = tr["season"][np.arange(n), cal_q]
    rev = r_trend * np.exp(season + e_rev + 0.03 * tr["cyc"] * m)
    # reported margins carry transitory noise around the latent margin (mix of sales,
    # inventory write-downs): what makes the latent state worth knowing
    cogs = rev * (1.0 - gm + 0.015 * _t(rng, 4.0, n) * (tr["sig_gm"] / 0.008))
    xrd = tr["rd"] * r_trend * np.exp(0.08 * z(n))  # R&D is budgeted on trend revenue
    sga_core = sga * rev + tr["fix"] * r_trend  # fixed part: operating leverage
    stkco = tr["stk"] * sga_core
    xsga = sga_core + xrd  # Compustat's xsgaq includes R&D
    oibdp = rev - cogs - xsga
    ppent_prev = st["ppegt"] - st["dpact"]
    dep = tr["dep"] * ppent_prev
    amort = tr["amort"] * st["intano"]
    dp = dep + amort
    oiadp = oibdp - dp
    xint = tr["r_debt"] * st["debt"]
    nopi = 0.01 * (st["cash"] + st["invlt"]) + 0.004 * rev * z(n)
    # Special items: impairments after margin collapses and in recessions, restructuring.
    p_imp = 0.006 + 0.03 * (gm < tr["gm_bar"] - 0.06) + 0.02 * (m < -1.0)
    imp = u(n) < p_imp
    imp_gw = imp * st["gdwl"] * (0.2 + 0.6 * u(n))
    imp_ppe = imp * ppent_prev * 0.15 * u(n)
    restr = (u(n) < 0.2) * rev * 0.01 * rng.exponential(1.0, n)
    spi = -(imp_gw + imp_ppe + restr)
    pi = oiadp + nopi + spi - xint
    txt = np.where(pi > 0, tr["tax"] * pi, 0.5 * tr["tax"] * pi) + 0.004 * rev * z(n)
    mii = tr["nci"] * (pi - txt)
    ib = pi - txt - mii
    xido = (u(n) < 0.02) * rev * 0.04 * _t(rng, 3.0, n)
    ni = ib + xido
    xopr = cogs + xsga
    return {
        "r_trend": r_trend,
        "rev": rev,
        "cogs": cogs,
        "xrd": xrd,
        "sga_core": sga_core,
        "stkco": stkco,
        "xsga": xsga,
        "oibdp": oibdp,
        "ppent_prev": ppent_prev,
        "dep": dep,
        "amort": amort,
        "dp": dp,
        "oiadp": oiadp,
        "xint": xint,
        "nopi": nopi,
        "imp_gw": imp_gw,
        "imp_ppe": imp_ppe,
        "spi": spi,
        "pi": pi,
        "txt": txt,
        "mii": mii,
        "ib": ib,
        "xido": xido,
        "ni": ni,
        "xopr": xopr,
    }


def _operating(tr: Traits, v: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Operating balances."""
    cogs = v["cogs"]
    dio = v["dio"]
    dpo = v["dpo"]
    dso = v["dso"]
    r_trend = v["r_trend"]
    rev = v["rev"]
    sga_core = v["sga_core"]
    txt = v["txt"]
    rect = rev * dso / 91.0
    invt = tr["has_inv"] * cogs * dio / 91.0
    ap = (cogs + 0.3 * sga_core) * dpo / 91.0
    drc = tr["dr_r"] * rev
    drlt = tr["drlt_r"] * rev
    lco = tr["lco_r"] * rev + drc
    txp = np.maximum(0.25 * txt, 0) + 0.01 * rev
    lo = tr["lo_r"] * 4 * r_trend + drlt
    return {
        "rect": rect,
        "invt": invt,
        "ap": ap,
        "drc": drc,
        "drlt": drlt,
        "lco": lco,
        "txp": txp,
        "lo": lo,
    }


def _investing(
    tr: Traits, st: State, rng: np.random.Generator, v: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """Investing: acquisitions, capital expenditure, disposals, investments."""
    n = st["s"].size
    z = rng.standard_normal
    u = rng.random
    amort = v["amort"]
    at_prev = v["at_prev"]
    cash_ratio = v["cash_ratio"]
    constrained = v["constrained"]
    dep = v["dep"]
    g = v["g"]
    imp_gw = v["imp_gw"]
    imp_ppe = v["imp_ppe"]
    ppe_i = v["ppe_i"]
    ppent_prev = v["ppent_prev"]
    r_trend = v["r_trend"]
    growing = g > tr["g_bar"]
    p_acq = tr["acq_p"] * (1 + 2 * (cash_ratio > 0.15)) * (0.5 + growing) * (1 - 0.7 * constrained)
    acq_size = (u(n) < p_acq) * np.clip(np.exp(np.log(0.08) + 0.8 * z(n)), 0, 1.5)
    aqc = acq_size * 4 * r_trend * tr["ev_sales"]
    acq_ppe, acq_int, acq_gw = 0.3 * aqc, 0.2 * aqc, 0.5 * aqc
    ppent_target = ppe_i * 4 * r_trend * (1 + 4 * g)
    capx = np.maximum(0.0, dep + 0.25 * (ppent_target - ppent_prev)) * np.exp(0.15 * z(n))
    sale_frac = (u(n) < 0.3) * np.minimum(0.01 * rng.exponential(1.0, n), 0.5)
    sppe_bv = sale_frac * ppent_prev
    sppe = sppe_bv * np.exp(0.2 * z(n))  # proceeds; the gain or loss lands in oancf
    retire = 0.02 * st["dpact"]
    ppegt = st["ppegt"] + capx + acq_ppe - retire - sale_frac * st["ppegt"]
    dpact = st["dpact"] + dep + imp_ppe - retire - sale_frac * st["dpact"]
    ppent = ppegt - dpact
    gdwl = st["gdwl"] + acq_gw - imp_gw
    intano = st["intano"] + acq_int - amort
    intan = gdwl + intano
    flow = 0.3 * (tr["inv_r"] * at_prev - st["invlt"])
    ivch = np.maximum(flow, 0) + 0.004 * at_prev * np.abs(z(n)) * (tr["inv_r"] > 0)
    siv = np.minimum(
        np.maximum(-flow, 0) + 0.004 * at_prev * np.abs(z(n)) * (tr["inv_r"] > 0),
        st["invlt"] + ivch,
    )
    invlt = st["invlt"] + ivch - siv
    sti = np.maximum(
        st["sti"]
        + 0.5 * (tr["sti_r"] * st["cash"] - st["sti"])
        + 0.01 * at_prev * z(n) * (tr["sti_r"] > 0),
        0,
    )
    ivstch = -(sti - st["sti"])
    aoo = np.maximum(
        st["aoo"] + 0.1 * (tr["ao_r"] * 4 * r_trend - st["aoo"]) + 0.02 * st["aoo"] * z(n), 0
    )
    ivaco = -0.5 * (aoo - st["aoo"])
    ivncf = siv + sppe + ivstch + ivaco - capx - ivch - aqc
    return {
        "acq_size": acq_size,
        "aqc": aqc,
        "capx": capx,
        "sppe": sppe,
        "ppegt": ppegt,
        "dpact": dpact,
        "ppent": ppent,
        "gdwl": gdwl,
        "intano": intano,
        "intan": intan,
        "ivch": ivch,
        "siv": siv,
        "invlt": invlt,
        "sti": sti,
        "ivstch": ivstch,
        "aoo": aoo,
        "ivaco": ivaco,
        "ivncf": ivncf,
    }


def _payout(
    tr: Traits,
    st: State,
    year: np.ndarray | int,
    rng: np.random.Generator,
    v: dict[str, np.ndarray],
) -> dict[str, np.ndarray]:
    """Payout and equity before the financing decision."""
    n = st["s"].size
    z = rng.standard_normal
    u = rng.random
    at_prev = v["at_prev"]
    mii = v["mii"]
    ni = v["ni"]
    rev = v["rev"]
    stkco = v["stkco"]
    ni4 = 0.75 * st["ni4"] + 0.25 * ni
    target_div = tr["payout"] * np.maximum(ni4, 0)
    review = u(n) < 0.25  # dividends are sticky: reviewed about once a year
    move = review & (np.abs(target_div - st["div"]) > 0.1 * np.maximum(st["div"], 1e-9))
    div = np.where(move, target_div, st["div"])
    div = np.where((ni4 < 0) & (u(n) < 0.3), 0.0, div)  # omissions after losses
    dvq = div + 0.02 * st["pstk"]
    excess = np.maximum(st["cash"] - tr["cash_bar"] * at_prev, 0)
    prstkc = (u(n) < tr["bb_p"]) * 0.2 * excess
    sstk_small = (u(n) < 0.5) * 0.3 * stkco
    yr = np.broadcast_to(year, (n,))
    txbcof = np.where((yr >= 2006) & (yr <= 2016), 0.1 * stkco, 0.0)
    mi_dist = 0.5 * np.maximum(mii, 0)
    fiao_other = 0.002 * rev * z(n)
    fiao = fiao_other - mi_dist
    mib = st["mib"] + mii - mi_dist
    pstk = st["pstk"]
    re = st["re"] + ni - dvq
    tstk = st["tstk"] + prstkc
    cstk = st["cstk"] + 0.01 * sstk_small
    caps = st["caps"] + 0.99 * sstk_small + stkco + txbcof + fiao_other
    return {
        "ni4": ni4,
        "div": div,
        "dvq": dvq,
        "prstkc": prstkc,
        "sstk_small": sstk_small,
        "txbcof": txbcof,
        "fiao": fiao,
        "mib": mib,
        "pstk": pstk,
        "re": re,
        "tstk": tstk,
        "cstk": cstk,
        "caps": caps,
    }


def _balance(
    tr: Traits, st: State, rng: np.random.Generator, v: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """Financing, with cash as the balancing item, and the balance sheet."""
    before, a_nc, cash_pre = _before_financing(tr, st, v)
    financing = _financing(tr, st, rng, v, a_nc, cash_pre)
    return {**before, **financing, **_closing_sheet(tr, st, rng, v, before, financing, a_nc)}


def _before_financing(
    tr: Traits, st: State, v: dict[str, np.ndarray]
) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """The items financing does not move (deferred taxes, other current and other assets),
    the non-cash assets and the cash the balance sheet would hold before any financing."""
    ppent = v["ppent"]
    txditc = tr["dt_r"] * ppent
    aco = tr["aco_r"] * v["rev"] + v["sti"]
    ao = v["intan"] + v["invlt"] + v["aoo"]
    a_nc = v["rect"] + v["invt"] + aco + ppent + ao
    l_nd = v["ap"] + v["lco"] + v["txp"] + txditc + v["lo"]
    seq_pre = v["cstk"] + v["caps"] + v["re"] - v["tstk"] + v["pstk"]
    cash_pre = l_nd + st["debt"] + v["mib"] + seq_pre - a_nc
    return {"txditc": txditc, "aco": aco, "ao": ao}, a_nc, cash_pre


def _financing(
    tr: Traits,
    st: State,
    rng: np.random.Generator,
    v: dict[str, np.ndarray],
    a_nc: np.ndarray,
    cash_pre: np.ndarray,
) -> dict[str, np.ndarray]:
    """Debt towards its target leverage and cash towards its target (seasoned equity when
    borrowing is tight), its split into current and long-term debt, and the financing flow."""
    n = st["s"].size
    z = rng.standard_normal
    cash_target = tr["cash_bar"] * (a_nc + np.maximum(st["cash"], 0))
    debt_target = tr["lev_bar"] * (a_nc + cash_target)
    cash_gap = cash_target - cash_pre
    lev_pre = st["debt"] / np.maximum(a_nc + np.maximum(cash_pre, 0), 1e-6)
    tight = lev_pre > tr["lev_bar"] + 0.15
    # Seasoned equity when borrowing is tight and cash is short.
    seo = tight & (cash_gap > 0) & (rng.random(n) < 0.3)
    sstk_big = seo * 0.8 * cash_gap
    d_debt = tr["k_lev"] * (debt_target - st["debt"]) + np.where(
        cash_gap > 0, 0.6, 0.3
    ) * cash_gap * (1 - 0.8 * seo)
    floor = 0.01 * a_nc - (cash_pre + d_debt + sstk_big)
    d_debt = d_debt + np.maximum(floor, 0)  # revolver keeps cash positive
    debt = np.maximum(st["debt"] + d_debt, 0.0)
    cstk = v["cstk"] + 0.01 * sstk_big
    caps = v["caps"] + 0.99 * sstk_big
    sstk = v["sstk_small"] + sstk_big
    dlc = np.clip(tr["cur_share"] * debt * np.exp(0.1 * z(n)), 0, debt)
    dltt = debt - dlc
    dlcch = dlc - st["dlc"]
    dltr = tr["mat"] * st["dltt"] * np.exp(0.3 * z(n))
    dltis = (dltt - st["dltt"]) + dltr
    dltr = dltr - np.minimum(dltis, 0)
    dltis = np.maximum(dltis, 0)
    fincf = sstk + dltis + dlcch + v["fiao"] + v["txbcof"] - v["prstkc"] - dltr - v["dvq"]
    return {
        "debt": debt,
        "cstk": cstk,
        "caps": caps,
        "sstk": sstk,
        "dlc": dlc,
        "dltt": dltt,
        "dlcch": dlcch,
        "dltr": dltr,
        "dltis": dltis,
        "fincf": fincf,
    }


def _closing_sheet(
    tr: Traits,
    st: State,
    rng: np.random.Generator,
    v: dict[str, np.ndarray],
    before: dict[str, np.ndarray],
    financing: dict[str, np.ndarray],
    a_nc: np.ndarray,
) -> dict[str, np.ndarray]:
    """The balance sheet after financing, cash its balancing item, and the operating flow
    that cash implies (with exchange-rate effects and other comprehensive income)."""
    n = st["s"].size
    z = rng.standard_normal
    ap, lco, txp, re, tstk = v["ap"], v["lco"], v["txp"], v["re"], v["tstk"]
    txditc, aco = before["txditc"], before["aco"]
    dlc, dltt = financing["dlc"], financing["dltt"]
    ceq = financing["cstk"] + financing["caps"] + re - tstk
    seq = ceq + v["pstk"]
    lt = ap + lco + dlc + txp + dltt + txditc + v["lo"]
    cash = lt + v["mib"] + seq - a_nc  # the balancing item
    exre = tr["fx"] * st["cash"] * 0.02 * z(n)
    oancf = (cash - st["cash"]) - v["ivncf"] - financing["fincf"] - exre
    fopo = v["stkco"] - v["spi"] + (txditc - st["txditc"])
    acominc = st["acominc"] + exre + 0.002 * tr["fx"] * v["at_prev"] * z(n)
    act = cash + v["invt"] + v["rect"] + aco
    anc = v["ppent"] + before["ao"]
    at = act + anc
    lct = ap + dlc + txp + lco
    return {
        "ceq": ceq,
        "seq": seq,
        "lt": lt,
        "cash": cash,
        "exre": exre,
        "oancf": oancf,
        "fopo": fopo,
        "acominc": acominc,
        "act": act,
        "anc": anc,
        "at": at,
        "lct": lct,
    }


#: The quarterly raw items `step` returns and the variable each one is.
RAW_ITEMS: dict[str, str] = {
    # balance sheet
    "acomincq": "acominc",
    "acoq": "aco",
    "actq": "act",
    "ancq": "anc",
    "aoq": "ao",
    "apq": "ap",
    "atq": "at",
    "capsq": "caps",
    "ceqq": "ceq",
    "cheq": "cash",
    "cstkq": "cstk",
    "dlcq": "dlc",
    "dlttq": "dltt",
    "dpactq": "dpact",
    "drcq": "drc",
    "drltq": "drlt",
    "gdwlq": "gdwl",
    "intanoq": "intano",
    "intanq": "intan",
    "invtq": "invt",
    "lcoq": "lco",
    "lctq": "lct",
    "loq": "lo",
    "ltq": "lt",
    "mibtq": "mib",
    "ppegtq": "ppegt",
    "ppentq": "ppent",
    "pstkq": "pstk",
    "rectq": "rect",
    "req": "re",
    "seqq": "seq",
    "tstkq": "tstk",
    "txditcq": "txditc",
    "txpq": "txp",
    # income statement
    "cogsq": "cogs",
    "dpq": "dp",
    "ibq": "ib",
    "miiq": "mii",
    "niq": "ni",
    "nopiq": "nopi",
    "oiadpq": "oiadp",
    "oibdpq": "oibdp",
    "piq": "pi",
    "revtq": "rev",
    "spiq": "spi",
    "stkcoq": "stkco",
    "txtq": "txt",
    "xidoq": "xido",
    "xintq": "xint",
    "xoprq": "xopr",
    "xrdq": "xrd",
    "xsgaq": "xsga",
    # cash flow (quarterly; the reporting layer turns them into YTD)
    "aqcq": "aqc",
    "capxq": "capx",
    "dlcchq": "dlcch",
    "dltisq": "dltis",
    "dltrq": "dltr",
    "dvq": "dvq",
    "exreq": "exre",
    "fiaoq": "fiao",
    "fincfq": "fincf",
    "fopoq": "fopo",
    "ivacoq": "ivaco",
    "ivchq": "ivch",
    "ivncfq": "ivncf",
    "ivstchq": "ivstch",
    "oancfq": "oancf",
    "prstkcq": "prstkc",
    "sivq": "siv",
    "sppeq": "sppe",
    "sstkq": "sstk",
    "txbcofq": "txbcof",
}
