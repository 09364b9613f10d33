"""`proforma serve` (the API and the leaderboard pages) and `proforma users ...`."""

from __future__ import annotations

import typer
from rich.table import Table

from proforma.app.cli.common import console, server_record, status_console, summary, writer
from proforma.contracts.errors import UserError


def run_server(
    host: str = "127.0.0.1", port: int = 8000, log_level: str = "info", log_format: str = "json"
) -> None:
    """Apply migrations, print the URL, serve until stopped (ONE worker: the warehouse's
    only writer). `proforma demo` calls this after preparing the demo warehouse."""
    import uvicorn

    from proforma.app.server import logs
    from proforma.app.server.main import create_app
    from proforma.app.store.settings import get_settings

    if log_format not in ("json", "text"):
        raise UserError(f"--log-format is json or text, not {log_format!r}")

    with writer() as wh:  # migrations and reference data, then release the file
        version = wh.scalar("SELECT max(version) FROM schema_migrations")
    settings = get_settings()
    # one line per event on stderr: JSON by default (docs/operations.md, "Logs"); the
    # access lines are the app's own (with request ids), not uvicorn's
    logs.configure(log_level, log_format)
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    console.print(
        f"[bold]ProForma-20Q[/] serving {settings.warehouse} (schema V{version:04d}) at "
        f"[link]http://{shown}:{port}[/link]  (API: http://{shown}:{port}/api/docs)",
        highlight=False,
    )
    # the record lets `proforma leaderboard` and the other reads ask this server meanwhile
    with server_record(host, port):
        uvicorn.run(
            create_app(settings),
            host=host,
            port=port,
            workers=1,
            log_level=log_level,
            log_config=None,
            access_log=False,
        )


def serve(
    host: str = typer.Option(
        "127.0.0.1", help="Interface to listen on (0.0.0.0 inside a container)."
    ),
    port: int = typer.Option(8000, help="TCP port."),
    log_level: str = typer.Option("info", help="uvicorn log level."),
    log_format: str = typer.Option(
        "json", help="json (one object a line, with request ids) or text."
    ),
) -> None:
    """Serve the API and leaderboard pages. Applies migrations first; runs ONE worker,
    because the server is the warehouse's only writer (stop it before `proforma build`)."""
    run_server(host, port, log_level, log_format)
    summary(f"server on {host}:{port} stopped")


def users_add(
    name: str = typer.Argument(..., help="User name: letters, digits, '_', '.', '-'."),
    admin: bool = typer.Option(False, "--admin", help="May manage users and footprints."),
    daily_limit: int | None = typer.Option(
        None, help="Uploads per UTC day (default: server setting)."
    ),
) -> None:
    """Create a user and print its API token ONCE (only a salted digest is stored)."""
    from proforma.app.api.auth import add_user

    with writer() as wh:
        user, token = add_user(wh, name, admin=admin, daily_limit=daily_limit)
    console.print(f"token for {user.name}: [bold]{token}[/]", highlight=False, soft_wrap=True)
    status_console.print("[yellow]Store it now: it is not shown again.[/]")
    summary(f"user {user.name!r} created{' (admin)' if user.is_admin else ''}")


def users_token(name: str = typer.Argument(..., help="An existing user.")) -> None:
    """Issue another token for a user and print it once."""
    from proforma.app.api.auth import get_user, new_token

    with writer() as wh:
        user = get_user(wh, name)
        if user is None:
            raise UserError(f"No user {name!r}; create it with `proforma users add {name}`.")
        token = new_token(wh, user)
    console.print(f"token for {user.name}: [bold]{token}[/]", highlight=False, soft_wrap=True)
    summary(f"new token issued for {user.name!r}")


def users_revoke(name: str = typer.Argument(..., help="An existing user.")) -> None:
    """Revoke all of a user's tokens."""
    from proforma.app.api.auth import revoke_tokens

    with writer() as wh:
        n = revoke_tokens(wh, name)
    summary(f"{n} token(s) of {name!r} revoked")


def users_list() -> None:
    """List users, roles, limits and active token counts."""
    from proforma.app.api.auth import list_users

    with writer() as wh:
        users = list_users(wh)
    table = Table(title="users")
    for col in ("name", "admin", "daily limit", "active tokens", "created"):
        table.add_column(col)
    for u in users:
        table.add_row(
            u["name"],
            "yes" if u["is_admin"] else "",
            str(u["daily_limit"] or "default"),
            str(u["active_tokens"]),
            f"{u['created_at']:%Y-%m-%d %H:%M}",
        )
    console.print(table)
    summary(f"{len(users)} user(s)")
