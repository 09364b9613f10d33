"""`proforma export`: the built panel in a published file layout, a submission's forecasts
as the published submission file, or an eval result table as CSV or JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from proforma.app.cli.common import status_console, summary, writer


def export_command(
    target: str = typer.Argument(
        ...,
        help="With --layout: the folder to write into. With --submission: the .parquet "
        "file to write. Without either: an eval table "
        "(metrics | quarter_losses | dm_tests | pit | coverage | score_runs | "
        "coherence | submissions | footprints), as `proforma export` of scoring.",
    ),
    layout: str = typer.Option(
        None,
        "--layout",
        help="Export in a file layout: proforma20q (the built panel as the "
        "published package writes it) or compustat (the raw panel as its "
        "download writes it).",
    ),
    run: int = typer.Option(None, "--run", help="(eval tables) Only this score run's rows."),
    fmt: str = typer.Option("csv", "--format", help="(eval tables) csv | json."),
    out: Annotated[
        Path | None, typer.Option("--out", help="(eval tables) File to write (default stdout).")
    ] = None,
    tag: str = typer.Option(
        "pf_full__r13_node_optionD_indfe_val8",
        "--tag",
        help="(layout) The dataset tag in the file names, as the published package names them.",
    ),
    imputation: bool = typer.Option(
        True,
        "--imputation/--no-imputation",
        help="(layout) Tabular features factor-imputed, as the package ships them (default).",
    ),
    submission: str = typer.Option(
        None,
        "--submission",
        help="Write this submission's forecasts (its id, or the current one of this name: an "
        "upload, a model, a reference baseline) as the published submission file TARGET, "
        "with its family sidecar {stem}.nll.json beside it.",
    ),
) -> None:
    """Export the panel (--layout proforma20q|compustat DIR), a submission's forecasts
    (--submission NAME FILE.parquet) or an eval result table."""
    if submission is not None:
        _export_forecasts(submission, Path(target))
        return
    if layout is None:
        _export_table(target, run, fmt, out)
        return
    from proforma.app.flows.export import export

    out_dir = Path(target)
    with writer() as wh:
        written = export(
            wh,
            out_dir,
            layout,
            on_file=lambda name, n: status_console.print(f"wrote {name}: {n:,} rows"),
            tag=tag,
            imputed=imputation,
        )
    summary(f"{len(written)} files in {out_dir} (layout {layout})")


def _export_table(table: str, run: int | None, fmt: str, out: Path | None) -> None:
    """An eval result table as CSV or JSON (stdout or --out)."""
    from proforma.app.scoring import export_table, table_to_text
    from proforma.app.scoring.leaderboard import write_text

    with writer() as wh:
        result = export_table(wh, table, score_run_id=run)
    write_text(table_to_text(result, fmt), out)
    summary(f"{result.num_rows:,} row(s) of eval.{table} written to {out or 'stdout'}")


def _export_forecasts(submission: str, out: Path) -> None:
    """A submission's forecasts as the published submission file (and its sidecar)."""
    from proforma.app.flows.forecast_file import write_forecast_file

    key: int | str = int(submission) if submission.isdigit() else submission
    with writer() as wh:
        written = write_forecast_file(wh, key, out)
    side = f" and {written.sidecar.name} ({written.family})" if written.sidecar else ""
    summary(
        f"{written.rows:,} rows of submission {written.submission_id} ({written.name}) "
        f"written to {out}{side}"
    )
