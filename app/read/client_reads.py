"""What the service hands a client beyond the pages' reads (issue 52): the panel's firm
keys its local check looks files up in, the public snapshot's file, and whether a caller
may fetch a submission's forecasts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from proforma.app.read.errors import Forbidden, NotFound
from proforma.app.read.sqlguard import SnapshotMissing
from proforma.app.store.warehouse import Warehouse

#: Submission sources made here (models, reference baselines), not uploaded.
IN_HOUSE = ("model", "reference")


def panel_keys(wh: Warehouse) -> dict[str, list[str]]:
    """Keys only, never values (as the snapshot's footprint membership): the gvkeys of
    panel.firms (a submission's `firm` must be one of them), the target items, and the
    test split's origin quarters (what a forecast of the static benchmark covers)."""
    wh.require_panel("panel.firms", "panel.truth")
    firms = [r[0] for r in wh.fetchall("SELECT gvkey FROM panel.firms ORDER BY gvkey")]
    items = [r[0] for r in wh.fetchall("SELECT item FROM ref.items WHERE is_target ORDER BY 1")]
    origins = [
        r[0]
        for r in wh.fetchall(
            "SELECT qlabel(origin_q) FROM (SELECT DISTINCT origin_q FROM panel.truth "
            "WHERE split = 'test') ORDER BY origin_q"
        )
    ]
    return {"firms": firms, "items": items, "test_origins": origins}


def snapshot_file(link: Path) -> Path:
    """The published snapshot's current version (the file its link points at), so a
    download reads one version even when a publication swaps the link meanwhile."""
    if not Path(link).exists():
        raise SnapshotMissing("No public snapshot is published yet.")
    return Path(link).resolve()


def forecast_owner_check(
    wh: Warehouse, submission_id: int, user_name: str, is_admin: bool, share_inhouse: bool
) -> dict[str, Any]:
    """The submission's (source, uploaded_by) when the caller may fetch its forecasts:
    its uploader, an admin, or anyone for the in-house models where the deployment shares
    them (PROFORMA_SHARE_INHOUSE_FORECASTS); 403 otherwise, 404 for no such submission."""
    row = wh.fetchone(
        "SELECT source, json_extract_string(metadata, '$.uploaded_by') FROM eval.submissions "
        "WHERE submission_id = ?",
        [submission_id],
    )
    if row is None:
        raise NotFound(f"No submission {submission_id}.")
    source, uploaded_by = row
    if is_admin or (source == "upload" and uploaded_by == user_name):
        return {"source": source, "uploaded_by": uploaded_by}
    if source in IN_HOUSE:
        if share_inhouse:
            return {"source": source, "uploaded_by": uploaded_by}
        raise Forbidden(
            f"Submission {submission_id} is an in-house model's: its forecasts are firm-level "
            f"values this deployment does not share (PROFORMA_SHARE_INHOUSE_FORECASTS)."
        )
    raise Forbidden(f"Submission {submission_id} belongs to another user.")
