"""`proforma run chronos`: Chronos-2 zero-shot quantile forecasts of the test split.

Parses and prints only; the run itself is proforma.app.flows.chronos.run_chronos.
"""

from __future__ import annotations

import typer

from proforma.app.cli.common import summary, writer
from proforma.models.chronos import QUANTILE_LEVELS
from proforma.models.chronos.loading import DEVICES, DTYPES, PUBLIC_CHECKPOINT
from proforma.models.numerics import torch_threads


def chronos_command(
    model: str = typer.Option(
        PUBLIC_CHECKPOINT,
        "--model",
        help="A folder holding a copy of amazon/chronos-2 (these machines "
        "cannot download it), or a hub id where the network allows.",
    ),
    device: str = typer.Option(
        "cpu", "--device", help=f"Where the model runs: {', '.join(DEVICES)}."
    ),
    dtype: str = typer.Option(
        "float32",
        "--dtype",
        help=f"Model weights and arithmetic: {', '.join(DTYPES)} (bfloat16 on GPUs).",
    ),
    batch_size: int = typer.Option(
        256,
        "--batch-size",
        min=1,
        help="Series (items) per forward pass; an origin's items stay together.",
    ),
    chunk_origins: int = typer.Option(
        256,
        "--chunk-origins",
        min=1,
        help="Origins per cached chunk: a rerun resumes after the last finished chunk.",
    ),
    footprint: str = typer.Option(
        None,
        "--footprint",
        help="Forecast only this origin-sample footprint's origins (e.g. llm); "
        "default every test origin.",
    ),
    name: str = typer.Option(None, "--name", help="Submission name (default chronos-2)."),
    score: bool = typer.Option(
        True, "--score/--no-score", help="Score the submission when written."
    ),
    threads: int = typer.Option(
        0, "--threads", min=0, help="CPU threads for PyTorch (0 = its default, one per core)."
    ),
) -> None:
    """Chronos-2 zero-shot: 21 quantiles per test cell, one quantile submission, scored (resumable)."""
    from proforma.app.flows.chronos import ChronosOptions, run_chronos

    options = ChronosOptions(
        model=model,
        device=device,
        dtype=dtype,
        batch_size=batch_size,
        chunk_origins=chunk_origins,
        footprint=footprint,
        name=name,
        score=score,
    )
    with torch_threads(threads), writer() as wh:
        r = run_chronos(wh, options)
    computed, cached = r["computed_origins"], r["origins"] - r["computed_origins"]
    where = []
    if computed:
        where.append(
            f"{computed:,} forecast now at {computed / max(r['forecast_s'], 1e-9):.1f} origins/s"
        )
    if cached:
        where.append(f"{cached:,} from the cache")
    runs = f"; score runs {r['score_runs']}" if r.get("score_runs") else ""
    summary(
        f"{r['name']}: {r['origins']:,} origins ({', '.join(where)}; cache {r['cache']}); "
        f"{r['cells_written']:,} realized cells x {len(QUANTILE_LEVELS)} quantiles written "
        f"(of {r['cells']:,} forecast cells, {r['crossed_cells']:,} had crossing quantiles, "
        f"sorted), submission {r['submission_id']}{runs}"
    )
