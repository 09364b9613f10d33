"""`proforma ingest synthetic`, `proforma synthetic validate` and `proforma oracle`."""

from __future__ import annotations

import typer

from proforma.app.cli.common import console, status_console, summary, writer
from proforma.contracts.quarters import parse_quarter

# The simulator, its checks and the oracle are imported by the commands that use them:
# every `proforma` command loads this module, and the simulator would weigh on each start
# (bench/start_imports.py).


def ingest_synthetic(
    firms: int = typer.Option(
        None, help="Firms to generate (default: 1,000 at demo, 34,000 at full scale)."
    ),
    start: int = typer.Option(1971, help="First calendar year of filings."),
    end: int = typer.Option(2024, help="Last calendar year of filings."),
    seed: int = typer.Option(20, help="Random seed; equal options give identical data."),
    scale: str = typer.Option(
        "demo", help="demo (fast, ~45k firm-quarters) or full (~1.2M after the build's filters)."
    ),
    oracle_origins: int = typer.Option(
        None, help="Test origins with oracle paths (default 200 demo, 2,000 full)."
    ),
    oracle_paths: int = typer.Option(64, help="Simulated future paths per oracle origin."),
    no_train_item: list[str] = typer.Option(  # noqa: B008
        [],
        "--no-train-item",
        help="An item no firm reports before 2002 (repeatable): a modern item without "
        "training data.",
    ),
    test_only_item: list[str] = typer.Option(  # noqa: B008
        [],
        "--test-only-item",
        help="An item no firm reports before 2010 (repeatable): it appears only in test.",
    ),
    single_quarter_share: float = typer.Option(
        0.0, help="Share of firms that file a single quarter."
    ),
    fyr_change_rate: float = typer.Option(
        None, help="Probability of a fiscal-year change per firm-quarter (default 0.0015)."
    ),
    through: str = typer.Option(
        None,
        "--through",
        help="Grow the panel forward to this quarter (e.g. 2026Q2), past --end: the same "
        "options give bit-identical history through --end plus the new quarters, with oracle "
        "paths from the frontier (docs/rounds.md).",
    ),
) -> None:
    """Generate the synthetic panel (raw.fundq with YTD cash flows, company_industry,
    ccm_link) and the oracle paths, replacing the raw tables in one transaction."""
    from proforma.app.sources import ingest
    from proforma.app.sources.synthetic import SyntheticConfig, SyntheticSource

    cfg = SyntheticConfig.for_scale(
        scale,
        firms=firms,
        start=start,
        end=end,
        seed=seed,
        oracle_origins=oracle_origins,
        oracle_paths=oracle_paths,
        no_train_items=tuple(no_train_item) or None,
        test_only_items=tuple(test_only_item) or None,
        single_quarter_share=single_quarter_share or None,
        fyr_change_rate=fyr_change_rate,
        through=parse_quarter(through) if through else None,
    )
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    with Progress(
        TextColumn("[bold]synthetic"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("quarters"),
        TimeElapsedColumn(),
        console=status_console,
        transient=True,
    ) as bar:
        task = bar.add_task("history", total=cfg.n_quarters)
        source = SyntheticSource(cfg, progress=lambda q: bar.advance(task))
        with writer() as wh:
            result = ingest(wh, source)
    sim = source.simulation
    extra = f"; {cfg.firms:,} firms, {sim.fyr_changes:,} fiscal-year changes" if sim else ""
    summary(result.line() + extra)


def validate(
    all_items: bool = typer.Option(
        False, "--all-items", help="List availability for all 78 items."
    ),
) -> None:
    """Print the validation report of the current raw tables: identity residuals,
    availability by split vs items.csv, joint availability vs the paper, YTD
    consistency, persistence and seasonality."""
    from proforma.app.sources.synthetic.validation import check_sql, render, validation_report

    check_sql()
    with writer() as wh:
        report = validation_report(wh)
    render(report, console, all_items=all_items)
    mad = report.availability_mad()
    summary(
        f"{report.identity_violations} identity violation(s); availability within "
        + ", ".join(f"{v:.1f} pp ({k})" for k, v in mad.items())
        + " of items.csv on average"
    )


def oracle_command(
    name: str = typer.Option("oracle", help="Submission name on the leaderboard."),
) -> None:
    """Score the oracle of a synthetic panel: its simulated futures, standardized with each
    origin's frozen parameters, averaged (mu) with their spread (sigma). Needs
    `proforma ingest synthetic` and `proforma build`."""
    with writer() as wh:
        from proforma.app.flows.oracle import submit_oracle

        submission_id, rows = submit_oracle(wh, name)
    summary(f"oracle submission {submission_id} ({name}): {rows:,} forecast cells")
