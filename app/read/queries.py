"""The service's reads of the warehouse: every SQL statement a route or page runs lives
here (or in the sql/ file it names), so routers only check access, call these and shape
the response."""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa

from proforma.app.read import board_disclosure, disclosure
from proforma.app.scoring.leaderboard import HAS_DENSITY
from proforma.app.store.sqlfiles import query_text
from proforma.app.store.warehouse import IN_IDS, Warehouse
from proforma.contracts.metrics import METRICS, coverage_names
from proforma.contracts.tracks import TRACKS

# -- health ---------------------------------------------------------------------------------


def schema_version(wh: Warehouse) -> int | None:
    """The newest applied migration."""
    return wh.scalar("SELECT max(version) FROM schema_migrations")


# -- footprints ------------------------------------------------------------------------------

_FOOTPRINTS = """
SELECT footprint_id, name, version, kind, predicate, split, description, n_cells, build_id, created_at
FROM eval.footprints
"""


def footprint_table(wh: Warehouse) -> pa.Table:
    """Every footprint version, by name and version."""
    return wh.arrow(_FOOTPRINTS + " ORDER BY name, version")


def footprint_versions(wh: Warehouse, name: str) -> list[dict[str, Any]]:
    """A footprint's versions with their origin and cell membership counts."""
    versions = wh.arrow(_FOOTPRINTS + " WHERE name = ? ORDER BY version", [name]).to_pylist()
    for v in versions:
        v["origins"] = wh.scalar(
            "SELECT count(*) FROM eval.footprint_origins WHERE footprint_id = ?",
            [v["footprint_id"]],
        )
        v["cells"] = wh.scalar(
            "SELECT count(*) FROM eval.footprint_cells WHERE footprint_id = ?", [v["footprint_id"]]
        )
    return versions


def footprint_record(wh: Warehouse, footprint_id: int) -> dict[str, Any]:
    return wh.arrow(_FOOTPRINTS + " WHERE footprint_id = ?", [footprint_id]).to_pylist()[0]


def footprint_names(wh: Warehouse) -> list[str]:
    """Footprints that exist, `full` first, then by name."""
    if not wh.table_exists("eval.footprints"):
        return []
    return [
        r[0]
        for r in wh.fetchall(
            "SELECT name FROM eval.footprints GROUP BY name ORDER BY name = 'full' DESC, name"
        )
    ]


# -- leaderboards ----------------------------------------------------------------------------

#: The tracks of the paper's results table as the index and the pages list them.
TRACK_INFO: list[dict[str, str]] = [
    {"name": t.name, "label": t.label, "metric": t.metric} for t in TRACKS.values()
]


def score_run(
    wh: Warehouse, footprint: str, score_run_id: int | None = None
) -> dict[str, Any] | None:
    """The record of one score run of a footprint, with its provenance (build and eval
    versions): run `score_run_id`, or the footprint's board (eval.board_runs). A leaderboard is built from the
    record's `score_run_id`, so that it and its description are of the same run even
    when another run lands in between."""
    table = wh.arrow(
        """
        SELECT score_run_id, footprint_name, footprint_version, submission_ids, footprint_cells,
               n_cells, build_id, json_extract_string(build, '$.sql_checksum') AS build_sql_version,
               eval_sql_version, started_at, finished_at, elapsed_s
        FROM eval.score_runs WHERE footprint_name = ?
          AND score_run_id = coalesce(CAST(? AS INTEGER),
              (SELECT score_run_id FROM eval.board_runs WHERE footprint_name = ?))
        """,
        [footprint, score_run_id, footprint],
    )
    return table.to_pylist()[0] if table.num_rows else None


def leaderboard_table(
    wh: Warehouse,
    footprint: str,
    track: str,
    by: str,
    against: str | None = None,
    *,
    score_run_id: int,
    clean_after: str | None = None,
    cards: Any = None,
) -> pa.Table:
    """proforma.app.scoring's leaderboard of run `score_run_id` (from `score_run`), `by` =
    global for the overall ranking."""
    from proforma.app import scoring

    table = scoring.leaderboard(
        wh,
        footprint,
        track,
        None if by == "global" else by,
        against=against or None,
        score_run_id=score_run_id,
        public=True,
        clean_after=clean_after or None,
        cards=cards,
    )
    return _coarse_leaderboard(wh, table, by)


def _coarse_leaderboard(wh: Warehouse, table: pa.Table, by: str) -> pa.Table:
    """The leaderboard as the public sees it (proforma.app.read.disclosure): an upload's
    numbers with its keyed noise, or withheld on a footprint made after it was admitted;
    every test that involves an upload withheld (the leader of the tests is already the
    best submission that is not one); the ranks those of the public numbers."""
    if table.num_rows == 0 or "source" not in table.column_names:
        return table
    rows = table.to_pylist()
    if not any(r.get("source") == "upload" for r in rows):
        return table
    meta = {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()}
    run = int(meta["score_run_id"]) if "score_run_id" in meta else None
    footprint_id = (
        wh.scalar("SELECT footprint_id FROM eval.score_runs WHERE score_run_id = ?", [run])
        if run is not None
        else None
    )
    on_slice = bool(meta.get("clean_after"))
    reference = meta.get("dm_reference", "leader")
    reference_is_upload = reference != "leader" and any(
        r.get("source") == "upload" and r.get("model") == reference for r in rows
    )
    key = disclosure.Dither(wh)
    out = []
    for r in rows:
        if r.get("source") == "upload":
            label = _label(by, r.get("horizon"), r.get("item"), r.get("statement"))
            sid = int(r["submission_id"])
            if key.public_on(sid, footprint_id):
                exact, r = r, disclosure.coarsen_metrics(r, key, sid, label)
                r = board_disclosure.public_board_row(r, exact, key, on_slice=on_slice)
            else:
                r = board_disclosure.public_board_row(r, r, key, on_slice=True)
        if r.get("source") == "upload" or reference_is_upload:
            for col in ("dm_vs_leader", "dm_vs_reference", "p_value"):
                if col in r:
                    r[col] = None
            if "sig" in r:
                r["sig"] = ""
        out.append(r)
    return pa.Table.from_pylist(_public_ranks(out, meta.get("track"), by), schema=table.schema)


def _public_ranks(rows: list[dict[str, Any]], track: str | None, by: str) -> list[dict[str, Any]]:
    """`rows` ranked within their groups by the track's metric as published."""
    spec = TRACKS.get(track or "")
    if spec is None or "rank" not in (rows[0] if rows else {}):
        return rows
    group = None if by == "global" else by

    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        v = r.get(spec.metric)
        if v is None or math.isnan(float(v)):
            return (True, 0.0)
        return (False, float(v) if spec.ascending else -float(v))

    groups: dict[Any, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(r.get(group) if group else None, []).append(r)
    out = []
    for members in groups.values():
        for rank, r in enumerate(sorted(members, key=key), 1):
            out.append({**r, "rank": rank})
    return out


def _label(level: str, horizon: Any, item: Any, statement: Any) -> str:
    """The group of a metrics row as sql/public/005 names it (level/horizon/item/statement)."""
    parts = ["" if v is None else str(v) for v in (horizon, item, statement)]
    return "/".join([level, *parts])


def _uploads_coarse(
    wh: Warehouse, score_run_id: int, rows: list[tuple[Any, ...]], fix: Any
) -> list[tuple[Any, ...]]:
    """`rows` of run `score_run_id` with `fix(row, key)` applied to rows of uploads (first
    column: the submission; last: whether it is an upload, dropped), or None for an
    upload's row on a footprint made after it was admitted."""
    if not any(r[-1] for r in rows):
        return [r[:-1] for r in rows]
    key = disclosure.Dither(wh)
    footprint_id = wh.scalar(
        "SELECT footprint_id FROM eval.score_runs WHERE score_run_id = ?", [score_run_id]
    )
    out = []
    for r in rows:
        if not r[-1]:
            out.append(r[:-1])
        elif key.public_on(int(r[0]), footprint_id):
            out.append(fix(r[:-1], key))
    return out


def horizon_series(wh: Warehouse, score_run_id: int, metric: str) -> list[tuple[Any, ...]]:
    """(submission_id, name, horizon, value) of a run's metric by horizon (the page's chart;
    an upload's values as everywhere in public, proforma.app.read.disclosure)."""
    rows = wh.fetchall(
        f"""
        SELECT m.submission_id, s.name, m.horizon, m.{metric}, m.n, m.mse, m.r2,
               s.source = 'upload'
        FROM eval.metrics m JOIN eval.submissions s USING (submission_id)
        WHERE m.score_run_id = ? AND m.level = 'horizon'
        ORDER BY s.name, m.horizon
        """,
        [score_run_id],
    )

    def fix(r: tuple[Any, ...], key: disclosure.Dither) -> tuple[Any, ...]:
        sid, name, h, value, n, mse, r2 = r
        row = disclosure.coarsen_metrics(
            {"n": n, "mse": mse, "r2": r2, metric: value},
            key,
            sid,
            _label("horizon", h, None, None),
        )
        return (sid, name, h, row[metric])

    return [r[:4] for r in _uploads_coarse(wh, score_run_id, rows, fix)]


def density_coverage(wh: Warehouse, score_run_id: int) -> list[tuple[Any, ...]]:
    """(submission_id, name, cov50, cov80, cov90, cov95) of a run's density forecasts (the
    coverage metrics of contracts/metrics.py, in level order)."""
    names = coverage_names()
    k = len(names)
    rows = wh.fetchall(
        f"""
        SELECT m.submission_id, s.name, {", ".join("m." + c for c in names)}, m.n,
               s.source = 'upload'
        FROM eval.metrics m JOIN eval.submissions s USING (submission_id)
        WHERE m.score_run_id = ? AND m.level = 'global' AND {HAS_DENSITY}
        ORDER BY s.name
        """,
        [score_run_id],
    )

    def fix(r: tuple[Any, ...], key: disclosure.Dither) -> tuple[Any, ...]:
        row = disclosure.coarsen_metrics(
            {"n": r[2 + k], **dict(zip(names, r[2 : 2 + k], strict=True))},
            key,
            r[0],
            _label("global", None, None, None),
        )
        return (r[0], r[1], *(row[c] for c in names), r[2 + k])

    return [r[: 2 + k] for r in _uploads_coarse(wh, score_run_id, rows, fix)]


def pit_histograms(wh: Warehouse, score_run_id: int) -> list[tuple[Any, ...]]:
    """(submission_id, name, bin shares) of a run's density forecasts (an upload's PIT
    histogram is not public: proforma.app.read.disclosure)."""
    return [
        tuple(r)
        for r in wh.fetchall(
            f"""
            SELECT p.submission_id, s.name, list(p.share ORDER BY p.bin)
            FROM eval.pit p JOIN eval.submissions s USING (submission_id)
            WHERE p.score_run_id = ? AND {HAS_DENSITY} AND s.source <> 'upload'
            GROUP BY ALL ORDER BY s.name
            """,
            [score_run_id],
        )
    ]


# -- submissions -----------------------------------------------------------------------------


def submission_table(wh: Warehouse) -> pa.Table:
    """Every submission's record (sql/service/submission_records.sql), by id."""
    return wh.arrow(
        f"SELECT * FROM ({query_text('service/submission_records')}) AS s ORDER BY s.submission_id"
    )


def submission_record(wh: Warehouse, submission_id: int) -> dict[str, Any] | None:
    """The public record, with `stale`: why new score runs leave the submission out when
    it was made against an earlier panel (None when it is current)."""
    from proforma.app.scoring.submissions.current import stale_submissions

    table = wh.arrow(
        f"SELECT * FROM ({query_text('service/submission_records')}) AS s "
        "WHERE s.submission_id = ?",
        [submission_id],
    )
    if not table.num_rows:
        return None
    record = table.to_pylist()[0]
    record["stale"] = stale_submissions(wh, [submission_id]).get(submission_id)
    return record


def submission_scores(wh: Warehouse, submission_id: int) -> list[dict[str, Any]]:
    """Per footprint, the latest score run that includes the submission: its metrics by
    level (global, horizon, item, statement), its coverage and its PIT histogram."""
    runs = wh.fetchall(
        """
        SELECT footprint_name, max(score_run_id)
        FROM eval.score_runs WHERE list_contains(submission_ids, ?)
        GROUP BY footprint_name ORDER BY footprint_name
        """,
        [submission_id],
    )
    out = []
    columns = ", ".join(f"m.{c}" for c in METRICS)
    for footprint, run in runs:
        metrics = wh.arrow(
            f"""
            SELECT m.level, m.horizon, i.item, coalesce(m.statement, i.statement) AS statement,
                   m.statement AS own_statement, m.n, {columns}
            FROM eval.metrics m LEFT JOIN ref.items i USING (item_id)
            WHERE m.score_run_id = ? AND m.submission_id = ? AND m.level IN ('global', 'horizon', 'item', 'statement')
            ORDER BY m.level, m.horizon, m.item_id, m.statement
            """,
            [run, submission_id],
        ).to_pylist()
        coverage = wh.fetchone(
            "SELECT footprint_cells, predicted_cells, coverage FROM eval.coverage "
            "WHERE score_run_id = ? AND submission_id = ?",
            [run, submission_id],
        )
        bins = wh.fetchall(
            "SELECT bin, share FROM eval.pit WHERE score_run_id = ? AND submission_id = ? "
            "ORDER BY bin",
            [run, submission_id],
        )
        pit = [r[1] for r in bins]
        upload = bool(
            wh.scalar(
                "SELECT source = 'upload' FROM eval.submissions WHERE submission_id = ?",
                [submission_id],
            )
        )
        key = disclosure.Dither(wh) if upload else None
        hidden = False
        if key is not None:
            # as sql/public/005: no PIT histogram; nothing on a footprint made after it
            pit = []
            hidden = not key.public_on(
                submission_id,
                wh.scalar("SELECT footprint_id FROM eval.score_runs WHERE score_run_id = ?", [run]),
            )
        by_level: dict[str, list[dict[str, Any]]] = {}
        for m in metrics:
            own = m.pop("own_statement")
            if key is not None and hidden:
                m = {**m, **{name: None for name in METRICS}}
            elif key is not None:
                label = _label(m["level"], m["horizon"], m["item"], own)
                m = disclosure.coarsen_metrics(m, key, submission_id, label)
            by_level.setdefault(m.pop("level"), []).append(m)
        out.append(
            {
                "footprint": footprint,
                "score_run_id": run,
                "coverage": dict(
                    zip(("footprint_cells", "predicted_cells", "coverage"), coverage, strict=True)
                )
                if coverage
                else None,
                "global": by_level["global"][0] if by_level.get("global") else None,
                "by_horizon": by_level.get("horizon", []),
                "by_item": by_level.get("item", []),
                "by_statement": by_level.get("statement", []),
                "pit": pit,
            }
        )
    return out


def submission_names(wh: Warehouse, submission_ids: list[int]) -> list[str]:
    """The names of these submissions, sorted."""
    return [
        n
        for (n,) in wh.fetchall(
            f"SELECT name FROM eval.submissions WHERE submission_id {IN_IDS} ORDER BY name",
            [submission_ids],
        )
    ]


def name_in_use(wh: Warehouse, name: str) -> str | None:
    """Why a model name cannot be taken by a new upload (a current submission or an
    unfinished job already has it), or None."""
    taken = wh.fetchone(
        "SELECT submission_id FROM eval.submissions WHERE name = ? AND retired_at IS NULL", [name]
    )
    if taken:
        return f"A submission named {name!r} exists already (id {taken[0]}); choose another name."
    pending = wh.fetchone(
        "SELECT job_id FROM service.jobs WHERE model_name = ? AND status IN ('queued', 'validating', 'scoring')",
        [name],
    )
    if pending:
        return f"Job {pending[0]} is already processing a submission named {name!r}."
    return None
