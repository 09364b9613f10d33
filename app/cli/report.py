"""`proforma reconcile` and `proforma report`: parse, call the flows (app/flows/reconcile.py,
app/report/), print."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from proforma.app.cli.common import running_server, status_console, summary, writer
from proforma.app.store.settings import get_settings
from proforma.contracts.errors import UserError, WarehouseLocked
from proforma.models.numerics import torch_threads


def reconcile_command(
    submission: Annotated[str, typer.Argument(help="Submission name or id to reconcile.")],
    weights: str = typer.Option(
        "variance", "--weights", help="variance (delta-method weights from sigma) or equal."
    ),
    name: str = typer.Option(
        "",
        "--name",
        help="Name of the derived submission "
        "(default: '<parent> + <weights>-weighted reconciliation').",
    ),
) -> None:
    """Project every forecast statement onto the accounting identities it can satisfy, in
    dollars, and store the result as a derived submission (resumes an interrupted run)."""
    from proforma.app.flows.reconcile import reconcile

    with writer() as wh:
        res = reconcile(wh, submission, weights, name=name or None)
    resumed = f", {res.quarters_resumed} resumed" if res.quarters_resumed else ""
    residual = "n/a" if res.max_residual is None else f"{res.max_residual:.1e}"
    summary(
        f"reconciled {res.statements:,} statements over {res.quarters} origin quarters"
        f"{resumed} ({weights} weights), {res.cells_changed:,} cells changed, largest "
        f"identity residual {residual} of gross; submission {res.submission_id} "
        f"'{res.name}' in {res.elapsed_s:.0f}s (`proforma score` scores it)"
    )


def report_command(
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", help="Folder for the exhibits (default: PROFORMA_REPORT_DIR, data/report)."
        ),
    ] = None,
    against: str = typer.Option(
        "", "--against", help="DM reference of the headline table (default: the Forma submission)."
    ),
    oracle_origins: int = typer.Option(
        768,
        "--oracle-origins",
        min=0,
        help="Test origins of Figure 2's oracle experiment (0 = all; the paper uses 768).",
    ),
    figure2: bool = typer.Option(
        True,
        "--figure2/--no-figure2",
        help="Run the oracle experiment for Figure 2 (needs Forma's "
        "checkpoints; forward passes on CPU take a while).",
    ),
    threads: int = typer.Option(
        0, "--threads", min=0, help="PyTorch threads for Figure 2 (0 = PyTorch's default)."
    ),
) -> None:
    """Write every paper exhibit the warehouse can support: the headline table, Figures 1
    and 2, Table 2 (reconciliation), Tables A1-A4 and calibration, with an index page."""
    from proforma.app.report import write_report
    from proforma.app.store.warehouse import connect

    folder = out or get_settings().report_dir
    if folder.exists() and not folder.is_dir():
        raise UserError(f"--out {folder} is a file, not a folder")
    try:
        wh = connect(read_only=True)
    except WarehouseLocked as locked:
        server = running_server(locked)
        served = get_settings().report_dir / "index.html"
        raise UserError(
            f"`proforma report` reads every score of the warehouse {server.warehouse} (the "
            f"public snapshot holds only aggregates over enough cells, not the exhibits' "
            f"inputs), and `proforma serve` (pid {server.pid}) holds it for writing. The last "
            f"report is at {server.url}/report/"
            + (f" ({served})" if served.is_file() else "")
            + "; stop the server to write a new one."
        ) from None
    with wh, torch_threads(threads):
        result = write_report(
            wh,
            folder,
            against=against or None,
            oracle_origins=oracle_origins,
            figure2=figure2,
            log=status_console.print,
        )
    summary(
        f"report: {len(result.exhibits)} exhibits ({len(result.files)} files) in {folder}"
        + (f"; left out: {', '.join(result.skipped)}" if result.skipped else "")
        + f"; open {folder / 'index.html'} or /report when served"
    )
