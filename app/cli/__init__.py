"""`proforma ...`: the command line. Each module in COMMAND_MODULES adds its commands.

Errors a user can cause (app.errors.UserError) print as one red line and exit 2;
anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import importlib
import sys

import typer

from app.cli.common import console
from app.errors import UserError

app = typer.Typer(
    name="proforma",
    help="ProForma-20Q: build the benchmark, train and score forecasters, serve leaderboards.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
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
    "app.cli.chronos",
    "app.cli.build",
    "app.cli.demo",
]

for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(app)


def main() -> None:
    try:
        app()
    except UserError as exc:
        console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
