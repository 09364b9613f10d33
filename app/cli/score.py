"""`proforma submit`, `score`, `leaderboard`, `footprint ...`, `baselines reference`."""

from __future__ import annotations

import json
import math
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import pyarrow as pa
import typer
from rich.table import Table

from proforma.app.cli.common import (
    RunningServer,
    console,
    running_server,
    status_console,
    summary,
    writer,
)
from proforma.contracts import families
from proforma.contracts.errors import UserError, ValidationError, WarehouseLocked

if TYPE_CHECKING:
    from proforma.app.store.warehouse import Warehouse


def _report_problems(exc: ValidationError) -> None:
    table = Table(title="submission problems", show_lines=False)
    for col in ("severity", "problem", "rows", "examples"):
        table.add_column(col, overflow="fold")
    for p in exc.problems:
        colour = "red" if p.get("severity", "error") == "error" else "yellow"
        table.add_row(
            f"[{colour}]{p.get('severity', 'error')}[/]",
            p["problem"],
            f"{p['count']:,}",
            "\n".join(str(e) for e in p["examples"]),
        )
    status_console.print(table)


def submit_command(
    # str, not Path: typer coerces a Path through pydantic, which every submit's start
    # would import (bench/start_imports.py)
    file: Annotated[
        str,
        typer.Argument(
            help="Parquet file: firm, target, origin, horizon, prediction[, sigma][, component] "
            "or [, quantile_level]"
        ),
    ],
    name: Annotated[str, typer.Option("--name", help="Name on the leaderboard.")],
    family: Annotated[
        str | None,
        typer.Option(
            "--family",
            help=f"Density family of sigma: {families.describe()} (default: the file's "
            f"{{stem}}.nll.json sidecar, else {families.DEFAULT_FAMILY}); a file with a "
            "quantile_level column is a quantile forecast.",
        ),
    ] = None,
    df: Annotated[
        float | None,
        typer.Option(
            "--df", help=f"Degrees of freedom ({' or '.join(families.families_with('df'))})."
        ),
    ] = None,
    replace: Annotated[
        bool, typer.Option("--replace", help="Replace a submission of that name.")
    ] = False,
    then_score: Annotated[
        bool,
        typer.Option(
            "--score",
            help="Then score it on --footprint in the same process (as `proforma score -s NAME`).",
        ),
    ] = False,
    footprint: Annotated[
        str, typer.Option("--footprint", "-f", help="Footprint for --score (name or name@version).")
    ] = "full",
    no_coherence: Annotated[
        bool, typer.Option("--no-coherence", help="With --score: skip the identity checks.")
    ] = False,
) -> None:
    """Validate a submission file and store it (nothing is written when it is rejected);
    with --score, score it right away."""
    from proforma.app.scoring import ingest_parquet
    from proforma.app.scoring.submissions.uploads import family_sidecar

    path = Path(file)
    if family is None:
        declared = family_sidecar(path)
        family, df = declared if declared else (families.DEFAULT_FAMILY, df)
        if declared:
            status_console.print(
                f"family {family}" + (f" (df {df:g})" if df else "") + f" from {path.stem}.nll.json"
            )
    with writer() as wh:
        try:
            with status_console.status(f"checking and loading {path.name} ..."):
                sid = ingest_parquet(wh, path, name, family=family, df=df, replace=replace)
        except ValidationError as exc:
            _report_problems(exc)
            raise
        row = wh.one(
            "SELECT rows, n_components, warnings FROM eval.submissions WHERE submission_id = ?",
            [sid],
        )
        warnings = json.loads(row[2] or "[]")
        for w in warnings:
            status_console.print(
                f"[yellow]warning:[/] {w['problem']}: {w['count']:,} rows "
                f"(e.g. {'; '.join(map(str, w['examples'][:2]))})"
            )
        done = (
            f"submission {sid} {name!r}: {row[0]:,} rows, {row[1]} component(s), "
            f"{len(warnings)} warning(s)"
        )
        if not then_score:
            summary(f"{done}; score it with `proforma score`")
            return
        status_console.print(done)
        _score_and_report(wh, footprint, [str(sid)], coherence=not no_coherence, full=False)


def score_command(
    footprint: Annotated[
        str, typer.Option("--footprint", "-f", help="Footprint name (or name@version).")
    ] = "full",
    submissions: Annotated[
        list[str] | None,
        typer.Option("--submission", "-s", help="Submission name or id (repeat); default: all."),
    ] = None,
    no_coherence: Annotated[
        bool, typer.Option("--no-coherence", help="Skip the identity checks.")
    ] = False,
    full: Annotated[
        bool,
        typer.Option("--full", help="Recompute every stored cell score and result (same numbers)."),
    ] = False,
) -> None:
    """Score submissions on a footprint's common sample. Without -s: every submission, the
    reference baselines of the build included (made first if missing, said in one line);
    with -s: only those named (`proforma baselines reference` makes the references)."""
    with writer() as wh:
        _score_and_report(wh, footprint, submissions or None, coherence=not no_coherence, full=full)


def _score_and_report(
    wh: Warehouse,
    footprint: str,
    submissions: list[str] | None,
    *,
    coherence: bool,
    full: bool,
) -> None:
    """One score run, its coverage table and summary line. Scoring every submission makes
    the build's missing reference baselines first (one line says so); scoring named ones
    leaves them alone and says so in one line when they are missing."""
    from proforma.app.scoring import (
        missing_reference_baselines,
        run_reference_baselines,
        run_summary,
        score,
    )
    from proforma.app.scoring.runs import refresh_board

    missing = missing_reference_baselines(wh) if wh.table_exists("panel.truth") else []
    if missing and submissions is None:
        with status_console.status("reference baselines ..."):
            run_reference_baselines(wh)
        status_console.print(
            f"made the reference baselines of this build ({', '.join(missing)}) "
            "and scored them with the rest",
            highlight=False,
        )
    elif missing:
        status_console.print(
            f"reference baselines not made for this build ({', '.join(missing)}): "
            "`proforma baselines reference` makes them; this run scores only the named "
            "submissions",
            highlight=False,
        )
    with status_console.status(f"scoring on footprint {footprint} ..."):
        run = score(
            wh,
            footprint,
            submissions,
            coherence=coherence,
            full=full,
            progress=lambda text: status_console.print(f"[dim]{text}[/]", highlight=False),
        )
    info = run_summary(wh, run)
    table = Table(title=f"coverage of {info['footprint_name']}@{info['footprint_version']}")
    for col in ("id", "submission", "cells predicted", "coverage"):
        table.add_column(col)
    for c in info["coverage"]:
        table.add_row(
            str(c["submission_id"]),
            c["name"],
            f"{c['predicted_cells']:,}",
            f"{c['coverage']:.1%}" if c["coverage"] is not None else "-",
        )
    console.print(table)
    if submissions is not None:
        # a run of named submissions is not the board: the board is the footprint's
        # whole current membership on its common sample (eval.board_runs)
        with status_console.status(f"the board of footprint {footprint} ..."):
            board = refresh_board(wh, footprint)
        members = wh.scalar(
            "SELECT len(submission_ids) FROM eval.score_runs WHERE score_run_id = ?", [board]
        )
        status_console.print(
            f"board of {footprint}: score run {board}, {members} submission(s)", highlight=False
        )
    summary(
        f"score run {run}: {len(info['submission_ids'])} submission(s) on "
        f"{info['n_cells']:,} common cells of {info['footprint_cells']:,} in "
        f"{info['footprint_name']}@{info['footprint_version']} "
        f"({info['elapsed_s']:.1f}s, scoring SQL {info['eval_sql_version']})"
    )


def _fmt(v: object) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.4f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def leaderboard_command(
    footprint: Annotated[
        str, typer.Option("--footprint", "-f", help="Footprint (name[@version]).")
    ] = "full",
    track: Annotated[
        str, typer.Option("--track", help="squared | absolute | density.")
    ] = "squared",
    by: Annotated[str | None, typer.Option("--by", help="horizon | item | statement.")] = None,
    fmt: Annotated[str, typer.Option("--format", help="table | csv | json.")] = "table",
    out: Annotated[Path | None, typer.Option("--out", help="Write csv/json here.")] = None,
    against: Annotated[
        str | None,
        typer.Option(
            "--against", help="DM reference: a submission name or id (default: the leader)."
        ),
    ] = None,
    clean_after: Annotated[
        str | None,
        typer.Option(
            "--clean-after",
            help="Rank on the clean slice of the origins after this quarter (e.g. 2015Q4): "
            "the members whose declared training cutoff is at or before it.",
        ),
    ] = None,
) -> None:
    """Print a footprint's board (or export it): every current submission on its common
    sample, with bootstrap intervals, P(best) and the model confidence set."""
    from proforma.app.scoring import leaderboard, table_to_text
    from proforma.app.scoring.leaderboard import provenance, write_text
    from proforma.contracts.metrics import METRICS, Better

    if fmt not in ("table", "csv", "json"):
        raise UserError(f"Unknown format {fmt!r}: use table, csv or json")
    try:
        with writer() as wh:
            table = leaderboard(wh, footprint, track, by, against=against, clean_after=clean_after)
    except WarehouseLocked as locked:
        server = running_server(locked)
        table = _served_leaderboard(server, footprint, track, by, against, clean_after)
        status_console.print(server.note(), highlight=False, soft_wrap=True)
    meta = provenance(table)
    if fmt == "table":
        t = Table(
            title=f"{track} track, {meta.get('footprint_name')}@"
            f"{meta.get('footprint_version')} ({int(meta.get('n_cells') or 0):,} cells)"
        )
        hidden = {"submission_id", "source", "family", "n_components", "mcs_p", "clean_after"}
        # the intervals and clean-slice scores are in --format csv / json
        cols = [
            c
            for c in table.column_names
            if c not in hidden and not c.endswith(("_lo", "_hi", "_clean", "clean_cells"))
        ]
        arrows = {Better.higher: " ↑", Better.lower: " ↓", Better.target: " →←"}
        for c in cols:
            # a metric's header says which way is better (contracts/metrics.py)
            head = c + (arrows[METRICS[c].better] if c in METRICS else "")
            t.add_column(head, justify="left" if c in ("model", "item", "statement") else "right")
        for row in table.to_pylist():
            t.add_row(*[_fmt(row[c]) for c in cols])
        console.print(t)
    else:
        write_text(table_to_text(table, fmt), out)
    summary(
        f"{table.num_rows} row(s) from score run {meta.get('score_run_id')} "
        f"(build {meta.get('build_id')}, scoring SQL {meta.get('eval_sql_version')})"
    )


def _served_leaderboard(
    server: RunningServer,
    footprint: str,
    track: str,
    by: str | None,
    against: str | None,
    clean_after: str | None = None,
) -> pa.Table:
    """The same leaderboard (proforma.app.scoring.leaderboard, run by the server) from its API."""
    if "@" in footprint:
        raise UserError(
            f"The server's API serves a footprint's latest version only ({footprint!r}); "
            "stop the server to read an older version."
        )
    answer = server.get(
        f"/api/v1/leaderboards/{urllib.parse.quote(footprint)}",
        track=track,
        by=by or "global",
        against=against,
        clean_after=clean_after,
    )
    columns = answer["columns"]
    table = pa.Table.from_pylist(
        [{c: row.get(c) for c in columns} for row in answer["rows"]],
        schema=None if answer["rows"] else pa.schema([(c, pa.string()) for c in columns]),
    )
    run = answer.get("score_run") or {}
    meta = {
        k: run.get(k)
        for k in (
            "score_run_id",
            "footprint_name",
            "footprint_version",
            "n_cells",
            "build_id",
            "eval_sql_version",
        )
    }
    return table.replace_schema_metadata({"provenance": json.dumps(meta)})


def footprint_create(
    name: Annotated[str, typer.Argument(help="Footprint name; re-creating adds a version.")],
    where: Annotated[
        str,
        typer.Option(
            "--where",
            help="Predicate over firm, origin, item, horizon, e.g. "
            "\"item IN ('revtq','niq') AND horizon <= 8\".",
        ),
    ] = "TRUE",
    from_submissions: Annotated[
        list[str] | None,
        typer.Option("--from", help="Freeze the common sample of these submissions (repeat)."),
    ] = None,
    n_origins: Annotated[
        int | None, typer.Option("--origins", help="Seeded calendar-balanced origin sample size.")
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the origin sample.")] = 20240101,
    split: Annotated[str, typer.Option("--split", help="train | val | test.")] = "test",
    description: Annotated[str | None, typer.Option("--description")] = None,
) -> None:
    """Create a footprint: a predicate, an origin sample, or a frozen common sample."""
    from proforma.app.scoring import create_footprint, get_footprint
    from proforma.app.scoring.submissions.current import resolve_submissions

    with writer() as wh:
        ids = resolve_submissions(wh, from_submissions) if from_submissions else None
        with status_console.status(f"creating footprint {name} ..."):
            fid = create_footprint(
                wh,
                name,
                predicate=where,
                submissions=ids,
                n_origins=n_origins,
                seed=seed,
                split=split,
                description=description,
            )
        fp = get_footprint(wh, name)
        summary(
            f"footprint {name}@{fp['version']} (id {fid}, {fp['kind']}): "
            f"{fp['n_cells']:,} scoreable cells"
        )


def footprint_import(
    name: Annotated[str, typer.Argument(help="Footprint name; re-importing adds a version.")],
    mask: Annotated[
        Path,
        typer.Argument(
            help="A published sample mask: a keys parquet (firm, target, origin, horizon) or a "
            "grid-aligned bitmap (.npy, np.packbits over the test grid)."
        ),
    ],
    grid_rows: Annotated[
        Path | None,
        typer.Option(
            "--grid-rows",
            help="The bitmap's row index (parquet of firm, origin in the mask's row "
            "order): realigns it onto this build by value.",
        ),
    ] = None,
    description: Annotated[str | None, typer.Option("--description")] = None,
) -> None:
    """Import a published sample mask as a frozen footprint (e.g. the paper's Full sample)."""
    from proforma.app.scoring.footprints.mask_import import import_footprint

    with writer() as wh, status_console.status(f"importing {mask.name} ..."):
        info = import_footprint(wh, name, mask, grid_rows=grid_rows, description=description)
    rows = "" if info["rows_matched"] is None else f", {info['rows_matched']:,} grid rows matched"
    summary(
        f"footprint {name}@{info['version']} (id {info['footprint_id']}): "
        f"{info['mask_cells']:,} mask cells, {info['keys_off_grid']:,} not at a test origin "
        f"here{rows}; {info['n_cells']:,} scoreable cells"
    )


def footprint_list() -> None:
    """List footprints and their versions."""
    from proforma.app.scoring import ensure_standard_footprints, list_footprints

    try:
        with writer() as wh:
            if wh.table_exists("panel.truth"):
                ensure_standard_footprints(wh)
            rows = list_footprints(wh).to_pylist()
    except WarehouseLocked as locked:
        server = running_server(locked)
        rows = server.get("/api/v1/footprints")["rows"]
        status_console.print(server.note(), highlight=False, soft_wrap=True)
    t = Table(title="footprints")
    for c in ("name", "version", "kind", "cells", "predicate", "description"):
        t.add_column(c, overflow="fold")
    for r in rows:
        t.add_row(
            r["name"],
            str(r["version"]),
            r["kind"],
            _fmt(r["n_cells"]),
            (r["predicate"] or "")[:60],
            r.get("description") or "",
        )
    console.print(t)
    summary(f"{len(rows)} footprint version(s)")


def baselines_reference(
    force: Annotated[bool, typer.Option("--force", help="Recompute even if current.")] = False,
) -> None:
    """Make the seasonal random walk and fade / AR(1) forecasts (SQL) for the current build."""
    from proforma.app.scoring import run_reference_baselines
    from proforma.app.store.warehouse import IN_IDS

    with writer() as wh:
        with status_console.status("reference baselines ..."):
            ids = run_reference_baselines(wh, force=force)
        rows = wh.fetchall(
            "SELECT submission_id, name, rows FROM eval.submissions "
            f"WHERE submission_id {IN_IDS} ORDER BY 1",
            [ids],
        )
    for sid, name, n in rows:
        console.print(f"{sid}: {name} ({n:,} rows)")
    summary(f"{len(rows)} reference baseline(s) current")
