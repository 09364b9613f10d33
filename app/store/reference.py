"""Reference tables (ref.items, ref.identities, ref.ff48) loaded from reference/*.csv.

The CSVs are the project's own copies of the benchmark's reference data. Item ids are
the 1-based row order of items.csv (alphabetical); the `scale` pseudo-item is id 0.
Loading is idempotent and recorded with a checksum in ref.loaded.
"""

from __future__ import annotations

import csv
import functools
from pathlib import Path

from proforma.app.store.warehouse import Warehouse
from proforma.contracts import ROOT
from proforma.contracts.provenance import file_sha256

REFERENCE_DIR = ROOT / "reference"
SCALE_ITEM_ID = 0
N_ITEMS = 78


def load_reference(wh: Warehouse, folder: Path = REFERENCE_DIR) -> dict[str, int]:
    """Replace ref.* rows from the CSVs when they changed; returns rows per table."""
    files = {n: folder / f"{n}.csv" for n in ("items", "identities", "ff48_sic_ranges")}
    sums = {n: file_sha256(p) for n, p in files.items()}
    loaded = dict(wh.fetchall("SELECT name, checksum FROM ref.loaded"))
    if loaded == sums:
        return {n: r for n, r in wh.fetchall("SELECT name, rows FROM ref.loaded")}
    with wh.transaction():
        wh.execute("DELETE FROM ref.identities; DELETE FROM ref.items; DELETE FROM ref.ff48;")
        wh.execute(
            """
            INSERT INTO ref.items
            SELECT row_number() OVER () AS item_id, item, description, statement,
                   nullif(ytd_source, ''), true, pct_raw, pct_train, pct_val, pct_test
            FROM read_csv(?, header = true, all_varchar = false)
            """,
            [str(files["items"])],
        )
        wh.execute(
            "INSERT INTO ref.items VALUES (0, 'scale', 'Scale deflator |ltq|+|seqq| (pseudo-item)',"
            " 'Scale', NULL, false, NULL, NULL, NULL, NULL)"
        )
        wh.execute(
            """
            INSERT INTO ref.identities
            SELECT c.identity, c.statement, c.item, i.item_id, c.sign
            FROM read_csv(?, header = true) c JOIN ref.items i USING (item)
            """,
            [str(files["identities"])],
        )
        wh.execute(
            "INSERT INTO ref.ff48 SELECT ff48, short_name, label, sic_lo, sic_hi "
            "FROM read_csv(?, header = true)",
            [str(files["ff48_sic_ranges"])],
        )
        counts = {
            "items": wh.scalar("SELECT count(*) FROM ref.items"),
            "identities": wh.scalar("SELECT count(*) FROM ref.identities"),
            "ff48_sic_ranges": wh.scalar("SELECT count(*) FROM ref.ff48"),
        }
        wh.execute("DELETE FROM ref.loaded")
        for name, rows in counts.items():
            wh.execute(
                "INSERT INTO ref.loaded VALUES (?, ?, ?, current_timestamp::TIMESTAMP)",
                [name, sums[name], rows],
            )
    return counts


def raw_item_columns(wh: Warehouse) -> list[str]:
    """Columns of raw.fundq that carry item values: reported items and YTD sources."""
    return [
        r[0]
        for r in wh.fetchall(
            "SELECT coalesce(ytd_source, item) FROM ref.items "
            "WHERE statement IN ('BS', 'IS', 'CF') ORDER BY item_id"
        )
    ]


def raw_item_columns_from_file(folder: Path = REFERENCE_DIR) -> list[str]:
    """The same columns as `raw_item_columns`, read from items.csv (no warehouse needed).

    Sources use this to project their pulls: the 52 balance-sheet and income-statement
    items as reported and the YTD source column (`*y`) of each of the 20 cash-flow items.
    """
    with (folder / "items.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    return [(r["ytd_source"] or r["item"]) for r in rows if r["statement"] in ("BS", "IS", "CF")]


@functools.lru_cache(maxsize=4)
def release_item_order(folder: Path = REFERENCE_DIR) -> tuple[str, ...]:
    """The 78 items in the published release's order (reference/release_layout.csv).

    That order fixes the column order of the release's tabular files (per item: levels,
    year-over-year changes, targets) and of the imputation's factor matrix.
    """
    with (folder / "release_layout.csv").open(newline="") as fh:
        rows = sorted(csv.DictReader(fh), key=lambda r: int(r["position"]))
    return tuple(r["item"] for r in rows)


@functools.lru_cache(maxsize=4)
def imputation_columns(folder: Path = REFERENCE_DIR) -> tuple[str, ...]:
    """The tabular features the factor imputation reads, in the release's order:
    scale_level_0, then per item level_0..3 and yoy_0..7 (industry dummies never)."""
    cols = ["scale_level_0"]
    for item in release_item_order(folder):
        cols += [f"{item}_level_{k}" for k in range(4)] + [f"{item}_yoy_{k}" for k in range(8)]
    return tuple(cols)
