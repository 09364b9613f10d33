"""POST /api/v1/backups: a backup made by the server's job worker (the warehouse's one
writer) while the service keeps answering (proforma.app.flows.backup).

For an admin token, or for the operator's key the server leaves beside the warehouse
(`<warehouse>.server.key`, mode 0600: whoever can read it can read the warehouse file
itself), which `proforma backup DIR` sends when it finds the server holding the
warehouse. The folder is a path on the server's machine.
"""

from __future__ import annotations

import hmac
from concurrent.futures import CancelledError
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Request
from pydantic import BaseModel, Field

from proforma.app.api.deps import JobsDep, get_admin, get_current_user
from proforma.app.read.deps import SettingsDep, WarehouseDep
from proforma.app.read.errors import ApiError, Forbidden

router = APIRouter(prefix="/backups", tags=["operations"])


class Unavailable(ApiError):
    status_code = 503


#: The header carrying the operator's key.
KEY_HEADER = "X-Proforma-Server-Key"


def operator(
    request: Request,
    wh: WarehouseDep,
    key: Annotated[str | None, Header(alias=KEY_HEADER)] = None,
) -> str:
    """'key' for the server's operator key, else the admin's name (or a 401/403)."""
    expected = getattr(request.app.state, "server_key", None)
    if key is not None:
        if expected and hmac.compare_digest(key.encode(), expected.encode()):
            return "key"
        raise Forbidden(f"The {KEY_HEADER} header does not hold this server's key.")
    from fastapi.security import HTTPAuthorizationCredentials

    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    credentials = (
        HTTPAuthorizationCredentials(scheme=scheme, credentials=token.strip())
        if scheme.lower() == "bearer" and token.strip()
        else None
    )
    return get_admin(get_current_user(wh, credentials, request)).name


class NewBackup(BaseModel):
    folder: str = Field(..., description="A new or empty folder on the server's machine")


@router.post("", status_code=201, summary="Back up the service at one point in time (operator)")
def backup(
    body: NewBackup,
    who: Annotated[str, Depends(operator)],
    jobs: JobsDep,
    settings: SettingsDep,
) -> dict[str, Any]:
    from proforma.app.flows.backup import prepare_folder

    if not jobs.alive():
        raise Unavailable("The job worker is not running; no backup can be made now.")
    folder = prepare_folder(Path(body.folder))  # refused here, before the worker's turn
    try:
        result = jobs.request_backup(folder).result()
    except CancelledError:
        raise Unavailable("The server stopped before the backup started; ask again.") from None
    m = result.manifest
    return {
        "folder": str(result.folder),
        "made_at": m["made_at"],
        "schema_version": m["schema_version"],
        "tables": len(m["tables"]),
        "rows": sum(m["tables"].values()),
        "files": len(m["files"]),
        "bytes": m["bytes"],
        "seconds": round(result.seconds, 3),
        "requested_by": who,
    }
