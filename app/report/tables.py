"""The results tables: Table 1 (headline, Panels A/B/C x footprints), Table 2 (coherence
and reconciliation), and calibration by horizon. Values come from each footprint's latest
score run (app/report/data.py); this module only lays them out."""

from __future__ import annotations

import math
from typing import Any

from proforma.app.report.data import Run, Submission, dm_mark, forma_reference
from proforma.app.report.render import Cell, TablePart, best_in_column, fmt
from proforma.contracts.metrics import METRICS, Better, Kind
from proforma.contracts.tracks import TRACKS

FOOTPRINT_LABELS = {
    "full": "Full sample",
    "geert": "Geert. sample",
    "llm": "LLM sample",
    "oracle": "Oracle sample",
}
STAR_NOTE = (
    "Significance: Diebold–Mariano against {ref} within column (quarter-clustered, "
    "Newey–West, HLN-corrected); * / ** / *** {ref} better at 10 / 5 / 1%, † the "
    "row's model better at 1%. Dashes: no forecast on that sample."
)
MCS_NOTE = (
    "° in the column's 90% model confidence set (Hansen, Lunde and Nason 2011, T_max "
    "statistic, the track's loss), from a two-way bootstrap that resamples firms and "
    "blocks of origin quarters (docs/scoring.md); the set is over the footprint's whole "
    "board, which may hold models not shown here (a column with no ° has its set among "
    "them). The data file gives each value's 95% interval and probability of ranking first."
)


TABLE2_NOTE = (
    "Reconciled cells are scored on the same common sample as the raw forecasts (untouched "
    "cells pass through unchanged). Identity viol.: median over enforced identity instances "
    "(firm x origin x horizon x identity with every member forecast, test origins) of "
    "|sum s_j v_j| / sum |v_j| of the dollar statement (the raw forecasts' plug-in dollars; "
    "the projection's output). Viol. after ±6 clip: the same for the stored forecasts taken "
    "back to dollars; reconciled values beyond the standardized space's clip at ±6 are "
    "scored clipped, like the truth, and no longer add up. Significance: Diebold–Mariano against {parent} "
    "(quarter-clustered, Newey–West, HLN): * / ** / *** raw better at 10 / 5 / 1%, † "
    "variant better at 1%."
)


def footprint_label(run: Run) -> str:
    cells = f"{run.n_cells / 1e6:.2f}M" if run.n_cells >= 1e5 else f"{run.n_cells:,}"
    return f"{FOOTPRINT_LABELS.get(run.footprint, run.footprint)} ({cells})"


def _order(
    runs: list[Run], subs: dict[int, Submission], first: Submission | None
) -> tuple[list[int], int]:
    """Row order: the models of the first footprint (reference first, then by R2), then
    the others (by their first footprint's R2); returns (ids, rows in the first group)."""
    head = runs[0]

    def r2(run: Run, sid: int) -> float:
        v = run.metric(sid, "r2")
        return -math.inf if v is None else v

    group1 = [s for s in head.submission_ids if s in subs and not subs[s].is_auxiliary]
    group1.sort(key=lambda s: (first is None or s != first.submission_id, -r2(head, s)))
    rest: list[int] = []
    for run in runs[1:]:
        more = [
            s
            for s in run.submission_ids
            if s in subs and not subs[s].is_auxiliary and s not in group1 and s not in rest
        ]
        rest += sorted(more, key=lambda s: -r2(run, s))
    return group1 + rest, len(group1)


def headline(
    runs: list[Run], subs: dict[int, Submission], against: Submission | None
) -> tuple[list[TablePart], list[str]]:
    """Panels A (R2, squared loss DM), B (MAE, absolute loss DM), C (density scores)."""
    refs_a = _references(runs, subs, against, "gaussian")
    refs_b = _references(runs, subs, against, "laplace")
    order, n_first = _order(runs, subs, refs_a[runs[0].score_run_id])
    labels = [footprint_label(r) for r in runs]
    parts = []
    for panel, track, refs in (
        ("Panel A: squared-error track, change-space R² (conditional means)", "squared", refs_a),
        ("Panel B: absolute-error track, MAE (medians)", "absolute", refs_b),
    ):
        rows, data = _track_rows(runs, subs, order, track, refs)
        parts.append(TablePart(panel, ["Model", *labels], rows, data, rules_after={n_first - 1}))
    parts.append(_density_panel(runs, subs, order))
    named = {r.name for r in list(refs_a.values()) + list(refs_b.values()) if r is not None}
    ref_text = " / ".join(sorted(named)) or "the reference"
    notes = [STAR_NOTE.format(ref=ref_text)]
    if any(r.rank_sets for r in runs):
        notes.append(MCS_NOTE)
    return parts, notes


def _references(
    runs: list[Run], subs: dict[int, Submission], against: Submission | None, family: str
) -> dict[int, Submission | None]:
    """Each run's DM reference: `against` where the run scored it, else Forma of `family`."""
    return {
        r.score_run_id: against
        if against is not None and against.submission_id in r.submission_ids
        else forma_reference(r, subs, family)
        for r in runs
    }


def _track_rows(
    runs: list[Run],
    subs: dict[int, Submission],
    order: list[int],
    track: str,
    refs: dict[int, Submission | None],
) -> tuple[list[list[Cell]], list[dict[str, Any]]]:
    """A track's panel: a row per model (its metric in each run, the column's best in bold,
    DM and model-confidence-set marks) and a data record per value."""
    # the track's ranking metric, its direction and its DM loss (contracts/tracks.py)
    spec = TRACKS[track]
    metric, loss, higher = spec.metric, spec.dm_loss or track, not spec.ascending
    values = {
        (sid, r.score_run_id): r.metric(sid, metric) if sid in r.submission_ids else None
        for sid in order
        for r in runs
    }
    best = {
        r.score_run_id: best_in_column([values[(s, r.score_run_id)] for s in order], higher)
        for r in runs
    }
    reference_ids = {
        ref.submission_id for ref in (refs[r.score_run_id] for r in runs) if ref is not None
    }
    rows, data = [], []
    for i, sid in enumerate(order):
        row = [Cell(subs[sid].name, bold=sid in reference_ids)]
        for run in runs:
            v = values[(sid, run.score_run_id)]
            ref = refs[run.score_run_id]
            mark, record = _value_record(run, subs[sid].name, sid, v, ref, track, metric, loss)
            row.append(Cell(fmt(v), bold=best[run.score_run_id] == i, mark=mark))
            if v is not None:
                data.append(record)
        rows.append(row)
    return rows, data


def _value_record(
    run: Run,
    model: str,
    sid: int,
    v: float | None,
    ref: Submission | None,
    track: str,
    metric: str,
    loss: str,
) -> tuple[str, dict[str, Any]]:
    """A model's value in a run: its mark (DM stars against the reference, ° in the model
    confidence set) and its data record (with the DM test, the interval, the rank set's)."""
    stat = p = None
    mark = ""
    if v is not None and ref is not None and ref.submission_id != sid:
        stat, p = run.compare(ref.submission_id, sid, loss)
        mark = dm_mark(stat, p)
    p_best, in_mcs = run.rank_sets.get((track, sid), (None, None))
    lo, hi = run.intervals.get((sid, metric), (None, None))
    if in_mcs:
        mark += "°"
    return mark, {
        "footprint": run.footprint,
        "footprint_version": run.version,
        "score_run_id": run.score_run_id,
        "model": model,
        "submission_id": sid,
        "metric": metric,
        "value": v,
        "dm_reference": None if ref is None else ref.name,
        "dm_stat": stat,
        "p_value": p,
        "mark": mark,
        "ci_lo": lo,
        "ci_hi": hi,
        "p_best": p_best,
        "in_mcs": in_mcs,
    }


#: Panel C's metrics (the paper's Table 1); labels, directions and nominal levels are the
#: definitions' (contracts/metrics.py).
PANEL_C = ("nll", "crps", "cov50", "cov90")


def _density_panel(runs: list[Run], subs: dict[int, Submission], order: list[int]) -> TablePart:
    metrics = [(k, METRICS[k].label, METRICS[k].target) for k in PANEL_C if k in METRICS]
    dens = [s for s in order if subs[s].has_sigma]
    columns, groups, rows, data = ["Model"], [], [[Cell(subs[s].name)] for s in dens], []
    for run in runs:
        groups.append((footprint_label(run), len(metrics), run.footprint))
        for key, label, nominal in metrics:
            columns.append(label)
            vals = [
                None
                if s not in run.submission_ids or (key == "nll" and subs[s].point_mass_cells)
                else run.metric(s, key)
                for s in dens
            ]
            if nominal is None:
                best = best_in_column(vals, higher=METRICS[key].better is Better.higher)
            else:
                best = best_in_column(
                    [None if v is None else -abs(v - nominal) for v in vals], higher=True
                )
            for i, (sid, v) in enumerate(zip(dens, vals)):
                rows[i].append(Cell(fmt(v), bold=best == i))
                if v is not None:
                    data.append(
                        {
                            "footprint": run.footprint,
                            "score_run_id": run.score_run_id,
                            "model": subs[sid].name,
                            "submission_id": sid,
                            "metric": key,
                            "value": v,
                        }
                    )
    notes = ["Bold: the best NLL and CRPS, and the coverage nearest its nominal level."]
    for sid in dens:
        sub = subs[sid]
        if sub.point_mass_cells:
            notes.append(
                f"{sub.name}: no NLL. Its sigma is the spread of its simulated paths, and on "
                f"{sub.point_mass_cells:,} of its {sub.density_cells:,} cells "
                f"({sub.point_mass_cells / max(sub.density_cells, 1):.1%}) every path agrees "
                "(an item the simulation holds constant), so its density there is a point "
                "mass with sigma at the 1e-4 floor; the few realized values off that point "
                "make the mean Gaussian NLL a matter of the floor, not of the forecast. CRPS "
                "and coverage are finite for a point mass and are shown."
            )
    return TablePart(
        "Panel C: density track (proper scores and central-interval coverage)",
        columns,
        rows,
        data,
        groups=groups,
        notes=notes,
    )


def _share(v: float | None) -> str:
    return fmt(v, pct=True) if v is None or v >= 1e-4 else f"{v:.1e}"


def coherence_table(
    run: Run,
    parent: Submission,
    children: dict[str, Submission | None],
    coherence: dict[int, tuple[int, float | None]],
    recs: dict[int, dict[str, Any]],
) -> TablePart:
    """Table 2: the raw statements and their reconciliations, DM against the raw model.
    Violation: of the dollar statements themselves (the raw plug-in dollars; the
    projection's output); after the clip: of the stored forecasts taken back to dollars."""
    rows, data = [], []
    entries = [("Transformer-only (raw)", parent)] + [
        (f"+ {w}-weighted reconciliation", children.get(w)) for w in ("variance", "equal")
    ]
    r2s = [run.metric(s.submission_id, "r2") if s else None for _, s in entries]
    maes = [run.metric(s.submission_id, "mae") if s else None for _, s in entries]
    best_r2, best_mae = best_in_column(r2s, True), best_in_column(maes, False)
    for i, (label, sub) in enumerate(entries):
        if sub is None:
            rows.append([Cell(label)] + [Cell("—") for _ in range(5)])
            continue
        marks = {}
        for loss in ("squared", "absolute"):
            stat, p = (
                run.compare(parent.submission_id, sub.submission_id, loss) if i else (None, None)
            )
            marks[loss] = (dm_mark(stat, p), stat, p)
        rec = recs.get(sub.submission_id, {})
        inst, stored = coherence.get(sub.submission_id, (None, None))
        own = stored if i == 0 else rec.get("median_violation")
        rows.append(
            [
                Cell(label),
                Cell(fmt(r2s[i]), bold=best_r2 == i, mark=marks["squared"][0]),
                Cell(fmt(maes[i]), bold=best_mae == i, mark=marks["absolute"][0]),
                Cell(_share(own)),
                Cell(_share(stored)),
                Cell(fmt(rec.get("instances", inst))),
            ]
        )
        data.append(
            {
                "variant": label,
                "submission_id": sub.submission_id,
                "model": sub.name,
                "score_run_id": run.score_run_id,
                "footprint": run.footprint,
                "r2": r2s[i],
                "mae": maes[i],
                "dm_r2_stat": marks["squared"][1],
                "dm_r2_p": marks["squared"][2],
                "dm_mae_stat": marks["absolute"][1],
                "dm_mae_p": marks["absolute"][2],
                "median_identity_violation": own,
                "median_violation_after_clip": stored,
                "identity_instances": rec.get("instances", inst),
                "max_identity_violation": rec.get("max_violation"),
                "cells_changed": rec.get("cells_changed"),
                "max_projection_residual": rec.get("max_residual"),
            }
        )
    notes = [
        f"Footprint {footprint_label(run)}, score run {run.score_run_id}. "
        + TABLE2_NOTE.format(parent=parent.name)
    ]
    return TablePart(
        "Table 2: Coherence and its cost",
        ["Variant", "R²", "MAE", "Identity viol.", "Viol. after ±6 clip", "Instances"],
        rows,
        data,
        notes=notes,
    )


def calibration_tables(run: Run, subs: dict[int, Submission]) -> list[TablePart]:
    """Per density submission: the calibration metrics (z² and coverage: the density
    metrics best at a target) pooled and by horizon."""
    parts = []
    keys = tuple(
        m.name for m in METRICS.values() if m.kind is Kind.density and m.better is Better.target
    )
    for sid in run.submission_ids:
        if sid not in subs or not subs[sid].has_sigma:
            continue
        rows, data = [], []
        for h in [None, *range(1, 21)]:
            level = "global" if h is None else "horizon"
            vals = [run.metric(sid, k, level, h) for k in keys]
            if all(v is None for v in vals):
                continue
            rows.append([Cell("pooled" if h is None else str(h)), *(Cell(fmt(v)) for v in vals)])
            data.append(
                {
                    "model": subs[sid].name,
                    "submission_id": sid,
                    "horizon": h or 0,
                    **dict(zip(keys, vals)),
                }
            )
        parts.append(
            TablePart(
                f"{subs[sid].name} ({footprint_label(run)})",
                ["Horizon", *(METRICS[k].label for k in keys)],
                rows,
                data,
                rules_after={0},
            )
        )
    return parts
