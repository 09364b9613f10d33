"""Shared pieces of the CLI: the two consoles, opening the warehouse for writing."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from rich.console import Console

from app.flows.warehouse import prepare
from app.warehouse import Warehouse, connect

#: Data a command exists to print (tables, listings, tokens): stdout.
console = Console(stderr=False)
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
