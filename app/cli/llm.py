"""`proforma run llm`, `proforma llm prompt` and `proforma llm sample`: the LLM panel
(docs/llm.md). Parsing and printing only; the flow is proforma.app.flows.llm."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer
from rich.table import Table

from proforma.app.cli.common import console, progress_bars, summary, writer
from proforma.contracts.errors import UserError
from proforma.contracts.quarters import parse_quarter

if TYPE_CHECKING:  # rich.progress and the flow load with the commands that use them
    from proforma.app.flows.llm import LlmRunSummary


def _money(value: float | None) -> str:
    return "n/a (model not in the prices table)" if value is None else f"${value:,.2f}"


def run_llm_command(
    provider: str = typer.Option(..., "--provider", help="anthropic, openai or fake (offline)."),
    model: str = typer.Option(
        None,
        "--model",
        help="The vendor's model id (e.g. claude-opus-4-8, "
        "gpt-5.5); the fake provider's default is fake-srw.",
    ),
    arm: str = typer.Option(
        "unstructured", "--arm", help="Prompt arm: unstructured or structured."
    ),
    samples: int = typer.Option(
        1,
        "--samples",
        min=1,
        help="Draws per origin: draw 1 is the main run; draws 2..K run on "
        "the decoding-noise subset and are summarized.",
    ),
    limit: int = typer.Option(
        None, "--limit", min=1, help="Only the first N origins of the llm sample (sampler order)."
    ),
    noise_origins: int = typer.Option(
        200, "--noise-origins", min=1, help="Size of the decoding-noise subset (for --samples > 1)."
    ),
    concurrency: int = typer.Option(4, "--concurrency", min=1, help="Calls in flight at once."),
    effort: str = typer.Option(
        None,
        "--effort",
        help="Reasoning effort (anthropic: output_config.effort, default "
        "adaptive; openai: reasoning.effort, default medium).",
    ),
    temperature: float = typer.Option(None, "--temperature", help="Default: the provider's."),
    max_tokens: int = typer.Option(64_000, "--max-tokens", min=1, help="Output-token limit."),
    score: bool = typer.Option(True, "--score/--no-score", help="Score on the llm footprint."),
) -> None:
    """Forecast the llm footprint's origins with an LLM; write and score its submissions.

    Answers are cached, so a rerun never pays twice and an interrupted run resumes.
    """
    from proforma.app.flows.llm import run_llm
    from proforma.models.llm.providers import make_provider

    llm = make_provider(
        provider, model, effort=effort, temperature=temperature, max_tokens=max_tokens
    )
    with writer() as wh, progress_bars() as bars:

        def progress(label: str, total: int):
            task = bars.add_task(label, total=total)
            return lambda _result: bars.advance(task)

        result = run_llm(
            wh,
            llm,
            arm,
            draws=samples,
            limit=limit,
            noise_origins=noise_origins,
            concurrency=concurrency,
            score=score,
            progress=progress,
        )
    _print_draws(result)
    scored = f"; score run {result.score_run_id} on footprint llm" if result.score_run_id else ""
    summary(
        f"{result.provider}/{result.model} {result.arm}: {len(result.draws)} draw(s), cost "
        f"{_money(result.cost())} (new calls {_money(result.cost(new_only=True))}, prices as "
        f"of {result.prices_as_of or 'n/a'}){scored}"
    )


def _print_draws(result: LlmRunSummary) -> None:
    """A line per draw (its submission, answers, tokens and cost) and, for several draws,
    the decoding noise by horizon."""
    for d in result.draws:
        console.print(
            f"draw {d.draw}: submission {d.submission_id} {d.name!r}: {d.forecast_origins:,} of "
            f"{d.origins:,} origins forecast ({d.incomplete} from incomplete answers, {d.failed} "
            f"without a usable answer), {d.rows:,} rows; {d.calls:,} calls ({d.cached:,} cached), "
            f"{d.input_tokens:,} input / {d.output_tokens:,} output tokens, cost "
            f"{_money(d.cost_usd)} (new calls {_money(d.new_cost_usd)})",
            highlight=False,
        )
    if result.noise:
        table = Table(
            "horizon",
            "origins",
            "cells",
            "mean cross-draw sd",
            title=f"Decoding noise over {len(result.draws)} draws (standardized space)",
        )
        for r in result.noise:
            table.add_row(
                str(r["horizon"]), f"{r['n_origins']:,}", f"{r['n_cells']:,}", f"{r['mean_sd']:.4f}"
            )
        console.print(table)


def prompt_command(
    firm: str = typer.Option(None, "--firm", help="gvkey (default: the sample's first origin)."),
    origin: str = typer.Option(None, "--origin", help="Origin quarter, e.g. 2015Q4."),
    arm: str = typer.Option("unstructured", "--arm", help="unstructured or structured."),
    system: bool = typer.Option(False, "--system", help="Print the arm's system prompt instead."),
) -> None:
    """Print the exact prompt an LLM gets for an origin of the llm sample."""
    from proforma.app.flows.llm import origin_histories, run_origins
    from proforma.models.llm.prompts import system_prompt, user_message

    if system:
        console.print(system_prompt(arm), markup=False, highlight=False, soft_wrap=True)
        return
    if (firm is None) != (origin is None):
        raise UserError("Give both --firm and --origin, or neither (the sample's first origin)")
    q = parse_quarter(origin) if origin is not None else None
    with writer() as wh:
        if firm is not None and not (
            wh.table_exists("panel.firms")
            and wh.scalar("SELECT count(*) FROM panel.firms WHERE gvkey = ?", [firm])
        ):
            raise UserError(f"No firm {firm} in the panel")
        origins, _ = run_origins(wh)
        if firm is not None:
            origins = origins.filter(
                [
                    g == firm and o == q
                    for g, o in zip(
                        origins["gvkey"].to_pylist(), origins["origin_q"].to_pylist(), strict=True
                    )
                ]
            )
            if origins.num_rows == 0:
                raise UserError(
                    f"Firm {firm} at {origin} is not an origin of the llm sample "
                    "(`proforma llm sample` shows it)"
                )
        history = origin_histories(wh, origins.slice(0, 1))[0]
    console.print(user_message(history), markup=False, highlight=False, soft_wrap=True)


def sample_command(
    redraw: bool = typer.Option(False, "--redraw", help="Draw a new version of the llm footprint."),
    origins: int = typer.Option(None, "--origins", min=4, help="Sample size (default 2,103)."),
    seed: int = typer.Option(None, "--seed", help="Sampler seed (default 20240101)."),
) -> None:
    """Show the llm footprint's origin sample (origins, firms, origins per year)."""
    from proforma.app.scoring import ensure_standard_footprints, get_footprint
    from proforma.app.scoring.footprints.llm import (
        LLM_ORIGINS,
        LLM_SEED,
        create_llm_footprint,
        sample_counts,
    )

    if (origins is not None or seed is not None) and not redraw:
        raise UserError("--origins and --seed draw a new sample: add --redraw")
    with writer() as wh:
        wh.require_panel("panel.truth")
        if redraw:
            create_llm_footprint(wh, n_origins=origins or LLM_ORIGINS, seed=seed or LLM_SEED)
        else:
            ensure_standard_footprints(wh)
        fp = get_footprint(wh, "llm")
        counts = sample_counts(wh, fp["footprint_id"])
    years = ", ".join(f"{y}: {n}" for y, n in counts["by_year"].items())
    console.print(f"origins per year: {years}", highlight=False)
    if counts["pool_origins"] is not None:
        console.print(
            f"eligible pool: {counts['pool_origins']:,} origins across "
            f"{counts['pool_firms']:,} firms",
            highlight=False,
        )
    summary(
        f"footprint llm version {fp['version']}: {counts['origins']:,} origins across "
        f"{counts['firms']:,} firms, {fp['n_cells']:,} scoreable cells"
    )
