"""What a client downloads (issue 52): the panel's keys (firms for its local check of a
file, the target items and test origins a forecast covers), the public snapshot as a DuckDB file for local SQL, and a submission's forecasts
as the published submission file (the caller's own uploads; the in-house models' where
the deployment shares them)."""

from __future__ import annotations

import contextlib
import json
import secrets
from pathlib import Path
from typing import Any

from fastapi import APIRouter
from fastapi.responses import FileResponse
from starlette.background import BackgroundTask

from proforma.app.api.deps import CurrentUser, SettingsDep, WarehouseDep
from proforma.app.flows.forecast_file import write_forecast_file
from proforma.app.read.client_reads import forecast_owner_check, panel_keys, snapshot_file

router = APIRouter(tags=["client"])


@router.get(
    "/reference/keys",
    summary="The panel's keys a submission names: firms (gvkeys), target items, test origins",
)
def keys(wh: WarehouseDep) -> dict[str, Any]:
    return panel_keys(wh)


@router.get(
    "/public/snapshot",
    summary="The public snapshot (public.duckdb) as a file, for local SQL",
    response_class=FileResponse,
)
def snapshot(settings: SettingsDep) -> FileResponse:
    path = snapshot_file(Path(settings.public_snapshot))
    return FileResponse(
        path,
        media_type="application/octet-stream",
        filename="public.duckdb",
        headers={"X-Snapshot-Version": path.name},
    )


def _remove(*paths: Path | None) -> None:
    for path in paths:
        if path is not None:
            with contextlib.suppress(OSError):
                path.unlink()


@router.get(
    "/submissions/{submission_id}/forecasts",
    summary="A submission's forecasts as the published submission file (token; the owner's "
    "uploads, the in-house models where shared)",
    response_class=FileResponse,
)
def forecasts(
    submission_id: int, user: CurrentUser, wh: WarehouseDep, settings: SettingsDep
) -> FileResponse:
    """Parquet (firm, target, origin, horizon, prediction[, sigma][, component |
    quantile_level]); the density family in the headers X-Forecast-Family and
    X-Forecast-Df (a client writes them as the `{stem}.nll.json` sidecar)."""
    forecast_owner_check(
        wh, submission_id, user.name, user.is_admin, settings.share_inhouse_forecasts
    )
    # written beside the service's other working files (the data volume, not /tmp: a
    # full-coverage file is gigabytes), removed once sent
    folder = Path(settings.cache_dir) / "forecasts"
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / f"forecasts-{submission_id}-{secrets.token_hex(6)}.parquet"
    try:
        written = write_forecast_file(wh, submission_id, out)
    except BaseException:
        _remove(out, out.with_name(f"{out.stem}.nll.json"))
        raise
    headers = {"X-Forecast-Family": written.family, "X-Forecast-Rows": str(written.rows)}
    if written.sidecar is not None:
        df = json.loads(written.sidecar.read_text()).get("df")
        if df is not None:
            headers["X-Forecast-Df"] = repr(float(df))
    return FileResponse(
        out,
        media_type="application/vnd.apache.parquet",
        filename=f"{written.name}.parquet",
        headers=headers,
        background=BackgroundTask(_remove, out, written.sidecar),
    )
