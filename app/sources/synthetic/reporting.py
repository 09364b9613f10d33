"""Reporting like Compustat: availability by era, gaps, YTD cash flows, fiscal-year changes.

The economics produce complete, exactly balancing quarterly statements. This module
decides what a filing shows: firm-level structural absence (an item the firm never
reports in an era, correlated across items through a firm reporting-quality factor),
random item gaps, skipped filings, filings without a balance sheet, fiscal-year changes
(two rows in one calendar quarter), and year-to-date cash-flow columns.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from proforma.app.sources.synthetic.calendar import (
    close_month,
    labels,
    month_end_days,
    quarter_end_days,
    quarter_start_days,
)
from proforma.app.sources.synthetic.config import TEST_START_YEAR, VAL_START_YEAR, SyntheticConfig
from proforma.app.sources.synthetic.firms import Traits
from proforma.app.sources.synthetic.items import raw_items
from proforma.contracts.raw import FUNDQ_KEYS, fundq_schema

RAW = raw_items()
RAW_NAMES = [it.item for it in RAW]
CF = [it for it in RAW if it.statement == "CF"]
CF_NAMES = [it.item for it in CF]
BS_MASK = np.array([it.statement == "BS" for it in RAW])
#: share of an item's availability that is firm-level (persistent) rather than row-level
FIRM_SHARE = 0.85
#: a firm's skipped filing (no row at all) and a filing without balance sheet
P_SKIP = 0.008
P_FYR_CHANGE = 0.0015

FUNDQ_SCHEMA = fundq_schema([*FUNDQ_KEYS, *(it.ytd_source or it.item for it in RAW)])


def era_of_year(year: np.ndarray | int) -> np.ndarray:
    """0 train (through 2001), 1 val (2002-2009), 2 test (2010 on)."""
    y = np.asarray(year)
    return (y >= VAL_START_YEAR).astype(np.int64) + (y >= TEST_START_YEAR)


def p_no_balance_sheet(year: int) -> float:
    """Filings with income statement but no balance sheet (scale-invalid): early-era mostly."""
    return 0.12 if year < 1990 else 0.06 if year < 2002 else 0.03


def availability(tr: Traits, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Firm x item x era reporting flags and per-item row-level report probabilities.

    Each (firm, item) gets a latent uniform from a Gaussian copula with a firm reporting
    quality factor, so missingness clusters by firm. The firm reports the item in an era
    when that uniform is below the era's firm-level probability. Targets are the
    pct_train/val/test columns of items.csv; cash-flow items are raised because a
    quarterly flow also needs the previous fiscal quarter's YTD value.
    """
    n = tr["sic"].size
    quality = rng.standard_normal(n)
    cf_block = rng.standard_normal(n)  # cash-flow statements are filed (or not) as a block
    e = rng.standard_normal((n, len(RAW)))
    is_cf = np.array([it.statement == "CF" for it in RAW])
    latent = np.where(
        is_cf[None, :],
        0.5 * quality[:, None] + 0.7 * cf_block[:, None] + 0.51 * e,
        0.7 * quality[:, None] + 0.714 * e,
    )
    from scipy.special import ndtr  # only the generator needs scipy (CLI start-up)

    uni = ndtr(latent)
    p_row = np.empty(len(RAW))
    ok = np.zeros((n, len(RAW), 3), dtype=bool)
    for j, it in enumerate(RAW):
        target = np.array(it.pct)
        pr = np.maximum(target.max(), 1e-3) ** (1 - FIRM_SHARE)
        p_row[j] = pr
        need = target / pr
        if it.statement == "CF":
            need = need / (0.25 + 0.75 * pr)
        structural = None
        if it.item == "xrdq":
            structural = tr["has_rd"]
        elif it.item == "invtq":
            structural = tr["inv_field"]
        if structural is not None:
            need = need / max(structural.mean(), 1e-3)
        for era in range(3):
            ok[:, j, era] = uni[:, j] < min(need[era], 1.0)
            if structural is not None:
                ok[:, j, era] &= structural
    return ok, p_row


class Reporter:
    """Turns each simulated quarter into raw.fundq rows (an Arrow record batch)."""

    def __init__(
        self, cfg: SyntheticConfig, tr: Traits, gvkeys: np.ndarray, rng: np.random.Generator
    ):
        self.cfg = cfg
        self.tr = tr
        self.gvkeys = gvkeys
        self.rng = rng
        self.n = tr["sic"].size
        self.ok, self.p_row = availability(tr, rng)
        # no draw: the random streams stay as they are
        for item in cfg.no_train_items:
            self.ok[:, RAW_NAMES.index(item), 0] = False
        for item in cfg.test_only_items:
            self.ok[:, RAW_NAMES.index(item), :2] = False
        self.fyr = tr["fyr"].astype(np.int64).copy()
        self.ytd = np.zeros((self.n, len(CF)))
        self.fy = np.full(self.n, -1, dtype=np.int64)  # fiscal year label of the accumulators
        self.rows = 0
        self.fyr_changes = 0

    def accumulate(
        self, q: int, values: dict[str, np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Roll every firm's YTD accumulators (also before entry) and return labels."""
        month = close_month(q, self.fyr)
        fyearq, fqtr = labels(q, self.fyr, month)
        flows = np.stack([values[c] for c in CF_NAMES], axis=1)
        new_year = (fqtr == 1) | (fyearq != self.fy)
        self.ytd = np.where(new_year[:, None], flows, self.ytd + flows)
        self.fy = fyearq.copy()  # a copy: fiscal-year changes edit self.fy in place
        return month, fyearq, fqtr

    def quarter(self, q: int, values: dict[str, np.ndarray]) -> pa.RecordBatch | None:
        """Rows for calendar quarter q (None when no firm files)."""
        tr, rng = self.tr, self.rng
        old_fyr = self.fyr.copy()
        month, fyearq, fqtr = self.accumulate(q, values)
        alive = (tr["entry_q"] <= q) & (q <= tr["exit_q"])
        # A fiscal-year change: the old-calendar filing and the new fiscal Q1 land in one
        # calendar quarter; the build keeps the higher (fyearq, fqtr), the new one.
        rate = P_FYR_CHANGE if self.cfg.fyr_change_rate is None else self.cfg.fyr_change_rate
        change = alive & (q >= tr["entry_q"] + 4) & (rng.random(self.n) < rate)
        dup_rows = self._fyr_changes(
            q, np.flatnonzero(change), values, month, fyearq, fqtr, old_fyr
        )
        if dup_rows is not None:  # labels of the firms that changed their fiscal year
            month = close_month(q, self.fyr)
            fyearq, fqtr = labels(q, self.fyr, month)
        skip = (rng.random(self.n) < P_SKIP) & (q > tr["entry_q"]) & ~change
        idx = np.flatnonzero(alive & ~skip)
        if idx.size == 0 and dup_rows is None:
            return None
        era = int(era_of_year(q // 4))
        present = self.ok[idx, :, era] & (rng.random((idx.size, len(RAW))) < self.p_row[None, :])
        no_bs = rng.random(idx.size) < p_no_balance_sheet(q // 4)
        present[no_bs[:, None] & BS_MASK[None, :]] = False
        # a filing with a balance sheet always shows total assets (the deflator fallback)
        present[~no_bs, RAW_NAMES.index("atq")] = True
        cols = self._columns(idx, values, self.ytd[idx], present)
        batch = self._batch(
            self.gvkeys[idx],
            month_end_days(q, month[idx]),
            fyearq[idx],
            fqtr[idx],
            self.fyr[idx],
            cols,
        )
        self.rows += batch.num_rows
        if dup_rows is not None:
            self.rows += dup_rows.num_rows
            return pa.Table.from_batches([dup_rows, batch]).combine_chunks().to_batches()[0]
        return batch

    def _fyr_changes(self, q, idx, values, month, fyearq, fqtr, old_fyr) -> pa.RecordBatch | None:
        if idx.size == 0:
            return None
        keep = []
        for i in idx:  # rare (about 0.15% of firm-quarters): a small loop is fine
            first = (q % 4) * 3 + 1
            cands = [mm for mm in range(first, first + 3) if mm != month[i]]
            self.rng.shuffle(cands)
            for mm in cands:
                fyr_new = (mm - 4) % 12 + 1
                fy_new, fq_new = labels(q, np.array([fyr_new]), np.array([mm]))
                if fq_new[0] == 1 and fy_new[0] > fyearq[i]:
                    keep.append(i)
                    self.fyr[i] = fyr_new
                    break
        if not keep:
            return None
        k = np.array(keep)
        # The superseded filing: old labels and YTD, values of a slightly different
        # period (a common scale factor keeps its identities exact).
        factor = 1 + 0.02 * self.rng.standard_normal(k.size)
        flows = np.stack([values[c][k] for c in CF_NAMES], axis=1)
        ytd_old = self.ytd[k] + flows * (factor[:, None] - 1)
        scaled = {name: values[name][k] * factor for name in RAW_NAMES}
        present = self.ok[k, :, int(era_of_year(q // 4))]
        present[:, RAW_NAMES.index("atq")] = True
        cols = self._columns(np.arange(k.size), scaled, ytd_old, present)
        # the new fiscal year starts now: accumulators hold this quarter only
        self.ytd[k] = flows
        mm_new = close_month(q, self.fyr[k])
        self.fy[k] = labels(q, self.fyr[k], mm_new)[0]
        self.fyr_changes += k.size
        return self._batch(
            self.gvkeys[k], month_end_days(q, month[k]), fyearq[k], fqtr[k], old_fyr[k], cols
        )

    @staticmethod
    def _columns(idx, values, ytd, present) -> list[pa.Array]:
        cols = []
        cf_pos = {c: j for j, c in enumerate(CF_NAMES)}
        for j, it in enumerate(RAW):
            v = ytd[:, cf_pos[it.item]] if it.item in cf_pos else values[it.item][idx]
            cols.append(pa.array(v, type=pa.float64(), mask=~present[:, j]))
        return cols

    @staticmethod
    def _batch(gv, days, fyearq, fqtr, fyr, cols) -> pa.RecordBatch:
        head = [
            pa.array(gv, type=pa.string()),
            pa.array(days.astype(np.int32), type=pa.date32()),
            pa.array(fyearq.astype(np.int32)),
            pa.array(fqtr.astype(np.int8)),
            pa.array(fyr.astype(np.int8)),
        ]
        return pa.RecordBatch.from_arrays(head + cols, schema=FUNDQ_SCHEMA)


# ---- company_industry and ccm_link ---------------------------------------------------------
def draw_links(cfg: SyntheticConfig, tr: Traits, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """CRSP link windows in quarters: start/end of up to two windows per linked firm (-1 none).

    Listing often follows the first Compustat quarters and delisting can precede the
    last; about one linked firm in ten has a gap between two links (LC then LU).
    """
    n = tr["sic"].size
    entry, exit_ = tr["entry_q"], tr["exit_q"]
    life = exit_ - entry + 1
    late = np.where(rng.random(n) < 0.5, rng.integers(0, 12, n), 0)
    start1 = entry + np.minimum(late, life // 2)
    early = np.where(rng.random(n) < 0.3, rng.integers(0, 6, n), 0)
    end2 = exit_ - np.minimum(early, life // 4)
    two = (rng.random(n) < 0.1) & (end2 - start1 > 12)
    cut = start1 + ((end2 - start1) * (0.3 + 0.4 * rng.random(n))).astype(np.int64)
    gap = rng.integers(1, 5, n)
    linked = tr["linked"]
    return {
        "start1": np.where(linked, start1, -1),
        "end1": np.where(linked, np.where(two, cut, end2), -1),
        "start2": np.where(linked & two, cut + gap, -1),
        "end2": np.where(linked & two, end2, -1),
        "open": linked & (exit_ >= cfg.q_end),  # still listed: no linkenddt
        "lc_first": rng.random(n) < 0.4,
        "primary_c": rng.random(n) < 0.08,
    }


def in_link_window(links: dict[str, np.ndarray], idx: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Whether firm-quarters survive the link-window trim (unlinked firms always do)."""
    s1, e1, s2, e2 = (links[k][idx] for k in ("start1", "end1", "start2", "end2"))
    return (s1 < 0) | ((s1 <= q) & (q <= e1)) | ((s2 >= 0) & (s2 <= q) & (q <= e2))


def ccm_link_table(
    cfg: SyntheticConfig, tr: Traits, links: dict[str, np.ndarray], gvkeys: np.ndarray
) -> pa.Table:
    parts = []
    for k, (s, e) in enumerate((("start1", "end1"), ("start2", "end2"))):
        idx = np.flatnonzero(links[s] >= 0)
        is_last = (links["start2"][idx] < 0) if k == 0 else np.ones(idx.size, dtype=bool)
        open_end = links["open"][idx] & is_last
        linktype = np.where(links["lc_first"][idx] & (k == 0), "LC", "LU")
        parts.append(
            pa.table(
                {
                    "gvkey": pa.array(gvkeys[idx], type=pa.string()),
                    "lpermno": pa.array((10000 + idx).astype(np.int32)),
                    "linktype": pa.array(linktype.tolist(), type=pa.string()),
                    "linkprim": pa.array(
                        np.where(links["primary_c"][idx], "C", "P").tolist(), type=pa.string()
                    ),
                    "linkdt": pa.array(
                        quarter_start_days(links[s][idx]).astype(np.int32), type=pa.date32()
                    ),
                    "linkenddt": pa.array(
                        quarter_end_days(links[e][idx]).astype(np.int32),
                        type=pa.date32(),
                        mask=open_end,
                    ),
                }
            )
        )
    return pa.concat_tables(parts)


def company_industry_table(
    cfg: SyntheticConfig, tr: Traits, gvkeys: np.ndarray, rng: np.random.Generator
) -> pa.Table:
    """One historical-SIC record per firm and fiscal year (firms with missing SIC have none);
    about 4% of firms move to another SIC of their sector once."""
    has = ~tr["sic_missing"]
    first_year = tr["entry_q"] // 4
    last_year = tr["exit_q"] // 4
    nyears = np.where(has, last_year - first_year + 1, 0)
    firm = np.repeat(np.arange(tr["sic"].size), nyears)
    offset = np.arange(firm.size) - np.repeat(np.cumsum(nyears) - nyears, nyears)
    year = first_year[firm] + offset
    # record dated at the start of the firm's first quarter, then each Dec 31
    days = np.where(
        offset == 0, quarter_start_days(tr["entry_q"][firm]), quarter_end_days(year * 4 + 3)
    )
    switch_year = np.where(rng.random(tr["sic"].size) < 0.04, first_year + nyears // 2, 10**6)
    new_sic = tr["sic"] + rng.integers(-30, 31, tr["sic"].size)
    # keep the new code inside the firm's sector band (same thousands and financial status)
    new_sic = np.clip(new_sic, (tr["sic"] // 100) * 100, (tr["sic"] // 100) * 100 + 99)
    sich = np.where(year >= switch_year[firm], new_sic[firm], tr["sic"][firm])
    return pa.table(
        {
            "gvkey": pa.array(gvkeys[firm], type=pa.string()),
            "datadate": pa.array(days.astype(np.int32), type=pa.date32()),
            "sich": pa.array(sich.astype(np.int32)),
            "naicsh": pa.array(
                np.zeros(firm.size, dtype=np.int32), mask=np.ones(firm.size, dtype=bool)
            ),
        }
    )
