"""`proforma remote ...`: a ProForma-20Q server from the terminal (proforma.client does
the work; these commands parse, call it and print). Tables go to stdout (as a table, CSV
or JSON), progress, job messages and the closing `done:` line to stderr. The server and
the token come from --server/--token, PROFORMA_SERVER/PROFORMA_TOKEN or the file
`proforma remote login` writes (mode 600); a token is never printed."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from proforma.app.cli.common import console, note, status_console, summary
from proforma.contracts import families

if TYPE_CHECKING:
    import pyarrow as pa

    from proforma.client import Client

#: The families a file may name, from the registry (contracts/families.py).
_FAMILY_HELP = f"{families.describe(quantile=True)}."
_DF_HELP = f"Degrees of freedom ({' or '.join(families.families_with('df'))})."

remote_app = typer.Typer(
    help="A ProForma-20Q server from the terminal: check, submit, follow, read boards, "
    "rounds, SQL and the public snapshot (docs/client.md).",
    no_args_is_help=True,
)

FORMATS = ("table", "csv", "json")
PUBLIC_FILE = Path("public.duckdb")


@remote_app.callback()
def remote(
    ctx: typer.Context,
    server: str = typer.Option(
        None, "--server", help="The server's URL (else PROFORMA_SERVER, the config file)."
    ),
    token: str = typer.Option(
        None, "--token", help="Your API token (else PROFORMA_TOKEN, the config file)."
    ),
) -> None:
    """A ProForma-20Q server from the terminal (docs/client.md)."""
    ctx.obj = {"server": server, "token": token}


def _client(ctx: typer.Context) -> Client:
    from proforma.client import Client

    given = ctx.obj or {}
    return Client(given.get("server"), given.get("token"))


def _print_table(table: pa.Table, fmt: str, title: str | None = None) -> None:
    if fmt not in FORMATS:
        raise typer.BadParameter(f"--format must be one of {', '.join(FORMATS)}")
    if fmt == "json":
        console.print_json(json.dumps(table.to_pylist(), default=str))
        return
    if fmt == "csv":
        import pyarrow as pa
        import pyarrow.csv as pacsv

        # CSV holds no nested values: a job's report, a round's resolution as JSON text
        table = pa.table(
            {
                name: pa.array([_cell(v) if v is not None else None for v in column.to_pylist()])
                if pa.types.is_nested(column.type)
                else column
                for name, column in zip(table.column_names, table.columns, strict=True)
            }
        )
        sink = sys.stdout.buffer
        sys.stdout.flush()
        pacsv.write_csv(table, sink)
        sink.flush()
        return
    out = Table(title=title, show_lines=False)
    for name in table.column_names:
        out.add_column(name, overflow="fold")
    for row in table.to_pylist():
        out.add_row(*(_cell(v) for v in row.values()))
    console.print(out)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (dict, list)):
        return json.dumps(value, default=str)
    return str(value)


def _progress() -> tuple[Any, Any]:
    """A bytes bar on stderr (tqdm), shown once the upload starts, and the callback the
    client reports to; close() ends it."""
    from tqdm import tqdm

    bars: list[Any] = []

    def on_progress(sent: int, total: int) -> None:
        if not bars:
            bars.append(
                tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, file=sys.stderr)
            )
        bars[0].n = sent
        bars[0].refresh()

    class Closer:
        def close(self) -> None:
            for bar in bars:
                bar.close()

    return Closer(), on_progress


def _problems(exc: BaseException) -> None:
    problems = getattr(exc, "problems", None) or []
    if not problems:
        return
    table = Table(title="problems", show_lines=False)
    for col in ("severity", "problem", "rows", "examples"):
        table.add_column(col, overflow="fold")
    for p in problems:
        table.add_row(
            str(p.get("severity", "error")),
            str(p.get("problem") or p.get("column") or p),
            f"{p.get('count', 0):,}" if isinstance(p.get("count"), int) else "",
            "\n".join(str(e) for e in p.get("examples") or []),
        )
    status_console.print(table)


# -- account ---------------------------------------------------------------------------------
@remote_app.command("login")
def login(
    ctx: typer.Context,
    server: str = typer.Option(..., "--server", help="The server's URL."),
    token: str = typer.Option(
        None, "--token", help="Your API token (asked for, unechoed, when left out)."
    ),
) -> None:
    """Save the server and your token in the config file (mode 600) and check them."""
    from proforma.client import Client, save_config

    if not token:
        token = typer.prompt("API token", hide_input=True)
    with Client(server, token) as pf:
        me = pf.me()
    path = save_config(server, token)
    summary(f"logged in to {server} as {me['name']}; saved in {path} (mode 600)")


@remote_app.command("me")
def me(ctx: typer.Context) -> None:
    """Your user, role and uploads left today."""
    with _client(ctx) as pf:
        info = pf.me()
        console.print_json(json.dumps(info))


# -- files -----------------------------------------------------------------------------------
@remote_app.command("check")
def check(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="The forecast parquet file.")],
    family: str = typer.Option(None, "--family", help=_FAMILY_HELP),
    df: float = typer.Option(None, "--df", help=_DF_HELP),
) -> None:
    """Check a forecast file with the server's own checks, here (nothing is sent)."""
    from proforma.client import FileRefused

    with _client(ctx) as pf:
        try:
            report = pf.check(file, family=family, df=df)
        except FileRefused as exc:
            _problems(exc)
            raise
    for w in report.warnings:
        note(f"warning: {w['problem']} ({w['count']:,} rows)")
    summary(f"{file.name} passes the server's checks: {report.rows:,} rows, family {report.family}")


@remote_app.command("submit")
def submit(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="The forecast parquet file.")],
    name: str = typer.Option(..., "--name", help="The model's name on the boards."),
    round_name: str = typer.Option(
        None, "--round", help="Enter this open round instead of the static benchmark."
    ),
    training_cutoff: str = typer.Option(
        None, "--training-cutoff", help="(benchmark) The last training quarter, e.g. 2009Q4."
    ),
    leakage_statement: str = typer.Option(
        None, "--leakage-statement", help="(benchmark) What the model saw of the test period."
    ),
    family: str = typer.Option(None, "--family", help=_FAMILY_HELP),
    df: float = typer.Option(None, "--df", help=_DF_HELP),
    description: str = typer.Option("", "--description"),
    code_url: str = typer.Option("", "--code-url"),
    check: bool = typer.Option(True, "--check/--no-check", help="Check the file here first."),
    wait: bool = typer.Option(True, "--wait/--no-wait", help="Follow the job to its end."),
    key: str = typer.Option(
        None, "--idempotency-key", help="Name this upload (default: a new key per command)."
    ),
) -> None:
    """Check a file, upload it once (retried safely after a network failure), follow the
    job and print the scores and ranks (or the round's record)."""
    from proforma.client import FileRefused

    bar, on_progress = _progress()
    try:
        with _client(ctx) as pf:
            if round_name is not None:
                done = pf.submit_round(
                    round_name,
                    file,
                    name,
                    family=family,
                    df=df,
                    check=check,
                    on_event=note,
                    on_progress=on_progress,
                    idempotency_key=key,
                )
            else:
                if not training_cutoff or not leakage_statement:
                    raise typer.BadParameter(
                        "a benchmark upload needs --training-cutoff and --leakage-statement"
                    )
                done = pf.submit(
                    file,
                    name,
                    training_cutoff=training_cutoff,
                    leakage_statement=leakage_statement,
                    family=family,
                    df=df,
                    description=description,
                    code_url=code_url,
                    check=check,
                    wait=wait,
                    on_event=note,
                    on_progress=on_progress,
                    idempotency_key=key,
                )
    except FileRefused as exc:
        bar.close()
        _problems(exc)
        raise
    finally:
        bar.close()
    if round_name is not None:
        record = done.record or {}
        console.print_json(json.dumps(record, default=str))
        summary(f"{name} entered round {round_name} (job {done.job_id})")
        return
    if not wait:
        summary(f"job {done.job_id} queued: `proforma remote job {done.job_id}` follows it")
        return
    _print_scores(done)
    summary(f"{name}: submission {done.submission_id} scored (job {done.job_id})")


#: What the scores table shows of each footprint's global metrics, when present.
_SHOWN = ("r2", "mae", "crps", "nll", "coverage")


def _print_scores(done: Any) -> None:
    table = Table(title=f"submission {done.submission_id}")
    tracks = sorted({t for ranks in done.ranks.values() for t in ranks})
    for col in ("footprint", *(f"rank {t}" for t in tracks), *_SHOWN):
        table.add_column(col)
    for footprint, metrics in done.scores.items():
        ranks = done.ranks.get(footprint, {})
        table.add_row(
            footprint,
            *(f"{ranks[t][0]} of {ranks[t][1]}" if t in ranks else "-" for t in tracks),
            *(_cell(metrics.get(m)) for m in _SHOWN),
        )
    console.print(table)


@remote_app.command("job")
def job(ctx: typer.Context, job_id: int = typer.Argument(...)) -> None:
    """Follow a job to its end, telling its messages as they come."""
    with _client(ctx) as pf:
        record = pf.follow(job_id, note)
    console.print_json(json.dumps(record, default=str))


@remote_app.command("jobs")
def jobs(
    ctx: typer.Context, fmt: str = typer.Option("table", "--format", help="table, csv or json")
) -> None:
    """Your jobs, newest first."""
    with _client(ctx) as pf:
        _print_table(pf.jobs(), fmt, "jobs")


# -- reads -----------------------------------------------------------------------------------
@remote_app.command("board")
def board(
    ctx: typer.Context,
    footprint: str = typer.Argument("full", help="The footprint (`remote boards` lists them)."),
    track: str = typer.Option("squared", "--track", help="squared, absolute or density."),
    by: str = typer.Option("global", "--by", help="global, horizon, item or statement."),
    against: str = typer.Option(None, "--against", help="Diebold-Mariano reference."),
    run: int = typer.Option(None, "--run", help="An older score run, by id."),
    fmt: str = typer.Option("table", "--format", help="table, csv or json"),
) -> None:
    """One leaderboard: footprint x track x breakdown."""
    with _client(ctx) as pf:
        table = pf.leaderboard(footprint, track, by, against=against, run=run)
    _print_table(table, fmt, f"{footprint}: {track} track, by {by}")


@remote_app.command("boards")
def boards(ctx: typer.Context) -> None:
    """The footprints with their latest score runs, the tracks and the breakdowns."""
    with _client(ctx) as pf:
        console.print_json(json.dumps(pf.leaderboards(), default=str))


@remote_app.command("submissions")
def submissions(
    ctx: typer.Context, fmt: str = typer.Option("table", "--format", help="table, csv or json")
) -> None:
    """Every submission's public record."""
    with _client(ctx) as pf:
        _print_table(pf.submissions(), fmt, "submissions")


@remote_app.command("scores")
def scores(
    ctx: typer.Context,
    submission_id: Annotated[int, typer.Argument()],
    level: str = typer.Option("global", "--level", help="global, horizon, item or statement."),
    fmt: str = typer.Option("table", "--format", help="table, csv or json"),
) -> None:
    """A submission's scores on every footprint, at one level of detail."""
    with _client(ctx) as pf:
        _print_table(pf.scores(submission_id, level), fmt, f"submission {submission_id}")


@remote_app.command("rounds")
def rounds(
    ctx: typer.Context, fmt: str = typer.Option("table", "--format", help="table, csv or json")
) -> None:
    """Every round with its deadline and resolution."""
    with _client(ctx) as pf:
        _print_table(pf.rounds(), fmt, "rounds")


@remote_app.command("round")
def round_(ctx: typer.Context, name: str = typer.Argument(...)) -> None:
    """One round: frozen inputs, resolution per horizon, leaderboard (JSON)."""
    with _client(ctx) as pf:
        console.print_json(json.dumps(pf.round(name), default=str))


@remote_app.command("live")
def live(
    ctx: typer.Context, fmt: str = typer.Option("table", "--format", help="table, csv or json")
) -> None:
    """The live leaderboard: models ranked across resolved rounds."""
    with _client(ctx) as pf:
        _print_table(pf.live(), fmt, "live leaderboard")


@remote_app.command("query")
def query(
    ctx: typer.Context,
    sql: str = typer.Argument(..., help="One SELECT over the public tables."),
    fmt: str = typer.Option("table", "--format", help="table, csv or json"),
) -> None:
    """Run one SELECT on the server's public snapshot (its SQL console)."""
    with _client(ctx) as pf:
        _print_table(pf.query(sql), fmt)


@remote_app.command("snapshot")
def snapshot(
    ctx: typer.Context,
    out: Annotated[Path, typer.Argument(help="Where to write the DuckDB file.")] = PUBLIC_FILE,
) -> None:
    """Download the public snapshot as a DuckDB file, for local SQL."""
    with _client(ctx) as pf:
        path = pf.snapshot(out)
    summary(f"{path} ({path.stat().st_size:,} bytes): duckdb.connect('{path}', read_only=True)")


@remote_app.command("forecasts")
def forecasts(
    ctx: typer.Context,
    submission_id: Annotated[int, typer.Argument()],
    out: Annotated[Path, typer.Argument(help="The .parquet file to write.")],
) -> None:
    """A submission's forecasts (yours; the in-house models' where the server shares
    them) as the published submission file, with its family sidecar."""
    with _client(ctx) as pf:
        path = pf.forecasts(submission_id, out)
    side = path.with_name(f"{path.stem}.nll.json")
    extra = f" and {side.name}" if side.exists() else ""
    summary(f"submission {submission_id}'s forecasts in {path}{extra}")
