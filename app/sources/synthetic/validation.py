"""The validation report of a synthetic panel, computed in SQL over raw.* (sql/synthetic).

The quarterly values are derived from raw.fundq exactly as the build derives them
(link trim, financial filter, dedup, YTD conversion, computed items, scale validity),
so the report shows what the benchmark will see.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
from rich.console import Console
from rich.table import Table

from proforma.app.store.sqlfiles import sql_file
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.errors import UserError
from proforma.contracts.panel import SPLITS

#: The paper's Table "Joint availability" (real Compustat), full sample and test.
PAPER_JOINT = {
    "firm_quarters": (1_173_598, 352_962),
    "firms": (32_851, 13_288),
    "density_pct": (82.2, 93.6),
    "items_mean": (64.1, 73.0),
    "items_median": (68, 75),
    "items_p10": (46, 68),
    "items_p90": (76, 77),
    "ge40_pct": (95.1, 99.7),
    "ge70_pct": (41.4, 87.1),
    "complete_pct": (1.73, 4.67),
    "bs_pct": (85.4, 95.8),
    "is_pct": (87.8, 93.6),
    "cf_pct": (69.7, 89.3),
    "der_pct": (89.4, 95.9),
}


@dataclass
class ValidationReport:
    identities: pa.Table
    availability: pa.Table
    joint: pa.Table
    ytd: pa.Table
    dynamics: pa.Table

    @property
    def identity_violations(self) -> int:
        return int(sum(self.identities.column("violations").to_pylist()))

    def availability_mad(self) -> dict[str, float]:
        """Mean absolute deviation (percentage points) from items.csv per split."""
        out: dict[str, list[float]] = {}
        for row in self.availability.to_pylist():
            out.setdefault(row["split"], []).append(abs(row["diff"]))
        return {k: sum(v) / len(v) for k, v in out.items()}


def validation_report(wh: Warehouse) -> ValidationReport:
    """Run sql/synthetic/* over the current raw tables."""
    if not wh.scalar("SELECT count(*) FROM raw.fundq"):
        raise UserError("raw.fundq is empty: run `proforma ingest synthetic` first.")
    wh.run_step("synthetic/010_quarterly_panel")
    return ValidationReport(
        identities=wh.query_step("synthetic/020_identities"),
        availability=wh.query_step("synthetic/030_availability"),
        joint=wh.query_step("synthetic/040_joint_availability"),
        ytd=wh.query_step("synthetic/050_ytd"),
        dynamics=wh.query_step("synthetic/060_dynamics"),
    )


def _fmt(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1e-3 and v != 0 else f"{v:,.2f}".rstrip("0").rstrip(".")
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def render(report: ValidationReport, console: Console, all_items: bool = False) -> None:
    """Print the report as tables."""
    t = Table(title="Identity residuals (firm-quarters with every member reported)")
    for c in (
        "identity",
        "statement",
        "terms",
        "evaluated",
        "max rel. residual",
        "violations > 1e-9",
    ):
        t.add_column(c, justify="right" if c not in ("identity", "statement") else "left")
    for r in report.identities.to_pylist():
        t.add_row(
            r["identity"],
            r["statement"],
            str(r["n_terms"]),
            _fmt(r["evaluated"]),
            f"{r['max_rel_residual']:.1e}",
            str(r["violations"]),
        )
    console.print(t)

    mad = report.availability_mad()
    rows = report.availability.to_pylist()
    t = Table(
        title="Availability by split (% of scale-valid firm-quarters) vs items.csv; "
        + "mean abs. deviation: "
        + ", ".join(f"{k} {v:.1f} pp" for k, v in mad.items())
    )
    for c in ("item", "train", "target", "val", "target", "test", "target"):
        t.add_column(c, justify="left" if c == "item" else "right")
    by_item: dict[str, dict[str, dict]] = {}
    for r in rows:
        by_item.setdefault(r["item"], {})[r["split"]] = r
    worst = sorted(by_item, key=lambda i: -max(abs(by_item[i][s]["diff"]) for s in by_item[i]))
    for item in sorted(by_item) if all_items else worst[:12]:
        cells = []
        for s in SPLITS:
            r = by_item[item].get(s)  # a split outside the panel's years has no row
            cells += [f"{r['pct']:.1f}", f"{r['target']:.1f}"] if r else ["-", "-"]
        t.add_row(item, *cells)
    if not all_items:
        t.caption = "the 12 items furthest from target (--all-items lists all 78)"
    console.print(t)

    t = Table(title="Joint availability (scale-valid firm-quarters): synthetic vs paper")
    for c in ("measure", "synthetic full", "paper full", "synthetic test", "paper test"):
        t.add_column(c, justify="left" if c == "measure" else "right")
    joint = {r["scope"]: r for r in report.joint.to_pylist()}
    for key, (pf, pt) in PAPER_JOINT.items():
        t.add_row(
            key,
            _fmt(joint.get("full", {}).get(key)),
            _fmt(pf),
            _fmt(joint.get("test", {}).get(key)),
            _fmt(pt),
        )
    console.print(t)

    t = Table(title="YTD consistency and fiscal calendar")
    t.add_column("check")
    t.add_column("value", justify="right")
    for r in report.ytd.to_pylist():
        t.add_row(r["check_name"], _fmt(r["value"]))
    console.print(t)

    t = Table(
        title="Persistence (AR slope on lag 1 / lag 4) and seasonality (R2 of firm quarter-of-year means / RMS seasonal log factor)"
    )
    for c in ("kind", "series", "lag 1 | R2", "lag 4 | RMS", "n"):
        t.add_column(c, justify="left" if c in ("kind", "series") else "right")
    for r in report.dynamics.to_pylist():
        t.add_row(r["kind"], r["name"], _fmt(r["value_1"]), _fmt(r["value_2"]), _fmt(r["n"]))
    console.print(t)


def check_sql() -> None:
    """Fail early if a report step is missing (used by the CLI before opening the warehouse)."""
    for name in (
        "010_quarterly_panel",
        "020_identities",
        "030_availability",
        "040_joint_availability",
        "050_ytd",
        "060_dynamics",
    ):
        sql_file(f"synthetic/{name}")
