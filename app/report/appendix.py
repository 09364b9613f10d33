"""Appendix tables A1-A4: the sample waterfall, the item dictionary with availability,
joint availability (sql/report/*.sql compute them) and the Forma checkpoint's
hyperparameters (from the Forma submission's metadata, next to the paper's canonical
values)."""

from __future__ import annotations

import json
from typing import Any

import duckdb

from proforma.app.report.data import Submission
from proforma.app.report.render import Cell, TablePart, fmt
from proforma.app.store.warehouse import Warehouse

WATERFALL_NOTE = (
    "Rows 1-6 apply one build step each in the build's order; the split rows "
    "partition row 6 by the calendar year of the quarter; the view rows count what "
    "models see (origins need the minimum history)."
)
ITEMS_NOTE = (
    "%raw: share of the build's de-duplicated, YTD-converted firm-quarters (after the "
    "link trim and the financial exclusion, before the scale filter) reporting the "
    "item; %Tr/%Val/%Te: share of the scale-valid firm-quarters of each split. The "
    "CSV also carries the published package's percentages (published_pct_*)."
)


class Unavailable(Exception):
    """An exhibit the warehouse cannot support (its reason is printed and indexed)."""


def _query(wh: Warehouse, step: str) -> list[dict[str, Any]]:
    try:
        return wh.query_step(f"report/{step}").to_pylist()
    except duckdb.CatalogException as exc:
        raise Unavailable(
            f"a table it reads is missing ({str(exc).splitlines()[0][:160]}); run `proforma build`"
        ) from None


def _build_parameters(wh: Warehouse) -> None:
    """The latest build's parameters as SQL variables: the build's stage views read them
    (the financial exclusion's SIC range)."""
    row = (
        wh.fetchone(
            "SELECT CAST(parameters AS VARCHAR) FROM meta.builds WHERE status = 'succeeded' "
            "ORDER BY build_id DESC LIMIT 1"
        )
        if wh.table_exists("meta.builds")
        else None
    )
    if row is None:
        raise Unavailable("no successful build recorded; run `proforma build`")
    params = json.loads(row[0])
    wh.set_params({k: v for k, v in params.items() if isinstance(v, (int, float, str, bool))})


def waterfall(wh: Warehouse) -> TablePart:
    _build_parameters(wh)
    rows = _query(wh, "010_waterfall")
    cells, rules = [], set()
    for i, r in enumerate(rows):
        label = r["stage"] if r["kind"] == "filter" else f"    {r['stage']}"
        cells.append([Cell(label), Cell(fmt(None if r["n"] is None else int(r["n"])))])
        if i + 1 < len(rows) and rows[i + 1]["kind"] != r["kind"]:
            rules.add(i)
    return TablePart(
        "Table A1: Sample formation waterfall",
        ["Stage", "Firm-quarters / count"],
        cells,
        rows,
        rules_after=rules,
        notes=[WATERFALL_NOTE],
    )


def item_dictionary(wh: Warehouse) -> TablePart:
    rows = _query(wh, "020_item_availability")
    cells = [
        [
            Cell(r["item"]),
            Cell(r["description"]),
            Cell(r["statement"]),
            *(Cell(fmt(r[k], 1)) for k in ("pct_raw", "pct_train", "pct_val", "pct_test")),
        ]
        for r in rows
    ]
    return TablePart(
        "Table A2: The 78-item target universe and its reporting availability",
        ["Mnemonic", "Description", "St", "%raw", "%Tr", "%Val", "%Te"],
        cells,
        rows,
        notes=[ITEMS_NOTE],
    )


def joint_availability(wh: Warehouse) -> TablePart:
    rows = {r["sample"]: r for r in _query(wh, "030_joint_availability")}
    samples = [s for s in ("full", "test") if s in rows]
    if not samples:
        raise Unavailable("no scale-valid firm-quarters in the split window")
    # (label, column, digits or "int"); no column: the items' median and range
    spec: list[tuple[str, str | None, int | str | None]] = [
        ("Scale-valid firm-quarters", "firm_quarters", "int"),
        ("Distinct firms", "firms", "int"),
        ("Matrix density (%)", "density", 1),
        ("Items per firm-quarter, mean", "items_mean", 1),
        ("  median [p10, p90]", None, None),
        ("With ≥ 40 items (%)", "pct_ge40", 1),
        ("With ≥ 70 items (%)", "pct_ge70", 1),
        ("Complete-case (all 78, %)", "pct_complete", 2),
        ("Cell density (%): balance sheet", "density_bs", 1),
        ("  income statement", "density_is", 1),
        ("  cash flow", "density_cf", 1),
        ("  derived", "density_der", 1),
    ]
    cells = []
    for label, key, digits in spec:
        row = [Cell(label)]
        for s in samples:
            r = rows[s]
            if key is None:
                row.append(Cell(f"{r['items_median']} [{r['items_p10']}, {r['items_p90']}]"))
            elif isinstance(digits, int):
                row.append(Cell(fmt(r[key], digits)))
            else:
                row.append(Cell(fmt(int(r[key]))))
        cells.append(row)
    labels = {"full": "Full sample", "test": "Test"}
    return TablePart(
        "Table A3: Joint availability of the 78-item vector",
        ["", *(labels[s] for s in samples)],
        cells,
        list(rows.values()),
        rules_after={7},
    )


#: Table A4's groups of rows: a label and the configuration keys it shows (None: fixed text).
_A4: list[tuple[str, list[tuple[str, tuple[str, ...] | None]]]] = [
    (
        "Architecture",
        [
            ("Encoder layers / d_model / heads", ("n_layers", "d_model", "n_heads")),
            ("Feed-forward width / dropout", ("d_ff", "dropout")),
            ("Accounts / industries (embedding rows)", ("n_accounts", "n_industries")),
        ],
    ),
    (
        "Optimization",
        [
            ("Optimizer", None),
            ("Learning rate / schedule", ("lr", "lr_schedule")),
            ("Warm-up steps", ("warmup_steps",)),
            ("Weight decay", ("weight_decay",)),
            ("Gradient-norm clip", ("grad_clip",)),
            ("Batch size (firm-origin sets)", ("batch_size",)),
            ("Epochs", ("epochs",)),
            ("Origins per epoch", ("origins_per_epoch",)),
            ("Precision", ("bf16", "matmul_precision")),
        ],
    ),
    ("Loss", [("Objective (beta-NLL)", ("family", "beta"))]),
    (
        "Horizon curriculum",
        [
            ("Initial -> max horizon", ("horizon_start", "max_horizon")),
            ("Step / epochs at the start", ("horizon_step", "horizon_hold")),
            ("Lookback (quarters)", ("lookback",)),
        ],
    ),
    (
        "Masking probabilities",
        [
            ("Mask entire future block", ("p_mask_future_block",)),
            ("  else mask each future tuple", ("p_mask_future_tuple",)),
            ("Select historical identity instance", ("p_select_instance",)),
            ("Mask ungrouped historical tuple", ("p_mask_ungrouped",)),
        ],
    ),
]


def _value(config: dict[str, Any], keys: tuple[str, ...] | None) -> str:
    if keys is None:
        return "AdamW (default beta, eps)"
    out = []
    for k in keys:
        v = config.get(k)
        if k == "bf16":
            v = "bf16 autocast" if v else "fp32"
        elif v is None:
            v = "all" if k == "origins_per_epoch" else "—"
        out.append(f"{v:g}" if isinstance(v, float) else str(v))
    return " / ".join(out)


def hyperparameters(forma: Submission) -> TablePart:
    from proforma.models.forma.presets import PRESETS

    config = forma.metadata.get("config")
    if not isinstance(config, dict):
        raise Unavailable(f"submission {forma.name!r} records no Forma configuration")
    paper = PRESETS["paper"].to_dict()
    rows, data, rules = [], [], set()
    for group, items in _A4:
        rows.append([Cell(group, bold=True), Cell(""), Cell("")])
        for label, keys in items:
            mine, canon = _value(config, keys), _value(paper, keys)
            rows.append([Cell(f"  {label}"), Cell(mine), Cell(canon)])
            data.append({"group": group, "parameter": label, "checkpoint": mine, "paper": canon})
        rules.add(len(rows) - 1)
    seeds = forma.metadata.get("seeds") or []
    extra = [
        ("Trainable parameters", f"{forma.metadata.get('parameters', 0):,}", "942,210"),
        ("Seeds (mixture components)", ", ".join(map(str, seeds)) or "—", "60-64"),
    ]
    for label, mine, canon in extra:
        rows.append([Cell(label), Cell(mine), Cell(canon)])
        data.append({"group": "Run", "parameter": label, "checkpoint": mine, "paper": canon})
    sha = forma.metadata.get("checkpoints") or {}
    return TablePart(
        f"Table A4: Forma hyperparameters of {forma.name} "
        f"(preset {forma.metadata.get('preset', '?')})",
        ["Setting", "This checkpoint", "Paper (canonical)"],
        rows,
        data,
        rules_after=rules,
        notes=[
            "Checkpoints (sha256, first 16 hex): "
            + (", ".join(f"seed {k}: {v}" for k, v in sha.items()) or "not recorded")
        ],
    )
