"""`proforma ingest ...`: fill the raw tables from a source."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from proforma.app.cli.common import status_console, summary, writer
from proforma.app.sources import ingest
from proforma.app.sources.base import Source


def run_ingest(source: Source) -> None:
    with writer() as wh:
        result = ingest(wh, source)
    summary(result.line())


def ingest_wrds(
    user: Annotated[
        str, typer.Option("--user", help="Your WRDS user name (password from ~/.pgpass).")
    ],
    start: Annotated[int, typer.Option("--start", help="First calendar year of datadate.")] = 1970,
    end: Annotated[int, typer.Option("--end", help="Last calendar year of datadate.")] = 2024,
    cache_dir: Annotated[
        Path | None,
        typer.Option(
            "--cache-dir", help="Where yearly chunks are cached (default: PROFORMA_CACHE_DIR)."
        ),
    ] = None,
    host: Annotated[
        str | None,
        typer.Option(
            "--host",
            help="Server (default: PROFORMA_WRDS_HOST, else wrds-pgdata.wharton.upenn.edu; "
            "PGHOST is not read).",
        ),
    ] = None,
    port: Annotated[
        int | None,
        typer.Option("--port", help="Port (default: PROFORMA_WRDS_PORT, else 9737)."),
    ] = None,
    database: Annotated[
        str | None,
        typer.Option("--database", help="Database (default: PROFORMA_WRDS_DATABASE, else wrds)."),
    ] = None,
    refresh: Annotated[
        bool,
        typer.Option("--refresh", help="Pull every chunk again, cached or not (one login)."),
    ] = False,
    incremental: Annotated[
        bool,
        typer.Option(
            "--incremental",
            help="A later pull: fetch again only the years from the cached pull's newest "
            "quarter through --end (the quarters filed since), keep the rest (one login).",
        ),
    ] = False,
) -> None:
    """Pull comp.fundq, comp.co_industry and crsp.ccmxpf_lnkhist from WRDS into raw.*.

    Makes AT MOST ONE login attempt and never retries: WRDS deactivates accounts
    after repeated failed two-factor attempts. If the login fails, fix the cause
    (~/.pgpass, Duo approval) and run the command once more by hand, never in a loop.
    Chunks (one per year) are cached on disk, so an interrupted pull resumes. The
    connection always requires SSL.
    """
    from proforma.app.sources.wrds import Server, WrdsSource
    from proforma.app.store.settings import get_settings

    server = Server.from_settings(get_settings(), host=host, port=port, database=database)
    source = WrdsSource(
        user,
        start_year=start,
        end_year=end,
        cache_dir=cache_dir,
        console=status_console,
        server=server,
        refresh=refresh,
        incremental=incremental,
    )
    # Fail fast if another process holds the warehouse, before a long pull and a Duo push.
    with writer():
        pass
    todo = source.missing()
    total = len(source.chunks())
    for line in source.cached_lines():
        status_console.print(line, highlight=False, soft_wrap=True)
    if todo:
        note = source.server.pghost_note()
        if note:
            status_console.print(f"note: {note}", highlight=False, soft_wrap=True)
    status_console.print(
        f"WRDS pull {start}-{end} from {source.server.line()} as {user}: "
        f"{total - len(todo)} of {total} chunks cached, "
        f"{len(todo)} to fetch" + (" (one login)" if todo else " (no login needed)"),
        highlight=False,
        soft_wrap=True,
    )
    source.pull()  # outside the warehouse: it is not held open during the download
    with writer() as wh:
        result = ingest(wh, source)
    for line in source.resolved_lines():
        status_console.print(f"resolved: {line}", highlight=False, soft_wrap=True)
    summary(result.line())


def ingest_parquet(
    path: Annotated[
        Path,
        typer.Argument(
            metavar="PATH",
            help="Compustat-shaped raw panel parquet (gvkey, datadate, fyearq, fqtr, the "
            "items, sich, naicsh, permno).",
        ),
    ],
    industry: Annotated[
        Path | None,
        typer.Option(
            "--industry",
            help="Parquet of comp.co_industry rows (gvkey, datadate, sich, naicsh); "
            "default: the panel's own sich/naicsh.",
        ),
    ] = None,
    links: Annotated[
        Path | None,
        typer.Option(
            "--links",
            help="Parquet of crsp.ccmxpf_lnkhist rows (gvkey, lpermno, linktype, linkprim, "
            "linkdt, linkenddt); default: derived from the panel's permno.",
        ),
    ] = None,
) -> None:
    """Load a raw panel parquet file into raw.* after validating it (nothing is written on error)."""
    from proforma.app.sources.parquet import ParquetSource

    source = ParquetSource(path, industry=industry, links=links)
    try:
        source.validate()  # before opening the warehouse: a bad file costs nothing
        for note in source.notes:
            status_console.print(f"note: {note}", highlight=False)
        run_ingest(source)
    finally:
        source.close()
