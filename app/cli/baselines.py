"""`proforma run baselines` and `proforma run impute`: parse, call the competitor flow
(app/flows/baselines.py), print."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import typer

from proforma.app.cli.common import progress_bars, status_console, summary, writer
from proforma.app.flows.baselines import parse_which, run_baselines
from proforma.contracts.errors import UserError
from proforma.models.baselines import suite
from proforma.models.baselines.fanout import ENGINES, Tracker
from proforma.models.baselines.presets import PRESETS
from proforma.models.numerics import torch_threads

if TYPE_CHECKING:
    from rich.progress import Progress


class RichTracker(Tracker):
    """Progress bars on the console, one per stage."""

    def __init__(self, progress: Progress):
        self.progress = progress

    def stage(self, label: str, total: int) -> Callable[[int], None]:
        task = self.progress.add_task(label, total=total or None)
        return lambda n: self.progress.advance(task, n)

    def note(self, text: str) -> None:
        self.progress.console.print(text, highlight=False)


def baselines_command(
    which: str = typer.Option(
        ",".join(suite.names()), "--which", help=f"Comma-separated: {','.join(suite.names())}."
    ),
    preset_name: str = typer.Option(
        "paper",
        "--preset",
        help="paper: the exact specification; demo: small grids, few trees, "
        "subsampled rows (docs/baselines.md).",
    ),
    engine: str = typer.Option("joblib", "--engine", help=f"Fan-out engine: {', '.join(ENGINES)}."),
    jobs: int = typer.Option(
        1, "--jobs", "-j", help="Parallel workers for the per-(item, horizon) fits."
    ),
    scheduler: str = typer.Option(
        None, "--scheduler", help="Dask scheduler address (engine=dask)."
    ),
    score: bool = typer.Option(True, "--score/--no-score", help="Score each model's forecasts."),
    reimpute: bool = typer.Option(False, "--reimpute", help="Recompute the imputed tabular view."),
    threads: int = typer.Option(
        0,
        "--threads",
        min=0,
        help="CPU threads for the FFNNs' PyTorch (0 = PyTorch's default, one "
        "per core); 1 on a CPU shared with other jobs.",
    ),
) -> None:
    """Fit the tabular competitors, write their forecasts and score them (resumable)."""
    models = parse_which(which)
    uses_torch = any(suite.get(m).torch for m in models)
    if preset_name not in PRESETS:
        raise UserError(f"Unknown preset {preset_name!r}; choose one of {', '.join(PRESETS)}")
    if preset_name == "demo":
        notes = {suite.get(m).demo_note: m for m in reversed(models)}
        for note, m in reversed(notes.items()):
            status_console.print(f"[dim]demo preset, {m}: {note}[/]", highlight=False)
    with torch_threads(threads if uses_torch else 0), writer() as wh, progress_bars() as progress:
        results = run_baselines(
            wh,
            models,
            preset_name,
            engine=engine,
            n_jobs=jobs,
            scheduler=scheduler,
            score=score,
            reimpute=reimpute,
            tracker=RichTracker(progress),
        )
    total = sum(r["fit_s"] for r in results)
    parts = ", ".join(
        f"{r['model']} {r['fit_s']:.0f}s (submission {r['submission_id']})" for r in results
    )
    runs = results[0].get("score_runs") if results else None
    scored = f"; score runs {runs}" if runs else ""
    summary(f"{len(results)} competitor(s) fit in {total:.0f}s: {parts}{scored}")


def impute_command() -> None:
    """(Re)compute the tabular imputation: local-XS 10-factor fills of the view per quarter."""
    from proforma.app.model_inputs.imputed import build_imputed

    with writer() as wh, progress_bars() as progress:
        r = build_imputed(wh, tracker=RichTracker(progress))
    summary(
        f"imputed {r['cells_filled']:,} cells in {r['rows']:,} rows over {r['quarters']} quarters "
        f"in {r['elapsed_s']:.1f}s (imputation {r['imputation_id']})"
    )
