"""`proforma ...`: the command line. Each module in COMMAND_MODULES adds its commands;
`proforma --help` lists them in the order of app.cli.help.WORKFLOW (add a new command
there).

Output: data (tables, csv, json, tokens) goes to stdout, everything else (progress,
notes, warnings, the closing `done:` line, errors) to stderr, so `--format json > f`
writes a file that parses. Errors a user can cause (app.errors.UserError) print as one
red line and exit 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import importlib
import sys

import typer

from app.cli.common import status_console
from app.cli.help import WorkflowGroup
from app.errors import UserError

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

# Each module defines `register(app: typer.Typer) -> None`.
COMMAND_MODULES = [
    "app.cli.db",
    "app.cli.ingest",
    "app.cli.synthetic",
    "app.cli.serve",
    "app.cli.forma",
    "app.cli.score",
    "app.cli.baselines",
    "app.cli.llm",
    "app.cli.chronos",
    "app.cli.build",
    "app.cli.report",
    "app.cli.demo",
]

for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(app)


def main() -> None:
    try:
        app()
    except UserError as exc:
        status_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
