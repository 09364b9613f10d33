"""`proforma migrate` and `proforma db status`."""

from __future__ import annotations

from rich.table import Table

from app.cli.common import console, status_console, summary
from app.flows.warehouse import prepare
from app.migrations import status
from app.settings import get_settings
from app.warehouse import connect


def migrate_command() -> None:
    """Apply pending migrations (each once, in order, in a transaction) and load reference data."""
    with connect() as wh:
        applied = prepare(wh)
        for name in applied:
            status_console.print(f"applied {name}")
        summary(f"{len(applied)} migration(s) applied to {wh.path}")


def db_status() -> None:
    """Show migrations (applied, pending, edited, missing) and row counts of the main tables."""
    settings = get_settings()
    with connect(read_only=settings.warehouse.exists()) as wh:
        table = Table(title=f"migrations in {wh.path}")
        for col in ("version", "name", "status", "applied at"):
            table.add_column(col)
        states = status(wh)
        for s in states:
            colour = {"applied": "green", "pending": "yellow"}.get(s.status, "red")
            table.add_row(
                f"V{s.version:04d}", s.name, f"[{colour}]{s.status}[/]", str(s.applied_at or "")
            )
        console.print(table)
        counts = Table(title="tables")
        counts.add_column("table")
        counts.add_column("rows", justify="right")
        for schema, name in wh.fetchall(
            "SELECT table_schema, table_name FROM information_schema.tables "
            "WHERE table_type = 'BASE TABLE' ORDER BY 1, 2"
        ):
            n = wh.scalar(f'SELECT count(*) FROM "{schema}"."{name}"')
            counts.add_row(f"{schema}.{name}", f"{n:,}")
        console.print(counts)
        pending = sum(s.status == "pending" for s in states)
        summary(f"{len(states)} migration(s), {pending} pending")
