"""The report's exhibits, one function each: what it reads from the score runs and the
warehouse, the files it writes, and `Unavailable` with the reason when the warehouse
cannot support it (proforma.app.report.writer runs them in order)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from proforma.app.report import appendix, data, figures, tables
from proforma.app.report.appendix import Unavailable
from proforma.app.report.render import TablePart, write_csv, write_latex, write_markdown
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.errors import UserError


@dataclass
class Exhibit:
    key: str
    title: str
    files: list[Path] = field(default_factory=list)
    parts: list[TablePart] = field(default_factory=list)
    images: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class Inputs:
    """What every exhibit reads: the newest score run of each footprint, the submissions,
    and per run the Diebold-Mariano reference and the comparator it is tested against."""

    wh: Warehouse
    folder: Path
    runs: list[data.Run]
    subs: dict[int, data.Submission]
    #: the submission `--against` names (None: each run's Forma submission)
    reference: data.Submission | None
    refs: dict[int, data.Submission | None]
    comps: dict[int, data.Submission | None]
    forma: data.Submission | None


def read_inputs(wh: Warehouse, folder: Path, against: str | None) -> Inputs:
    """The score runs and submissions the exhibits read (a UserError without a run)."""
    subs = data.submissions(wh) if wh.table_exists("eval.submissions") else {}
    runs = data.latest_runs(wh)
    if not runs:
        raise UserError("No score runs in the warehouse: run `proforma score` first")
    reference = data.resolve(subs, against) if against else None
    refs = {
        r.score_run_id: reference
        if reference is not None and reference.submission_id in r.submission_ids
        else data.forma_reference(r, subs)
        for r in runs
    }
    comps = {r.score_run_id: data.comparator(r, subs, refs[r.score_run_id]) for r in runs}
    return Inputs(wh, folder, runs, subs, reference, refs, comps, forma_submission(runs, subs))


def name(sub: data.Submission | None, default: str | None) -> str | None:
    return sub.name if sub is not None else default


def forma_submission(
    runs: list[data.Run], subs: dict[int, data.Submission]
) -> data.Submission | None:
    for run in runs:
        found = data.forma_reference(run, subs)
        if found is not None:
            return found
    formas = [s for s in subs.values() if s.is_forma]
    return max(formas, key=lambda s: s.submission_id) if formas else None


def table_exhibit(
    folder: Path, key: str, title: str, parts: list[TablePart], notes: list[str]
) -> Exhibit:
    """A table exhibit: the same parts as CSV, Markdown and LaTeX."""
    files = [
        write_csv(folder / f"{key}.csv", parts),
        write_markdown(folder / f"{key}.md", title, parts, notes),
        write_latex(folder / f"{key}.tex", title, f"tab:{key}", parts, notes),
    ]
    return Exhibit(key, title, files, parts, notes=notes)


def headline(inp: Inputs) -> Exhibit:
    parts, notes = tables.headline(inp.runs, inp.subs, inp.reference)
    return table_exhibit(
        inp.folder, "table1_headline", "Table 1: Test-set results by loss geometry", parts, notes
    )


def figure1(inp: Inputs) -> Exhibit:
    paths, rows = figures.figure1(inp.folder, inp.runs, inp.subs, inp.refs, inp.comps)
    csv = write_csv(inp.folder / "figure1_r2_by_horizon.csv", [TablePart("", [], [], rows)])
    notes = [
        f"{r.footprint}: {name(inp.refs[r.score_run_id], '—')} vs "
        f"{name(inp.comps[r.score_run_id], '—')}"
        for r in inp.runs
    ]
    return Exhibit(
        "figure1",
        "Figure 1: Change-space R² by horizon",
        [*paths, csv],
        images=[paths[0]],
        notes=["DM markers at 5%: " + "; ".join(notes)],
    )


def figure2(inp: Inputs, origins: int, log: Callable[[str], None]) -> Exhibit:
    """The oracle experiment (app/flows/scenario.py) with the Forma submission's own
    checkpoints: pin the realized revenue path, compare the other cells."""
    from proforma.app.flows.scenario import load_forma, oracle_experiment

    forma = inp.forma
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
    summary, breakdown, n = oracle_experiment(inp.wh, models, origins=origins, progress=True)
    paths = figures.figure2(inp.folder, breakdown, "revtq")
    top = summary.to_pylist()
    note = (
        f"{forma.name}, Forma {preset}/{family} seed(s) {', '.join(map(str, seeds))} "
        f"(mixture mean); {n:,} test origins, {top[0]['cells']:,} non-pinned cells."
    )
    ex = table_exhibit(
        inp.folder,
        "figure2_oracle_scenario",
        "Figure 2: Scenario conditioning (oracle)",
        [_oracle_part(top, breakdown)],
        [note],
    )
    ex.files = [*paths, *ex.files]
    ex.images = [paths[0]]
    log(
        f"oracle experiment: {n:,} origins, MAE {top[0]['mae_uncond']:.3f} -> {top[0]['mae_cond']:.3f}"
    )
    return ex


_ORACLE_MEASURES = ("mae_uncond", "mae_cond", "d_mae", "r2_uncond", "r2_cond", "d_r2")


def _oracle_part(summary: list[dict], breakdown: pa.Table) -> TablePart:
    """Figure 2's table: the summary's overall and statement rows (the horizons are the
    figure's), with the statement x horizon breakdown as its data."""
    return TablePart(
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
                *(tables.Cell(tables.fmt(r[k])) for k in _ORACLE_MEASURES),
            ]
            for r in summary
            if r["group"] != "horizon"
        ],
        breakdown.to_pylist(),
    )


def table2(inp: Inputs) -> Exhibit:
    """Coherence and its cost: Forma beside its variance- and equal-weighted
    reconciliations, from a score run that holds them all."""
    forma = inp.forma
    if forma is None:
        raise Unavailable("no Forma submission")
    children = _reconciliations(inp.wh, inp.subs, forma)
    present = [c for c in children.values() if c is not None]
    if not present:
        raise Unavailable(
            f"{forma.name} has no reconciled submission: run `proforma reconcile "
            f"{forma.name!r} --weights variance` (and equal), then `proforma score`"
        )
    wanted = {forma.submission_id, *(c.submission_id for c in present)}
    run = _run_holding(inp.wh, inp.runs, wanted)
    part = tables.coherence_table(
        run, forma, children, data.coherence(inp.wh), data.reconciliations(inp.wh)
    )
    return table_exhibit(
        inp.folder, "table2_coherence", "Table 2: Coherence and its cost", [part], []
    )


def _reconciliations(
    wh: Warehouse, subs: dict[int, data.Submission], forma: data.Submission
) -> dict[str, data.Submission | None]:
    """Per weighting, the newest reconciliation of `forma` scored beside it, else the
    newest (None without one)."""

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
        children[w] = next((k for k in kids if scored_with_parent(k)), kids[0] if kids else None)
    return children


def _run_holding(wh: Warehouse, runs: list[data.Run], wanted: set[int]) -> data.Run:
    """The newest board run that scored every submission in `wanted`, else the newest
    score run that did."""
    run = next((r for r in runs if wanted <= set(r.submission_ids)), None)
    if run is not None:
        return run
    row = wh.fetchone(
        "SELECT max(score_run_id) FROM eval.score_runs WHERE list_has_all(submission_ids, ?)",
        [sorted(wanted)],
    )
    if row is None or row[0] is None:
        raise Unavailable("the reconciled submissions are not scored yet: run `proforma score`")
    return data.run_by_id(wh, int(row[0]))


def table_a1(inp: Inputs) -> Exhibit:
    return table_exhibit(
        inp.folder,
        "tableA1_waterfall",
        "Table A1: Sample formation waterfall",
        [appendix.waterfall(inp.wh)],
        [],
    )


def table_a2(inp: Inputs) -> Exhibit:
    return table_exhibit(
        inp.folder,
        "tableA2_items",
        "Table A2: Item dictionary",
        [appendix.item_dictionary(inp.wh)],
        [],
    )


def table_a3(inp: Inputs) -> Exhibit:
    return table_exhibit(
        inp.folder,
        "tableA3_joint_availability",
        "Table A3: Joint availability",
        [appendix.joint_availability(inp.wh)],
        [],
    )


def table_a4(inp: Inputs) -> Exhibit:
    if inp.forma is None:
        raise Unavailable("no Forma submission")
    return table_exhibit(
        inp.folder,
        "tableA4_forma_hyperparameters",
        "Table A4: Forma hyperparameters",
        [appendix.hyperparameters(inp.forma)],
        [],
    )


def calibration(inp: Inputs) -> Exhibit:
    subs = inp.subs
    run = next(
        (r for r in inp.runs if any(subs[s].has_sigma for s in r.submission_ids if s in subs)),
        None,
    )
    if run is None:
        raise Unavailable("no density forecast (no submission with sigma) in any score run")
    parts = tables.calibration_tables(run, subs)
    ex = table_exhibit(
        inp.folder, "calibration", "Calibration: z² and coverage by horizon", parts, []
    )
    paths = figures.calibration(inp.folder, run, subs, data.pit(inp.wh, run))
    ex.files = [*paths, *ex.files]
    ex.images = [paths[0]]
    return ex
