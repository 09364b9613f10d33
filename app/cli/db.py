"""`proforma migrate` and `proforma db status`."""

from __future__ import annotations

from rich.table import Table

from proforma.app.cli.common import RunningServer, console, running_server, status_console, summary
from proforma.app.flows.warehouse import prepare
from proforma.app.store.migrations import discover, status
from proforma.app.store.settings import get_settings
from proforma.app.store.warehouse import connect
from proforma.contracts.errors import WarehouseLocked


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
    try:
        wh = connect(read_only=settings.warehouse.exists())
    except WarehouseLocked as locked:
        _served_status(running_server(locked))
        return
    with wh:
        table = Table(title=f"migrations in {wh.path}")
        for col in ("version", "name", "status", "applied at"):
            table.add_column(col)
        states = status(wh)
        for s in states:
            colour = {"applied": "green", "pending": "yellow"}.get(s.status, "red")
            shown = f"{s.status} (earlier checksum)" if s.legacy else s.status
            table.add_row(
                f"V{s.version:04d}", s.name, f"[{colour}]{shown}[/]", str(s.applied_at or "")
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


def _served_status(server: RunningServer) -> None:
    """While `proforma serve` holds the warehouse: its schema version (from the server's
    health) against the migrations this install ships, and the row counts of the public
    snapshot it republishes (the warehouse's own tables cannot be read beside it)."""
    import duckdb

    health = server.get("/api/v1/health")
    version = int(health.get("schema_version") or 0)
    table = Table(title=f"migrations in {server.warehouse} (as the server reports them)")
    for col in ("version", "name", "status"):
        table.add_column(col)
    shipped = discover()
    for m in shipped:
        done = m.version <= version
        table.add_row(
            f"V{m.version:04d}", m.name, "[green]applied[/]" if done else "[yellow]pending[/]"
        )
    console.print(table)
    snapshot = get_settings().public_snapshot
    counts = Table(title=f"tables of the public snapshot {snapshot}")
    counts.add_column("table")
    counts.add_column("rows", justify="right")
    published = (health.get("snapshot") or {}).get("published_at")
    try:
        with duckdb.connect(str(snapshot), read_only=True) as con:
            # views too: metrics and pit are views over the rows stored once (schema store)
            names = con.execute(
                "SELECT table_schema, table_name, table_type = 'VIEW' "
                "FROM information_schema.tables ORDER BY 1, 2"
            ).fetchall()
            for schema, name, view in names:
                (n,) = con.execute(f'SELECT count(*) FROM "{schema}"."{name}"').fetchone() or (0,)
                counts.add_row(f"{schema}.{name}" + (" (view)" if view else ""), f"{n:,}")
        console.print(counts)
    except duckdb.Error as exc:
        status_console.print(f"[yellow]public snapshot {snapshot} not readable: {exc}[/]")
    status_console.print(server.note(), highlight=False, soft_wrap=True)
    pending = sum(m.version > version for m in shipped)
    summary(
        f"{len(shipped)} migration(s), {pending} pending (schema V{version:04d} per the server; "
        f"snapshot published {published or 'never'})"
    )
