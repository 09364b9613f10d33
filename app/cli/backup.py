"""`proforma backup DIR`, `proforma backup --verify DIR` and `proforma restore DIR`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from proforma.app.cli.common import RunningServer, running_server, status_console, summary
from proforma.app.flows.backup import make_backup, server_key_path
from proforma.app.flows.restore import restore_backup, verify_backup
from proforma.app.flows.warehouse import prepare
from proforma.app.store.settings import get_settings
from proforma.app.store.warehouse import connect
from proforma.contracts.errors import UserError, WarehouseLocked


def backup_command(
    folder: Annotated[Path, typer.Argument(help="A new or empty folder for the backup.")],
    verify: Annotated[
        bool, typer.Option("--verify", help="Check an existing backup instead of making one.")
    ] = False,
    server: Annotated[
        str | None,
        typer.Option(
            help="Ask the server at this URL (e.g. http://proforma:8000 from the compose "
            "backup service); its operator key is read beside the warehouse. Default: the "
            "server holding the warehouse, if any."
        ),
    ] = None,
) -> None:
    """Back up the warehouse, the upload store, pending uploads, the rounds' inputs and the
    public snapshot at one point in time, with a manifest (also while `proforma serve`
    runs: the server's worker makes it)."""
    if verify:
        manifest = verify_backup(folder)
        summary(
            f"backup {folder} is whole: {len(manifest['files'])} files and "
            f"{len(manifest['tables'])} tables as its manifest of {manifest['made_at']} says"
        )
        return
    settings = get_settings()
    if server is None and not settings.warehouse.exists():
        raise UserError(f"No warehouse at {settings.warehouse}: nothing to back up.")
    try:
        if server is not None:
            raise WarehouseLocked("the server named by --server holds the warehouse")
        wh = connect(settings)
    except WarehouseLocked as locked:
        holder = (
            RunningServer(0, server.rstrip("/"), settings.warehouse)
            if server is not None
            else running_server(locked)
        )
        answer = _ask_server(holder, folder.absolute())
        status_console.print(holder.note(), highlight=False, soft_wrap=True)
        summary(
            f"backup {answer['folder']}: {answer['tables']} tables ({answer['rows']:,} rows), "
            f"{answer['files']} files, {answer['bytes']:,} bytes in {answer['seconds']:.1f} s"
        )
        return
    try:
        prepare(wh)
        result = make_backup(wh, settings, folder)
    finally:
        wh.close()
    summary(result.line())


def _ask_server(server: RunningServer, folder: Path) -> dict:
    """POST the backup to the running server with its operator key."""
    import urllib.error
    import urllib.request

    try:
        key = server_key_path(get_settings()).read_text().strip()
    except OSError as exc:
        raise UserError(
            f"The server {server.url} holds the warehouse and its operator key cannot be read "
            f"({exc}); run this as the server's user, beside its warehouse."
        ) from None
    request = urllib.request.Request(
        f"{server.url}/api/v1/backups",
        data=json.dumps({"folder": str(folder)}).encode(),
        headers={"Content-Type": "application/json", "X-Proforma-Server-Key": key},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=24 * 3600) as answer:
            return json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        try:
            detail = json.loads(exc.read()).get("detail")
        except ValueError:
            detail = None
        raise UserError(
            f"The server at {server.url} refused the backup: {detail or exc.reason}"
        ) from None
    except (urllib.error.URLError, OSError) as exc:
        raise UserError(f"The server at {server.url} does not answer ({exc}).") from None


def restore_command(
    folder: Annotated[Path, typer.Argument(help="A backup folder (with its manifest.json).")],
) -> None:
    """Check a backup, then restore it into an empty location (PROFORMA_WAREHOUSE and the
    other paths) and migrate it; a damaged or incomplete backup is refused."""
    result = restore_backup(folder, get_settings())
    for name in result.migrations:
        status_console.print(f"applied {name}")
    summary(result.line())
