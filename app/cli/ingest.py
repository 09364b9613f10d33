"""`proforma ingest ...`: fill the raw tables from a source."""

from __future__ import annotations

import typer

from app.cli.common import summary, writer
from app.sources import ingest
from app.sources.base import Source

ingest_app = typer.Typer(help="Load raw Compustat-shaped data into the warehouse.", no_args_is_help=True)


def run_ingest(source: Source) -> None:
    with writer() as wh:
        result = ingest(wh, source)
    summary(result.line())


def register(app: typer.Typer) -> None:
    app.add_typer(ingest_app, name="ingest")
