"""Reading rounds: the round records, their state (open, closed, resolving, resolved) and
counts, as plain dicts for the CLI, the API and the pages."""

from __future__ import annotations

import datetime as dt
from typing import Any

from proforma.app.store.warehouse import Warehouse
from proforma.contracts.errors import UserError
from proforma.contracts.provenance import utcnow
from proforma.contracts.quarters import quarter_label

HORIZONS = 20

_ROUND_COLUMNS = (
    "round_id, name, origin_q, deadline, opened_at, build_id, ingest_id, rules, "
    "n_origins, n_cells, inputs"
)


class RoundNotFound(UserError):
    """No round of that name (the API answers 404)."""

    status_code = 404


def has_rounds(wh: Warehouse) -> bool:
    return wh.table_exists("rounds.rounds")


def _require(wh: Warehouse) -> None:
    if not has_rounds(wh):
        raise UserError("This warehouse has no rounds tables: run `proforma migrate`.")


def _record(wh: Warehouse, row: tuple, now: dt.datetime) -> dict[str, Any]:
    keys = [c.strip() for c in _ROUND_COLUMNS.split(",")]
    r = dict(zip(keys, row, strict=True))
    rid = r["round_id"]
    per_h = dict(
        wh.fetchall(
            "SELECT horizon, count(*) FROM rounds.truth WHERE round_id = ? GROUP BY 1", [rid]
        )
    )
    r["origin"] = quarter_label(r["origin_q"])
    resolved = sum(per_h.values())
    r["cells_resolved"] = int(resolved)
    r["resolved_by_horizon"] = [int(per_h.get(h, 0)) for h in range(1, HORIZONS + 1)]
    r["cells_per_horizon"] = r["n_cells"] // HORIZONS if r["n_cells"] else 0
    r["submissions"] = int(
        wh.scalar("SELECT count(*) FROM rounds.submissions WHERE round_id = ?", [rid])
    )
    last = wh.scalar("SELECT max(horizon) FROM rounds.truth WHERE round_id = ?", [rid])
    r["last_resolved_quarter"] = quarter_label(r["origin_q"] + int(last)) if last else None
    if now < r["deadline"]:
        r["state"] = "open"
    elif not resolved:
        r["state"] = "closed"
    elif last == HORIZONS:
        r["state"] = "resolved"
    else:
        r["state"] = "resolving"
    return r


def list_rounds(wh: Warehouse, now: dt.datetime | None = None) -> list[dict[str, Any]]:
    _require(wh)
    now = now or utcnow()
    rows = wh.fetchall(f"SELECT {_ROUND_COLUMNS} FROM rounds.rounds ORDER BY round_id")
    return [_record(wh, row, now) for row in rows]


def get_round(wh: Warehouse, name: str, now: dt.datetime | None = None) -> dict[str, Any]:
    _require(wh)
    row = wh.fetchone(f"SELECT {_ROUND_COLUMNS} FROM rounds.rounds WHERE name = ?", [name])
    if row is None:
        known = [r[0] for r in wh.fetchall("SELECT name FROM rounds.rounds ORDER BY round_id")]
        raise RoundNotFound(
            f"No round {name!r}"
            + (f" (rounds: {', '.join(known)})" if known else " (no round is open yet)")
        )
    return _record(wh, row, now or utcnow())


def round_submissions(wh: Warehouse, round_id: int) -> list[dict[str, Any]]:
    rows = wh.fetchall(
        "SELECT s.submission_id, s.name, s.kind, s.family, s.sha256, s.rows, s.received_at, "
        "  (SELECT count(*) FROM rounds.cell_scores c WHERE c.submission_id = s.submission_id)"
        " FROM rounds.submissions s WHERE s.round_id = ? ORDER BY s.submission_id",
        [round_id],
    )
    keys = ("submission_id", "name", "kind", "family", "sha256", "rows", "received_at", "scored")
    return [dict(zip(keys, r, strict=True)) for r in rows]


def close_round(wh: Warehouse, name: str, now: dt.datetime | None = None) -> dict[str, Any]:
    """Move a round's deadline to now (a deadline only moves earlier)."""
    now = now or utcnow()
    rnd = get_round(wh, name, now)
    if rnd["deadline"] <= now:
        raise UserError(f"Round {name!r} closed already at {rnd['deadline']:%Y-%m-%d %H:%M:%S} UTC")
    wh.execute("UPDATE rounds.rounds SET deadline = ? WHERE round_id = ?", [now, rnd["round_id"]])
    return get_round(wh, name, now)
