"""`proforma ...`: the command line, declared in one place (below). Every command is a
thin function in a module of this package that parses its options, calls a flow (app/,
app/flows/) and prints; `proforma --help` lists them in the order of
proforma.app.cli.help.WORKFLOW (add a new command there too).

Output: data (tables, csv, json, tokens) goes to stdout, everything else (progress,
notes, warnings, the closing `done:` line, errors) to stderr, so `--format json > f`
writes a file that parses. Errors a user can cause (proforma.contracts.errors.UserError) print
as one red line and exit 2; a machine that runs out of disk or of DuckDB's memory limit
also gets one line saying which setting to change (exit 3); anything else is a bug and
keeps its traceback.
"""

from __future__ import annotations

import gc

# The start-up's imports make some 45,000 objects, and the collector's passes over them
# while they are made cost every command time (bench/start_imports.py measures it;
# docs/scoring.md, "The start's lazy imports"): it waits until they are made, and
# leaves them out of its later passes (gc.freeze at the end of this module). A program
# that imports this module with the collector off finds it off after.
_collecting = gc.isenabled()
gc.disable()

import logging
import os
import sys
import threading
from typing import NoReturn

import duckdb
import typer

from proforma.app.cli import (
    backup,
    baselines,
    build,
    chronos,
    db,
    demo,
    export,
    forma,
    ingest,
    llm,
    remote,
    report,
    rounds,
    score,
    serve,
    synthetic,
)
from proforma.app.cli.common import status_console
from proforma.app.cli.help import WorkflowGroup
from proforma.contracts.errors import UserError

app = typer.Typer(
    name="proforma",
    help="ProForma-20Q: build the benchmark, train and score forecasters, serve leaderboards.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=WorkflowGroup,
    # Plain click help: wrapped to the terminal (80 columns at most), nothing cut short.
    rich_markup_mode=None,
)


def group(name: str, help: str) -> typer.Typer:
    """A command group of the tree (its commands are listed in registration order)."""
    sub = typer.Typer(help=help, no_args_is_help=True)
    app.add_typer(sub, name=name)
    return sub


# -- the tree -----------------------------------------------------------------------------
app.command("demo")(demo.demo_command)

app.command("migrate")(db.migrate_command)
ingest_group = group("ingest", "Load raw Compustat-shaped data into the warehouse.")
ingest_group.command("wrds")(ingest.ingest_wrds)
ingest_group.command("parquet")(ingest.ingest_parquet)
ingest_group.command("synthetic")(synthetic.ingest_synthetic)
synthetic_group = group("synthetic", "The built-in synthetic Compustat-shaped panel.")
synthetic_group.command("validate")(synthetic.validate)
app.command("build")(build.build_command)
audit_group = group("audit", "Audit the reported data.")
audit_group.command("identities")(build.audit_identities)

baselines_group = group("baselines", "Reference baselines computed in SQL.")
baselines_group.command("reference")(score.baselines_reference)
run_group = group("run", "Train models and write their forecasts.")
run_group.command("baselines")(baselines.baselines_command)
run_group.command("impute")(baselines.impute_command)
run_group.command("llm")(llm.run_llm_command)
run_group.command("chronos")(chronos.chronos_command)
train_group = group("train", "Train a forecaster on the panel.")
train_group.command("forma")(forma.train_forma)
predict_group = group("predict", "Forecast with a trained model and score it.")
predict_group.command("forma")(forma.predict_forma)
app.command("oracle")(synthetic.oracle_command)
app.add_typer(forma.forma_app, name="forma")
app.command("scenario")(forma.scenario_command)
llm_group = group("llm", "The LLM panel: its origin sample and prompts (docs/llm.md).")
llm_group.command("prompt")(llm.prompt_command)
llm_group.command("sample")(llm.sample_command)
app.command("reconcile")(report.reconcile_command)

app.command("submit")(score.submit_command)
app.command("score")(score.score_command)
app.command("leaderboard")(score.leaderboard_command)
footprint_group = group("footprint", "Footprints: named, versioned cell sets scores are tied to.")
footprint_group.command("create")(score.footprint_create)
footprint_group.command("import")(score.footprint_import)
footprint_group.command("list")(score.footprint_list)
app.command("report")(report.report_command)
app.command("export")(export.export_command)
round_group = group("round", "Prospective rounds: forecasts of quarters not yet filed.")
round_group.command("open")(rounds.open_command)
round_group.command("list")(rounds.list_command)
round_group.command("show")(rounds.show_command)
round_group.command("submit")(rounds.submit_command)
round_group.command("enter")(rounds.enter_command)
round_group.command("close")(rounds.close_command)
round_group.command("resolve")(rounds.resolve_command)
round_group.command("live")(rounds.live_command)

app.command("serve")(serve.serve)
users_group = group("users", "Users and API tokens of the service.")
users_group.command("add")(serve.users_add)
users_group.command("token")(serve.users_token)
users_group.command("revoke")(serve.users_revoke)
users_group.command("list")(serve.users_list)

app.add_typer(remote.remote_app, name="remote")

db_group = group("db", "Inspect the warehouse.")
db_group.command("status")(db.db_status)
app.command("backup")(backup.backup_command)
app.command("restore")(backup.restore_command)

if _collecting:
    gc.enable()
gc.freeze()


#: Exit status of a job stopped by the machine's resources (disk, memory), not by its input.
RESOURCE_EXIT = 3


def resource_problem(exc: BaseException) -> str | None:
    """The one line for an error the machine's disk or DuckDB's memory limit caused, else None."""
    from proforma.app.store.settings import get_settings
    from proforma.app.store.warehouse import out_of_disk

    settings = get_settings()
    text = str(exc)
    if isinstance(exc, duckdb.OutOfMemoryException):
        return (
            f"DuckDB ran out of memory within its limit ({settings.memory_limit}): raise "
            f"PROFORMA_MEMORY_LIMIT, or lower PROFORMA_THREADS (each thread holds its own "
            f"buffers); spill files go to {settings.temp_directory}"
        )
    if out_of_disk(exc):
        detail = text.split("Could not write file", 1)[-1].split(":", 1)[0].strip(' "\\')
        where = f" writing {detail}" if detail and detail != text else ""
        return (
            f"no space left on the device{where}: free space there, or point the output "
            f"and PROFORMA_TEMP_DIRECTORY (DuckDB's spill files, now {settings.temp_directory}) "
            f"at a larger disk; nothing was committed by the failed step"
        )
    return None


def main() -> NoReturn:
    """The command line in this process, ended by SystemExit with the command's status,
    as a library function ends: for callers that go on after it (tests, scripts)."""
    sys.exit(_run())


def entry() -> NoReturn:
    """The `proforma` command (and `python -m proforma.app.cli`): the command line, then
    the process ends at once (leave)."""
    leave(_run())


def _run() -> int | str | None:
    """Run the command sys.argv names; its exit status (as sys.exit reads it)."""
    try:
        app()
    except SystemExit as done:  # click ends every command with one, 0 on success
        return done.code
    except UserError as exc:
        status_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        return exc.exit_code
    except (duckdb.Error, OSError) as exc:
        line = resource_problem(exc)
        if line is None:
            raise
        status_console.print(f"[bold red]error:[/] {line}", highlight=False, soft_wrap=True)
        return RESOURCE_EXIT
    return 0


def leave(code: int | str | None) -> NoReturn:
    """End the process with `code` (as sys.exit reads it) once the output is flushed,
    without the interpreter's teardown: freeing the hundreds of modules and objects a
    command loaded took 0.3 s of every command, longer than many commands' own work.
    Nothing is left to it: every command closes the warehouse it opened (common.writer)
    and its thread pools before it returns. When another thread still runs (none of the
    commands leaves one; a caller's may), the interpreter ends the process as usual."""
    if isinstance(code, str):
        print(code, file=sys.stderr)
    status = code if isinstance(code, int) else (0 if code is None else 1)
    if any(
        t.is_alive() and not t.daemon
        for t in threading.enumerate()
        if t is not threading.main_thread()
    ):
        sys.exit(status)
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):  # a reader that left (`| head`), a closed stream
            status = status or 120  # the interpreter's status when its final flush fails
    os._exit(status)
