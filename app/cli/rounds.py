"""`proforma round ...`: prospective rounds (docs/rounds.md)."""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from proforma.app.cli.common import console, status_console, summary, writer
from proforma.contracts import families
from proforma.contracts.errors import UserError


def inputs_root() -> Path:
    """Where a round's inputs are written at its open: `rounds/` beside the warehouse."""
    from proforma.app.store.settings import get_settings

    return get_settings().warehouse.parent / "rounds"


def _deadline(text: str | None) -> dt.datetime | None:
    if text is None:
        return None
    try:
        value = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise UserError(f"Not a time: {text!r} (write e.g. 2026-12-31T17:00 UTC)") from None
    return value.astimezone(dt.UTC).replace(tzinfo=None) if value.tzinfo else value


def open_command(
    name: str = typer.Option(None, help="Round name (default: the origin quarter, e.g. 2024Q4)."),
    deadline: str = typer.Option(
        None, help="Last moment submissions are accepted, ISO time in UTC (2026-12-31T17:00)."
    ),
    days: float = typer.Option(None, help="Deadline this many days from now (default 14)."),
    no_entries: bool = typer.Option(
        False, "--no-entries", help="Do not enter the reference baselines and the oracle."
    ),
    forma: str = typer.Option(
        None, "--forma", help="Also enter Forma: the trained checkpoint of this preset, seed 60."
    ),
    competitors: str = typer.Option(
        None,
        "--competitors",
        help="Also enter these learned competitors (comma-separated suite names, e.g. "
        "enet,ffnn-linear): each fit on the build's train and val splits, forecasting the "
        "round's origins.",
    ),
    preset: str = typer.Option("paper", "--preset", help="The competitors' preset (paper, demo)."),
    jobs: int = typer.Option(1, "--jobs", help="Parallel fits of the competitors."),
) -> None:
    """Open a round at the data's last quarter: freeze its origins, items, parameters,
    deadline and inputs (tuple and tabular views, cells), then enter the baselines."""
    from proforma.app.flows.baselines import parse_which
    from proforma.app.rounds import open_round
    from proforma.app.rounds.entries import enter_competitors, enter_entries, enter_forma
    from proforma.models.baselines import suite

    with writer() as wh:
        # an unknown competitor or preset is refused before anything is written
        which = parse_which(competitors) if competitors else []
        suite.preset(preset)
        rnd = open_round(wh, inputs_root(), name=name, deadline=_deadline(deadline), days=days)
        entered = [] if no_entries else enter_entries(wh, rnd["name"])
        if forma:
            entered.append(enter_forma(wh, rnd["name"], forma))
        if which:
            entered += enter_competitors(wh, rnd["name"], which, preset, n_jobs=jobs)
    for e in entered:
        status_console.print(f"entered {e['name']} ({e['rows']:,} forecasts)", highlight=False)
    summary(
        f"round {rnd['name']} open: origin {rnd['origin']}, {rnd['n_origins']:,} origins, "
        f"{rnd['n_cells']:,} cells, deadline {rnd['deadline']:%Y-%m-%d %H:%M:%S} UTC; "
        f"inputs in {json.loads(rnd['inputs'])['folder']}"
    )


def enter_command(
    name: str = typer.Argument(..., help="The round (open, on the build it was opened on)."),
    competitors: str = typer.Option(
        ..., "--competitors", help="Comma-separated suite names, e.g. enet,ffnn-linear."
    ),
    preset: str = typer.Option("paper", "--preset", help="The competitors' preset (paper, demo)."),
    jobs: int = typer.Option(1, "--jobs", help="Parallel fits."),
) -> None:
    """Enter learned competitors into an open round: each fit on the train and val splits
    of the build the round was opened on, forecasting the round's frozen origins."""
    from proforma.app.flows.baselines import parse_which
    from proforma.app.rounds.entries import enter_competitors
    from proforma.models.baselines import suite

    with writer() as wh:
        which = parse_which(competitors)
        suite.preset(preset)
        entered = enter_competitors(wh, name, which, preset, n_jobs=jobs)
    for e in entered:
        status_console.print(f"entered {e['name']} ({e['rows']:,} forecasts)", highlight=False)
    summary(f"{len(entered)} competitor(s) entered round {name}")


def close_command(name: str = typer.Argument(..., help="The round.")) -> None:
    """Close a round now (its deadline moves to the present; never later)."""
    from proforma.app.rounds.store import close_round

    with writer() as wh:
        rnd = close_round(wh, name)
    summary(f"round {name} closed at {rnd['deadline']:%Y-%m-%d %H:%M:%S} UTC")


def list_command(
    fmt: str = typer.Option("table", "--format", help="table or json"),
) -> None:
    """List the rounds with their deadlines and resolution."""
    from proforma.app.rounds import list_rounds

    with writer() as wh:
        rounds = list_rounds(wh)
    if fmt == "json":
        console.print_json(json.dumps(rounds, default=str))
        return
    t = Table(
        "round",
        "origin",
        "deadline (UTC)",
        "state",
        "origins",
        "cells",
        "resolved",
        "last quarter",
        "entries",
    )
    for r in rounds:
        t.add_row(
            r["name"],
            r["origin"],
            f"{r['deadline']:%Y-%m-%d %H:%M}",
            r["state"],
            f"{r['n_origins']:,}",
            f"{r['n_cells']:,}",
            f"{r['cells_resolved']:,}",
            r["last_resolved_quarter"] or "-",
            str(r["submissions"]),
        )
    console.print(t)
    summary(f"{len(rounds)} round(s)")


def _fmt(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:.4f}" if isinstance(v, float) else f"{v:,}" if isinstance(v, int) else str(v)


def show_command(
    name: str = typer.Argument(..., help="The round."),
    fmt: str = typer.Option("table", "--format", help="table or json"),
) -> None:
    """A round: its frozen inputs, resolution per horizon and leaderboard."""
    from proforma.app.rounds import leaderboard

    with writer() as wh:
        board = leaderboard(wh, name)
    rnd = board["round"]
    if fmt == "json":
        console.print_json(json.dumps(board, default=str))
        return
    console.print(
        f"round {rnd['name']}: origin {rnd['origin']}, {rnd['state']}, deadline "
        f"{rnd['deadline']:%Y-%m-%d %H:%M:%S} UTC, {rnd['n_origins']:,} origins, "
        f"{rnd['n_cells']:,} cells, {rnd['cells_resolved']:,} resolved",
        highlight=False,
    )
    console.print(
        "resolved per horizon: "
        + " ".join(f"h{h + 1}:{n}" for h, n in enumerate(rnd["resolved_by_horizon"]) if n)
        or "-",
        highlight=False,
    )
    t = Table("model", "kind", "family", "n", "R2", "MAE", "MSE", "CRPS", "NLL", "cov90")
    for m in board["models"]:
        t.add_row(
            m["name"] + ("" if m.get("common_sample", True) else " (own cells)"),
            m["kind"],
            m["family"],
            *(_fmt(m[k]) for k in ("n", "r2", "mae", "mse", "crps", "nll", "cov90")),
        )
    console.print(t)
    summary(f"{len(board['models'])} entries, common sample {board['n_common']:,} cells")


def submit_command(
    round_name: str = typer.Argument(..., metavar="ROUND", help="The round."),
    path: Path = typer.Argument(  # noqa: B008
        ..., help="Parquet file: firm, target, origin, horizon, prediction[, sigma, ...]."
    ),
    name: str = typer.Option(..., "--name", help="Model name (one submission per name and round)."),
    family: str = typer.Option(
        None,
        help=f"{families.describe(point=True)}; default with sigma "
        f"{families.DEFAULT_FAMILY}; a quantile_level column makes a quantile forecast, a "
        "component column a mixture.",
    ),
    df: float = typer.Option(
        None, "--df", help=f"Degrees of freedom ({' or '.join(families.families_with('df'))})."
    ),
) -> None:
    """Submit forecasts to a round before its deadline."""
    from proforma.app.rounds import submit_file

    with writer() as wh:
        rec = submit_file(wh, round_name, path, name, family=family, df=df)
    for warning in rec.get("warnings", []):
        status_console.print(f"[yellow]warning:[/] {warning}", highlight=False)
    summary(
        f"{name} entered round {round_name}: {rec['rows']:,} forecasts, sha256 "
        f"{rec['sha256'][:12]}, received {rec['received_at']:%Y-%m-%d %H:%M:%S} UTC"
    )


def resolve_command(
    panel: Path = typer.Option(  # noqa: B008
        None,
        "--panel",
        help="Read the realized values from this warehouse file's build (a later vintage "
        "of the same panel) instead of this warehouse's own.",
    ),
) -> None:
    """Resolve the newly realized cells of every round past its deadline (after an ingest
    that adds quarters and `proforma build`) and score them."""
    from proforma.app.rounds import resolve

    with writer() as wh:
        out = resolve(wh, panel=panel)
    for name in out["waiting"]:
        status_console.print(f"round {name} is open until its deadline: not resolved yet")
    per = ", ".join(f"{k} {v:,}" for k, v in out["per_round"].items()) or "none"
    summary(
        f"resolution {out['resolution_id']}: {out['cells_new']:,} new cells ({per}), "
        f"{out['scores_new']:,} cell scores in {out['seconds']:.1f}s"
    )


def live_command(fmt: str = typer.Option("table", "--format", help="table or json")) -> None:
    """The live leaderboard: models ranked across rounds by their resolved cells."""
    from proforma.app.rounds import live_leaderboard

    with writer() as wh:
        rows = live_leaderboard(wh)
    if fmt == "json":
        console.print_json(json.dumps(rows, default=str))
        return
    t = Table("model", "rounds", "n", "R2", "MSE", "MAE", "CRPS", "DM p vs leader")
    for r in rows:
        t.add_row(
            r["name"],
            str(r["rounds"]),
            *(_fmt(r[k]) for k in ("n", "r2", "mse", "mae", "crps", "dm_p")),
        )
    console.print(t)
    summary(f"{len(rows)} model(s)")


#: The demo's round and the quarter its next vintage grows the panel to (four quarters
#: past the synthetic panel's 2024Q4).
DEMO_ROUND = "demo"
DEMO_THROUGH = "2025Q4"


def next_vintage_path() -> Path:
    """The demo's next vintage: the same synthetic panel grown by four quarters, ingested
    and built in a warehouse of its own beside the main one, so that the demo's static
    benchmark (its build, checkpoints, scores and report) keeps its own vintage."""
    from proforma.app.store.settings import get_settings

    w = get_settings().warehouse
    return w.with_name(w.stem + ".next-vintage" + w.suffix)


def demo_round(
    run: Any,
    firms: int | None,
    forma_preset: str | None = None,
    competitors: tuple[str, ...] = (),
    *,
    resolve: bool = True,
) -> None:
    """The demo's round: open it at the panel's last quarter (2024Q4) with its entries,
    close it (the demo plays the deadline), grow the panel by four quarters in the next
    vintage's warehouse and, with `resolve`, resolve the round from it: served partly
    resolved (horizons 1-4). Forma enters with the demo's checkpoint of `forma_preset`
    when given, and the learned `competitors` the demo fit (demo preset) enter refit on
    the same build. `run(args, env=None)` runs one `proforma` command in a child process.
    Each step is skipped when its result is there."""
    import os

    from proforma.app.rounds.store import get_round, has_rounds, round_submissions
    from proforma.app.store.warehouse import connect

    def state() -> dict[str, Any] | None:
        with connect() as wh:
            if not has_rounds(wh):
                return None
            try:
                return get_round(wh, DEMO_ROUND)
            except UserError:
                return None

    rnd = state()
    if rnd is None:
        forma = ["--forma", forma_preset] if forma_preset else []
        run(["round", "open", "--name", DEMO_ROUND, "--days", "14", *forma])
        rnd = state()
    assert rnd is not None
    if rnd["state"] == "open" and competitors:
        from proforma.app.rounds.entries import competitor_name

        with connect() as wh:
            have = {s["name"] for s in round_submissions(wh, rnd["round_id"])}
        missing = [c for c in competitors if competitor_name(c, "demo") not in have]
        if missing:
            enter = ["round", "enter", DEMO_ROUND, "--competitors", ",".join(missing)]
            run([*enter, "--preset", "demo", "--jobs", "2"])
    if rnd["state"] == "open":
        run(["round", "close", DEMO_ROUND])
    if rnd["cells_resolved"]:
        status_console.print(f"[dim]round {DEMO_ROUND}: resolved already, kept[/]")
        return
    nxt = next_vintage_path()
    if not _built(nxt):
        env = {**os.environ, "PROFORMA_WAREHOUSE": str(nxt)}
        nxt.unlink(missing_ok=True)  # an ingest or build stopped half-way starts afresh
        nxt.with_name(nxt.name + ".wal").unlink(missing_ok=True)
        ingest = ["ingest", "synthetic", "--scale", "demo", "--through", DEMO_THROUGH]
        run(ingest + (["--firms", str(firms)] if firms else []), env=env)
        run(["build"], env=env)
    if resolve:
        run(["round", "resolve", "--panel", str(nxt)])


def _built(path: Path) -> bool:
    """The warehouse at `path` holds a succeeded build."""
    from proforma.app.scoring.provenance import current_build_id
    from proforma.app.store.warehouse import connect

    if not path.is_file():
        return False
    try:
        with connect(path=path, read_only=True) as wh:
            return current_build_id(wh) is not None
    except Exception:  # noqa: BLE001 - a file an ingest left half-written is "not built"
        return False


def forget_demo_round() -> None:
    """For `demo --fresh`: remove the next vintage's warehouse and the rounds' inputs."""
    import shutil

    nxt = next_vintage_path()
    for path in (nxt, nxt.with_name(nxt.name + ".wal")):
        path.unlink(missing_ok=True)
    shutil.rmtree(inputs_root(), ignore_errors=True)
