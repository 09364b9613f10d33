"""`proforma build` and `proforma audit identities`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from proforma.app.cli.common import console, status_console, summary, writer
from proforma.app.flows.build import BuildParams, explain, run_build
from proforma.app.scoring.footprints.standard import ensure_standard_footprints
from proforma.app.scoring.positional import cell_layout
from proforma.app.store.sqlfiles import sql_file
from proforma.contracts.rules import DEFAULT_RULES, RuleSet


def build_command(
    reg_stats: str = typer.Option(
        "estimate",
        "--reg-stats",
        help="'estimate' (k and statistics from this panel) or the path of a published "
        "statistics parquet (quarter, feature, mu, sigma, k) to pin.",
    ),
    rules: str = typer.Option(
        DEFAULT_RULES.name,
        "--rules",
        help="Rule set: 'published' (the published package's panel and scores) or "
        "'paper' (the paper's text, and the project's documented reading where the text "
        "leaves a case open; docs/contracts.md, 'Rule sets').",
    ),
    explain_only: bool = typer.Option(
        False, "--explain", help="Print the plan (steps, checksums, purposes) and exit."
    ),
) -> None:
    """Build the benchmark panel (panel.*) from raw.* by running sql/build in order."""
    if explain_only:
        rows = explain()
        console.print(
            "[bold]proforma build plan[/] (sql/build, run in this order in one transaction)"
        )
        for r in rows:
            console.print(
                f"[bold]{r['name']}[/]  checksum {r['checksum']}", highlight=False, soft_wrap=True
            )
            console.print(f"    {r['purpose']}", highlight=False, soft_wrap=True, markup=False)
        summary(
            f"{len(rows)} steps; statistics: "
            + ("estimated from this panel" if reg_stats == "estimate" else f"pinned {reg_stats}")
        )
        return
    rule_set = RuleSet.parse(rules)
    space = "estimated from this panel" if reg_stats == "estimate" else f"pinned from {reg_stats}"
    status_console.print(f"rule set: {rule_set}; standardization statistics: {space}")
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with writer() as wh:
        with Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total}"),
            TimeElapsedColumn(),
            console=status_console,
            transient=False,
        ) as progress:
            task = progress.add_task("build", total=None)

            def on_step(i: int, n: int, step, phase: str) -> None:
                if phase == "start":
                    progress.update(task, total=n, description=f"{step.name}")
                else:
                    progress.update(task, completed=i)

            result = run_build(wh, reg_stats, BuildParams(rules=rule_set), on_step=on_step)
        # The footprints every warehouse has are made from the panel, once: here, so that
        # the first `score` of an upload pays only for the upload (and `footprint list`
        # shows them as soon as there is a panel).
        with status_console.status("making the standard footprints"):
            made = ensure_standard_footprints(wh)
        # The test split's cell grid, so that the first upload's score pays only for the
        # upload too (docs/scoring.md, "Cells by position").
        with status_console.status("laying out the test split's cell grid"):
            cell_layout(wh, "test")
    table = Table(title=f"build {result.build_id}")
    for col in ("step", "seconds", "rows"):
        table.add_column(col)
    for s in result.steps:
        counts = ", ".join(f"{t}={r['total']:,}" for t, r in s.rows.items()) or "-"
        table.add_row(s.name, f"{s.elapsed_s:.1f}", counts)
    console.print(table)
    if made:
        status_console.print(f"standard footprints made: {', '.join(made)}")
    warning = result.warning()
    if warning:
        # a warning is about the run, so stderr: `proforma build > steps.txt` keeps it apart
        status_console.print(warning, style="yellow", highlight=False, soft_wrap=True, markup=False)
    summary(result.line())


def audit_identities(
    rel_tol: float = typer.Option(0.01, help="Relative tolerance (share of the largest term)."),
    abs_tol: float = typer.Option(0.0015, help="Absolute tolerance (reporting units)."),
    out: Annotated[
        Path | None, typer.Option(help="Write the violating instances to this parquet file.")
    ] = None,
    show: int = typer.Option(10, help="Violating instances to print."),
) -> None:
    """Identity audit of the reported data: violations per identity and the worst instances."""
    with writer() as wh:
        wh.require_panel("panel.values")
        params = {"identity_rel_tol": rel_tol, "identity_abs_tol": abs_tol}
        summ = wh.query_step("audits/020_identity_summary", params)
        table = Table(title="identity audit (reported data)")
        for col in (
            "identity",
            "statement",
            "instances",
            "violations",
            "share",
            "median rel. residual",
        ):
            table.add_column(col)
        total_inst = total_bad = 0
        for r in summ.to_pylist():
            total_inst += r["instances"]
            total_bad += r["violations"]
            share = "-" if r["violation_share"] is None else f"{r['violation_share']:.2%}"
            med = "-" if r["median_rel_residual"] is None else f"{r['median_rel_residual']:.3g}"
            table.add_row(
                r["identity"],
                r["statement"],
                f"{r['instances']:,}",
                f"{r['violations']:,}",
                share,
                med,
            )
        console.print(table)
        violations = sql_file("audits/010_identity_violations")
        if out is not None or show:
            bad = wh.query_step(violations, params)
            if out is not None:
                import pyarrow.parquet as pq

                out.parent.mkdir(parents=True, exist_ok=True)
                pq.write_table(bad, out)
                status_console.print(f"wrote {bad.num_rows:,} violating instances to {out}")
            if show and bad.num_rows:
                top = Table(title=f"first {min(show, bad.num_rows)} violating instances")
                for col in ("gvkey", "quarter", "identity", "residual", "rel. residual"):
                    top.add_column(col)
                for r in bad.slice(0, show).to_pylist():
                    rel = "-" if r["rel_residual"] is None else f"{r['rel_residual']:.3g}"
                    top.add_row(
                        r["gvkey"], r["quarter"], r["identity"], f"{r['residual']:.4g}", rel
                    )
                console.print(top)
    violating = total_bad / total_inst if total_inst else 0.0
    summary(
        f"{total_bad:,} of {total_inst:,} complete identity instances violate ({violating:.2%})"
    )
