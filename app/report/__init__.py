"""`proforma report`: every paper exhibit the warehouse supports, written as files in one
run (docs/report.md). Tables as CSV, Markdown and LaTeX; figures as PNG and SVG; an
index page (index.html) and a manifest (manifest.json) list them with the score runs
they come from. The warehouse is only read; Figure 2 runs Forma's forward passes (the
oracle experiment of app/flows/scenario.py) when its checkpoints are on disk.

An exhibit the warehouse cannot support (no reconciled submissions, no Forma checkpoint,
no density forecasts) is left out with its reason in the index, the manifest and the
command's summary line, never with a traceback.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from proforma.app.report import appendix, data, figures, tables
from proforma.app.report.appendix import Unavailable
from proforma.app.report.index import write_index
from proforma.app.report.render import TablePart, write_csv, write_latex, write_markdown
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.errors import UserError
from proforma.contracts.provenance import utcnow

MANIFEST = "manifest.json"


@dataclass
class Exhibit:
    key: str
    title: str
    files: list[Path] = field(default_factory=list)
    parts: list[TablePart] = field(default_factory=list)
    images: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class ReportResult:
    folder: Path
    exhibits: list[Exhibit]
    skipped: list[str]
    files: list[Path]
    provenance: dict[str, Any]


def _tables(
    folder: Path, key: str, title: str, parts: list[TablePart], notes: list[str]
) -> Exhibit:
    files = [
        write_csv(folder / f"{key}.csv", parts),
        write_markdown(folder / f"{key}.md", title, parts, notes),
        write_latex(folder / f"{key}.tex", title, f"tab:{key}", parts, notes),
    ]
    return Exhibit(key, title, files, parts, notes=notes)


def _clear_previous(folder: Path) -> None:
    """Files of the previous report in `folder` (its manifest lists them) go first, so
    the index never links an exhibit this run left out."""
    old = folder / MANIFEST
    if not old.exists():
        return
    try:
        listed = json.loads(old.read_text()).get("files", [])
    except (OSError, ValueError):
        return
    for name in listed:
        path = folder / name
        if path.parent == folder and path.is_file():
            path.unlink()


def write_report(
    wh: Warehouse,
    folder: Path,
    *,
    against: str | None = None,
    oracle_origins: int = 768,
    figure2: bool = True,
    log: Callable[[str], None] = print,
) -> ReportResult:
    """Write every exhibit to `folder`; returns what was written and what was left out."""
    t0 = time.perf_counter()
    subs = data.submissions(wh) if wh.table_exists("eval.submissions") else {}
    runs = data.latest_runs(wh)
    if not runs:
        raise UserError("No score runs in the warehouse: run `proforma score` first")
    folder.mkdir(parents=True, exist_ok=True)
    _clear_previous(folder)
    reference = data.resolve(subs, against) if against else None
    exhibits: list[Exhibit] = []
    skipped: list[str] = []

    def attempt(key: str, title: str, make: Callable[[], Exhibit]) -> None:
        started = time.perf_counter()
        try:
            ex = make()
        except Unavailable as why:
            skipped.append(f"{title}: {why}")
            log(f"[yellow]{title}: left out ({why})[/]")
            return
        exhibits.append(ex)
        log(f"{title}: {len(ex.files)} files, {time.perf_counter() - started:.1f}s")

    def headline() -> Exhibit:
        parts, notes = tables.headline(runs, subs, reference)
        return _tables(
            folder, "table1_headline", "Table 1: Test-set results by loss geometry", parts, notes
        )

    refs = {
        r.score_run_id: reference
        if reference is not None and reference.submission_id in r.submission_ids
        else data.forma_reference(r, subs)
        for r in runs
    }
    comps = {r.score_run_id: data.comparator(r, subs, refs[r.score_run_id]) for r in runs}

    def figure1() -> Exhibit:
        paths, rows = figures.figure1(folder, runs, subs, refs, comps)
        csv = write_csv(folder / "figure1_r2_by_horizon.csv", [TablePart("", [], [], rows)])
        notes = [
            f"{r.footprint}: {_name(refs[r.score_run_id], '—')} vs "
            f"{_name(comps[r.score_run_id], '—')}"
            for r in runs
        ]
        return Exhibit(
            "figure1",
            "Figure 1: Change-space R² by horizon",
            [*paths, csv],
            images=[paths[0]],
            notes=["DM markers at 5%: " + "; ".join(notes)],
        )

    forma = _forma_submission(runs, subs)
    attempt("table1", "Table 1 (headline)", headline)
    attempt("figure1", "Figure 1 (R² by horizon)", figure1)
    if figure2:
        attempt(
            "figure2",
            "Figure 2 (oracle scenario)",
            lambda: _figure2(wh, folder, forma, oracle_origins, log),
        )
    else:
        skipped.append("Figure 2 (oracle scenario): --no-figure2")
    attempt("table2", "Table 2 (coherence)", lambda: _table2(wh, folder, runs, subs, forma))
    attempt(
        "tableA1",
        "Table A1 (waterfall)",
        lambda: _tables(
            folder,
            "tableA1_waterfall",
            "Table A1: Sample formation waterfall",
            [appendix.waterfall(wh)],
            [],
        ),
    )
    attempt(
        "tableA2",
        "Table A2 (item dictionary)",
        lambda: _tables(
            folder, "tableA2_items", "Table A2: Item dictionary", [appendix.item_dictionary(wh)], []
        ),
    )
    attempt(
        "tableA3",
        "Table A3 (joint availability)",
        lambda: _tables(
            folder,
            "tableA3_joint_availability",
            "Table A3: Joint availability",
            [appendix.joint_availability(wh)],
            [],
        ),
    )
    attempt("tableA4", "Table A4 (Forma hyperparameters)", lambda: _table_a4(folder, forma))
    attempt("calibration", "Calibration", lambda: _calibration(wh, folder, runs, subs))
    provenance = {
        "generated_at": utcnow().isoformat(timespec="seconds"),
        "warehouse": str(wh.path),
        "build_id": wh.scalar("SELECT max(build_id) FROM meta.builds WHERE status = 'succeeded'")
        if wh.table_exists("meta.builds")
        else None,
        "score_runs": {
            r.footprint: {
                "score_run_id": r.score_run_id,
                "version": r.version,
                "n_cells": r.n_cells,
                "finished_at": str(r.finished_at),
            }
            for r in runs
        },
        "dm_reference": {r.footprint: _name(refs[r.score_run_id], None) for r in runs},
        "elapsed_s": None,
    }
    provenance["elapsed_s"] = round(time.perf_counter() - t0, 1)
    index = write_index(folder, exhibits, skipped, provenance)
    files = [p for ex in exhibits for p in ex.files] + [index]
    manifest = folder / MANIFEST
    manifest.write_text(
        json.dumps(
            {
                "provenance": provenance,
                "skipped": skipped,
                "exhibits": [
                    {"key": e.key, "title": e.title, "files": [p.name for p in e.files]}
                    for e in exhibits
                ],
                "files": [p.name for p in files],
            },
            indent=1,
            default=str,
        )
    )
    return ReportResult(folder, exhibits, skipped, files + [manifest], provenance)


def _name(sub: data.Submission | None, default: str | None) -> str | None:
    return sub.name if sub is not None else default


def _forma_submission(
    runs: list[data.Run], subs: dict[int, data.Submission]
) -> data.Submission | None:
    for run in runs:
        found = data.forma_reference(run, subs)
        if found is not None:
            return found
    formas = [s for s in subs.values() if s.is_forma]
    return max(formas, key=lambda s: s.submission_id) if formas else None


def _figure2(
    wh: Warehouse,
    folder: Path,
    forma: data.Submission | None,
    origins: int,
    log: Callable[[str], None],
) -> Exhibit:
    from proforma.app.flows.scenario import load_forma, oracle_experiment

    if forma is None:
        raise Unavailable("no Forma submission")
    meta = forma.metadata
    preset, family = meta.get("preset"), meta.get("family", "gaussian")
    if not preset:
        raise Unavailable(f"submission {forma.name!r} records no Forma preset")
    try:
        models, seeds, _ = load_forma(preset, family, meta.get("seeds"), "cpu")
    except UserError as exc:
        raise Unavailable(str(exc)) from None
    summary, breakdown, n = oracle_experiment(wh, models, origins=origins, progress=True)
    paths = figures.figure2(folder, breakdown, "revtq")
    top = summary.to_pylist()
    part = TablePart(
        "Oracle experiment: pin the realized revenue path",
        [
            "Group",
            "Key",
            "Cells",
            "MAE uncond.",
            "MAE cond.",
            "ΔMAE",
            "R² uncond.",
            "R² cond.",
            "ΔR²",
        ],
        [
            [
                tables.Cell(str(r["group"])),
                tables.Cell(str(r["key"])),
                tables.Cell(f"{r['cells']:,}"),
                *(
                    tables.Cell(tables.fmt(r[k]))
                    for k in ("mae_uncond", "mae_cond", "d_mae", "r2_uncond", "r2_cond", "d_r2")
                ),
            ]
            for r in top
            if r["group"] != "horizon"
        ],
        breakdown.to_pylist(),
    )
    note = (
        f"{forma.name}, Forma {preset}/{family} seed(s) {', '.join(map(str, seeds))} "
        f"(mixture mean); {n:,} test origins, {top[0]['cells']:,} non-pinned cells."
    )
    ex = _tables(
        folder,
        "figure2_oracle_scenario",
        "Figure 2: Scenario conditioning (oracle)",
        [part],
        [note],
    )
    ex.files = [*paths, *ex.files]
    ex.images = [paths[0]]
    log(
        f"oracle experiment: {n:,} origins, MAE {top[0]['mae_uncond']:.3f} -> {top[0]['mae_cond']:.3f}"
    )
    return ex


def _table2(
    wh: Warehouse,
    folder: Path,
    runs: list[data.Run],
    subs: dict[int, data.Submission],
    forma: data.Submission | None,
) -> Exhibit:
    if forma is None:
        raise Unavailable("no Forma submission")

    def scored_with_parent(kid: data.Submission) -> bool:
        pair = [forma.submission_id, kid.submission_id]
        return bool(
            wh.scalar(
                "SELECT count(*) FROM eval.score_runs WHERE list_has_all(submission_ids, ?)", [pair]
            )
        )

    children: dict[str, data.Submission | None] = {}
    for w in ("variance", "equal"):
        kids = sorted(
            (
                s
                for s in subs.values()
                if s.parent_id == forma.submission_id and s.method == f"reconcile/{w}"
            ),
            key=lambda s: -s.submission_id,
        )
        # the newest reconciliation scored beside its parent, else the newest
        children[w] = next((k for k in kids if scored_with_parent(k)), kids[0] if kids else None)
    present = [c for c in children.values() if c is not None]
    if not present:
        raise Unavailable(
            f"{forma.name} has no reconciled submission: run `proforma reconcile "
            f"{forma.name!r} --weights variance` (and equal), then `proforma score`"
        )
    wanted = {forma.submission_id, *(c.submission_id for c in present)}
    run = next((r for r in runs if wanted <= set(r.submission_ids)), None)
    if run is None:
        row = wh.fetchone(
            "SELECT max(score_run_id) FROM eval.score_runs WHERE list_has_all(submission_ids, ?)",
            [sorted(wanted)],
        )
        if row is None or row[0] is None:
            raise Unavailable("the reconciled submissions are not scored yet: run `proforma score`")
        run = data.run_by_id(wh, int(row[0]))
    part = tables.coherence_table(
        run, forma, children, data.coherence(wh), data.reconciliations(wh)
    )
    return _tables(folder, "table2_coherence", "Table 2: Coherence and its cost", [part], [])


def _table_a4(folder: Path, forma: data.Submission | None) -> Exhibit:
    if forma is None:
        raise Unavailable("no Forma submission")
    return _tables(
        folder,
        "tableA4_forma_hyperparameters",
        "Table A4: Forma hyperparameters",
        [appendix.hyperparameters(forma)],
        [],
    )


def _calibration(
    wh: Warehouse, folder: Path, runs: list[data.Run], subs: dict[int, data.Submission]
) -> Exhibit:
    run = next(
        (r for r in runs if any(subs[s].has_sigma for s in r.submission_ids if s in subs)), None
    )
    if run is None:
        raise Unavailable("no density forecast (no submission with sigma) in any score run")
    parts = tables.calibration_tables(run, subs)
    ex = _tables(folder, "calibration", "Calibration: z² and coverage by horizon", parts, [])
    paths = figures.calibration(folder, run, subs, data.pit(wh, run))
    ex.files = [*paths, *ex.files]
    ex.images = [paths[0]]
    return ex
