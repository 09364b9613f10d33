"""Shared pieces of the CLI: the two consoles, opening the warehouse for writing."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

from rich.console import Console

from app.flows.warehouse import prepare
from app.warehouse import Warehouse, connect


def _data_width() -> int | None:
    """A terminal's own width; piped or redirected, room for any table (rich would squeeze
    tables into 80 columns and cut model names), unless COLUMNS says otherwise."""
    if sys.stdout.isatty() or os.environ.get("COLUMNS"):
        return None
    return 400


#: Data a command exists to print (tables, listings, tokens): stdout.
console = Console(stderr=False, width=_data_width())
#: Everything about the run (progress, notes, warnings, the summary line, errors): stderr,
#: so that stdout carries only data and `--format json > file` parses.
status_console = Console(stderr=True)


@contextlib.contextmanager
def writer() -> Iterator[Warehouse]:
    """The warehouse opened for writing, migrated and with current reference data."""
    wh = connect()
    try:
        prepare(wh)
        yield wh
    finally:
        wh.close()


def summary(text: str) -> None:
    """The one line every job ends with (on stderr)."""
    status_console.print(f"[bold green]done:[/] {text}", highlight=False, soft_wrap=True)
