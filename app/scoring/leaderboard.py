"""Leaderboards and exports from the eval.* result tables."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

from proforma.app.scoring.cards import CardFilter, shown
from proforma.app.scoring.significance import Group, Pair, dm_test_rows
from proforma.app.scoring.slices import add_clean_columns, parse_slice, slice_rows
from proforma.app.store.warehouse import IN_IDS, Warehouse
from proforma.contracts.errors import UserError
from proforma.contracts.metrics import UNCERTAINTY_METRICS
from proforma.contracts.quarters import quarter_label
from proforma.contracts.tracks import TRACK_NAMES, TRACKS

#: SQL over eval.submissions s: the submission has a forecast distribution (a sigma, or a
#: quantile forecast: CRPS and coverage, no NLL).
HAS_DENSITY = "(s.has_sigma OR s.family = 'quantile')"
BY = {None: "global", "horizon": "horizon", "item": "item", "statement": "statement"}
RESULT_TABLES = (
    "metrics",
    "quarter_losses",
    "dm_tests",
    "pit",
    "coverage",
    "score_runs",
    "coherence",
    "submissions",
    "footprints",
)


def board_run(wh: Warehouse, footprint: str = "full") -> int:
    """The score run that is a footprint's board ('name' or 'name@version'): its newest
    run of the whole current membership (eval.board_runs), whatever scored last; a run of
    named submissions (`proforma score -s`) is on the board only until a board run
    follows it (proforma.app.scoring.runs.refresh_board)."""
    name, _, version = footprint.partition("@")
    if version:
        sql = (
            "SELECT coalesce(max(score_run_id) FILTER (WHERE board IS NOT false), "
            "max(score_run_id)) FROM eval.score_runs "
            "WHERE footprint_name = ? AND footprint_version = ?"
        )
        params: list[Any] = [name, int(version)]
    else:
        sql = "SELECT score_run_id FROM eval.board_runs WHERE footprint_name = ?"
        params = [name]
    run = wh.scalar(sql, params)
    if run is None:
        raise UserError(
            f"No scores for footprint {footprint!r}: run `proforma score --footprint {name}` first"
        )
    return int(run)


def dm_stars(p: float | None, model_better: bool) -> str:
    """The paper's marks on a row compared with the reference: * / ** / *** the reference
    better at 10 / 5 / 1%, a dagger the row's model better at 1%."""
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return ""
    if model_better:
        return "†" if p < 0.01 else ""
    return "***" if p < 0.01 else "**" if p < 0.05 else "*" if p < 0.10 else ""


def leaderboard(
    wh: Warehouse,
    footprint: str = "full",
    track: str = "squared",
    by: str | None = None,
    *,
    score_run_id: int | None = None,
    against: int | str | None = None,
    public: bool = False,
    clean_after: str | None = None,
    cards: CardFilter | None = None,
) -> pa.Table:
    """One row per submission (and group when `by` is horizon, item or statement).

    Squared and absolute tracks carry the pooled (or per-horizon) Diebold-Mariano test
    against the group's leader (column dm_vs_leader), or against the submission named or
    numbered by `against` (column dm_vs_reference; the paper marks Table 1 against Forma):
    a statistic > 0 favours the row's model; stars mark the reference better at 10/5/1%,
    a dagger the model better at 1%. The table's schema metadata holds the run's
    provenance and `dm_reference` ('leader' or the reference's name).

    Every row says its declared training cutoff and whether it is at or after the split's
    first origin (`after_test_start`); a global board adds each row's score on its own
    clean slice (proforma.app.scoring.slices). `clean_after` ('2015Q4') ranks the board
    on the origins after that quarter instead, its entrants the members clean there.
    `cards` picks the entries shown (proforma.app.scoring.cards: by default each
    uploader's latest per model family); the ranks and the leader are among those.
    `public`: the board as the public may see it, its tests' leader and its rank sets
    among the submissions that are not uploads (docs/service.md, "The truth: threat
    model"; proforma.app.read.queries then noises or withholds an upload's numbers).
    """
    _check_board_options(track, by)
    run = score_run_id or board_run(wh, footprint)
    if clean_after is not None:
        return _slice_board(wh, run, track, by, clean_after, cards)
    reference = None if against is None else reference_submission(wh, run, against)
    spec = TRACKS[track]
    columns, loss, level = list(spec.columns), spec.dm_loss, BY[by]
    groups = _metric_groups(wh, run, track, level, columns, cards)
    key = _rank_key(spec.metric, spec.ascending)
    dm = _dm_tests_read(wh, run, loss, level, groups, key, reference, public) if loss else {}
    out = [
        row
        for grp in sorted(groups, key=lambda g: (g is None, g))
        for row in _ranked_rows(grp, groups[grp], level, columns, loss, key, reference, public, dm)
    ]
    uncertainty = _add_uncertainty(wh, run, track, out, public) if level == "global" else None
    headline = [m for m in columns if m in UNCERTAINTY_METRICS] if level == "global" else []
    add_clean_columns(wh, run, out, headline)
    meta = _board_metadata(wh, run, track, level, reference, uncertainty)
    table = pa.Table.from_pylist(out) if out else pa.table({"rank": pa.array([], pa.int64())})
    return table.replace_schema_metadata(_metadata(meta))


def _check_board_options(track: str, by: str | None) -> None:
    if track not in TRACKS:
        raise UserError(
            f"Unknown track {track!r}: use {', '.join(TRACK_NAMES[:-1])} or {TRACK_NAMES[-1]}"
        )
    if by not in BY:
        raise UserError(f"Unknown --by {by!r}: use horizon, item or statement")


def _metric_groups(
    wh: Warehouse,
    run: int,
    track: str,
    level: str,
    columns: list[str],
    cards: CardFilter | None,
) -> dict[Any, list[dict]]:
    """The run's metric rows at `level` of the entries the board shows, by group (None
    for the global board)."""
    group = {
        "global": "NULL",
        "horizon": "m.horizon",
        "item": "i.item",
        "statement": "m.statement",
    }[level]
    density_filter = f"AND {HAS_DENSITY}" if track == "density" else ""
    rows = wh.arrow(
        f"""
        SELECT {group} AS grp, m.submission_id, s.name AS model, s.source,
               -- a submission without sigma or quantiles forecasts points: its stored
               -- family (gaussian, the default) would say a density it does not have
               CASE WHEN {HAS_DENSITY} THEN s.family ELSE 'point' END AS family,
               s.n_components, m.n, {", ".join("m." + c for c in columns)}, m.horizon
        FROM eval.metrics m
        JOIN eval.submissions s USING (submission_id)
        LEFT JOIN ref.items i ON i.item_id = m.item_id
        WHERE m.score_run_id = ? AND m.level = ? {density_filter}
        """,
        [run, level],
    ).to_pylist()
    keep = shown(wh, sorted({int(r["submission_id"]) for r in rows}), cards)
    groups: dict[Any, list[dict]] = {}
    for r in rows:
        if int(r["submission_id"]) in keep:
            groups.setdefault(r["grp"], []).append(r)
    return groups


def _rank_key(sort: str, ascending: bool) -> Callable[[dict], float]:
    """A row's sort key on the track's metric, best first; a missing value last."""

    def key(r: dict) -> float:
        v = r[sort]
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return math.inf
        return v if ascending else -v

    return key


def _dm_tests_read(
    wh: Warehouse,
    run: int,
    loss: str,
    level: str,
    groups: dict[Any, list[dict]],
    key: Callable[[dict], float],
    reference: int | None,
    public: bool,
) -> dict[tuple, tuple]:
    """(submission_a, submission_b, horizon) -> (statistic, p) of the tests the board
    shows: only those against a group's leader (or the reference) are read, since a run
    holds every pair, k^2 / 2 of them for k submissions."""
    leaders = sorted(
        {reference}
        if reference is not None
        else {
            lead["submission_id"]
            for g in groups.values()
            if (lead := _leader(sorted(g, key=key), public)) is not None
        }
    )
    dm: dict[tuple, tuple] = {}
    for a, b, h, stat, p in wh.fetchall(
        "SELECT submission_a, submission_b, horizon, dm_stat, p_value FROM eval.dm_tests "
        "WHERE score_run_id = ? AND loss = ? "
        "AND (list_contains(?, submission_a) OR list_contains(?, submission_b))",
        [run, loss, leaders, leaders],
    ):
        dm[(a, b, h)] = (stat, p)
    if level in ("global", "horizon"):
        _missing_tests(wh, run, loss, level, groups, key, reference, dm, public)
    return dm


def _ranked_rows(
    grp: Any,
    members: list[dict],
    level: str,
    columns: list[str],
    loss: str | None,
    key: Callable[[dict], float],
    reference: int | None,
    public: bool,
    dm: dict[tuple, tuple],
) -> list[dict[str, Any]]:
    """One group's board rows, ranked, each with its test against the leader (or the
    reference) on a track with a DM loss."""
    ranked = sorted(members, key=key)
    leader = (
        next((r for r in ranked if r["submission_id"] == reference), None)
        if reference is not None
        else _leader(ranked, public)
    )
    out = []
    for rank, r in enumerate(ranked, 1):
        row: dict[str, Any] = {"rank": rank}
        if level != "global":
            row[level] = grp
        row.update(
            {k: r[k] for k in ("model", "submission_id", "source", "family", "n_components", "n")}
        )
        row.update({c: r[c] for c in columns})
        if loss:
            stat, p = None, None
            if leader is not None and r is not leader and level in ("global", "horizon"):
                h = 0 if level != "horizon" else int(r["horizon"])
                stat, p = _test_between(leader["submission_id"], r["submission_id"], h, dm)
            row["dm_vs_leader" if reference is None else "dm_vs_reference"] = stat
            row["p_value"] = p
            row["sig"] = dm_stars(p, stat is not None and stat > 0)
        out.append(row)
    return out


def _test_between(leader: int, other: int, h: int, dm: dict[tuple, tuple]) -> tuple:
    """(statistic, p) of `other` against `leader` at horizon h (0: pooled), the statistic
    > 0 when `other` is better; (None, None) without a test."""
    if (leader, other, h) in dm:
        return dm[(leader, other, h)]
    if (other, leader, h) in dm:
        stat, p = dm[(other, leader, h)]
        return (None if stat is None else -stat), p
    return None, None


def _board_metadata(
    wh: Warehouse,
    run: int,
    track: str,
    level: str,
    reference: int | None,
    uncertainty: Any,
) -> dict[str, Any]:
    """The board's provenance: the run, its footprint and build, the DM reference."""
    run_row = wh.arrow(
        "SELECT footprint_name, footprint_version, n_cells, footprint_cells, build_id, "
        "eval_sql_version, finished_at FROM eval.score_runs WHERE score_run_id = ?",
        [run],
    ).to_pylist()[0]
    names = dict(wh.fetchall("SELECT submission_id, name FROM eval.submissions"))
    return {
        "score_run_id": run,
        "track": track,
        "by": level,
        "dm_reference": "leader" if reference is None else names.get(reference, str(reference)),
        **run_row,
        "uncertainty": uncertainty,
    }


def _leader(ranked: list[dict], not_upload: bool) -> dict | None:
    """The first of `ranked`, or its first that is not an upload."""
    return next((r for r in ranked if not not_upload or r["source"] != "upload"), None)


def _slice_board(
    wh: Warehouse, run: int, track: str, by: str | None, after: str, cards: CardFilter | None
) -> pa.Table:
    """The board ranked on its clean slice after quarter `after` (global only)."""
    if by is not None:
        raise UserError("A clean slice is ranked over all its cells: leave out --by")
    q = parse_slice(after)
    spec = TRACKS[track]
    shown_metrics = [m for m in spec.columns if m in UNCERTAINTY_METRICS]
    rows = slice_rows(wh, run, spec.metric, q, not spec.ascending, shown_metrics)
    keep = shown(wh, [int(r["submission_id"]) for r in rows], cards)
    rows = [r for r in rows if r["submission_id"] in keep]
    if track == "density":
        rows = [r for r in rows if r.get("crps") is not None]
    for rank, r in enumerate(rows, 1):
        r["rank"] = rank
    meta = {
        "score_run_id": run,
        "track": track,
        "by": "global",
        "clean_after": quarter_label(q),
        **wh.arrow(
            "SELECT footprint_name, footprint_version, n_cells, build_id, eval_sql_version, "
            "finished_at FROM eval.score_runs WHERE score_run_id = ?",
            [run],
        ).to_pylist()[0],
    }
    table = pa.Table.from_pylist(rows) if rows else pa.table({"rank": pa.array([], pa.int64())})
    if rows:
        table = table.select(["rank", *(c for c in table.column_names if c != "rank")])
    return table.replace_schema_metadata(_metadata(meta))


def _add_uncertainty(
    wh: Warehouse, run: int, track: str, rows: list[dict], public: bool = False
) -> dict | None:
    """The board's rank uncertainty on its global rows (proforma.app.scoring.uncertainty):
    each headline metric's interval ({metric}_lo, {metric}_hi), the probability of
    ranking first (p_best), the MCS p-value and membership; returns how it was computed
    (seed, replications, block size, levels), None when the run has none. `public`: the
    probabilities and the set among the members that are not uploads (an upload has
    none)."""
    record = wh.arrow(
        "SELECT method, seed, replications, block_size, ci_level, mcs_alpha, mcs_statistic, "
        "n_firms, n_quarters FROM eval.uncertainty_runs WHERE score_run_id = ?",
        [run],
    ).to_pylist()
    if not record:
        return None
    metrics = [m for m in TRACKS[track].columns if m in UNCERTAINTY_METRICS]
    bounds = {
        (int(sid), str(m)): (lo, hi)
        for sid, m, lo, hi in wh.fetchall(
            "SELECT submission_id, metric, lo, hi FROM eval.metric_intervals "
            "WHERE score_run_id = ?",
            [run],
        )
    }
    sets = {
        int(sid): (p, mp, inside)
        for sid, p, mp, inside in wh.fetchall(
            "SELECT submission_id, p_best, mcs_p, in_mcs FROM eval.rank_sets "
            "WHERE score_run_id = ? AND track = ? AND scope = ?",
            [run, track, "public" if public else "all"],
        )
    }
    for row in rows:
        sid = int(row["submission_id"])
        for m in metrics:
            row[f"{m}_lo"], row[f"{m}_hi"] = bounds.get((sid, m), (None, None))
        row["p_best"], row["mcs_p"], row["in_mcs"] = sets.get(sid, (None, None, None))
    return record[0]


def _missing_tests(
    wh: Warehouse,
    run: int,
    loss: str,
    level: str,
    groups: dict[Any, list[dict]],
    key: Callable[[dict], float],
    reference: int | None,
    dm: dict[tuple, tuple],
    public: bool = False,
) -> None:
    """Tests the board shows that the run does not hold, computed now (not stored) from
    the run's quarter losses: a run keeps each member's tests against its group's leader
    by the lowest mean loss and against the in-house submissions
    (proforma.app.scoring.runs.dm_groups), so only a reference that is neither, or a leader
    by R² that is not the leader by MSE (a tie), comes here."""
    wanted: dict[Group, list[Pair]] = {}
    for rows in groups.values():
        h = 0 if level != "horizon" else int(rows[0]["horizon"])
        first = _leader(sorted(rows, key=key), public)
        lead = reference if reference is not None else first["submission_id"] if first else None
        if lead not in {r["submission_id"] for r in rows}:
            continue
        for r in rows:
            b = r["submission_id"]
            if b != lead and (lead, b, h) not in dm and (b, lead, h) not in dm:
                wanted.setdefault((loss, h), []).append((min(lead, b), max(lead, b)))
    if not wanted:
        return
    pairs = sorted({p for ps in wanted.values() for p in ps})
    got = dm_test_rows(wh, run, pairs, wanted)
    for a, b, h, stat, p in zip(
        got["submission_a"],
        got["submission_b"],
        got["horizon"],
        got["dm_stat"],
        got["p_value"],
        strict=True,
    ):
        dm[(a, b, h)] = (stat, p)


def _metadata(values: dict[str, Any]) -> dict[str, str]:
    """Arrow schema metadata: each value as text (what readers of single keys expect) and
    the whole dict, typed, as JSON under "provenance" (what `provenance` returns)."""
    return {
        **{k: str(v) for k, v in values.items()},
        "provenance": json.dumps(values, default=_json_value),
    }


def _json_value(value: Any) -> Any:
    """JSON for what json cannot write itself: times as ISO 8601, the rest as text."""
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def provenance(table: pa.Table) -> dict[str, Any]:
    """A result table's provenance with its types (numbers as numbers, times ISO 8601)."""
    raw = {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()}
    typed = raw.pop("provenance", None)
    return json.loads(typed) if typed is not None else raw


def reference_submission(wh: Warehouse, score_run_id: int, against: int | str) -> int:
    """The id of the run's submission named or numbered `against` (the DM reference)."""
    (ids,) = wh.fetchone(
        "SELECT submission_ids FROM eval.score_runs WHERE score_run_id = ?", [score_run_id]
    ) or ([],)
    scored = wh.fetchall(
        "SELECT submission_id, name FROM eval.submissions "
        f"WHERE submission_id {IN_IDS} ORDER BY submission_id",
        [list(ids)],
    )
    text = str(against).strip()
    for sid, name in scored:
        if text == name or (text.isdigit() and int(text) == sid):
            return int(sid)
    raise UserError(
        f"{text!r} is not scored in score run {score_run_id}; compare against one of: "
        + ", ".join(name for _, name in scored)
    )


def table_to_text(table: pa.Table, fmt: str) -> str:
    """A result table as CSV or JSON text (JSON: {"provenance": ..., "rows": [...]})."""
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf)
        writer.writerow(table.column_names)
        for row in table.to_pylist():
            writer.writerow(["" if v is None else v for v in row.values()])
        return buf.getvalue()
    if fmt == "json":
        meta = provenance(table)
        rows = [
            {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
            for r in table.to_pylist()
        ]
        return json.dumps({"provenance": meta, "rows": rows}, default=_json_value, indent=1)
    raise UserError(f"Unknown format {fmt!r}: use csv or json")


def export_table(wh: Warehouse, table: str, *, score_run_id: int | None = None) -> pa.Table:
    """Any eval result table (optionally one score run's rows) as Arrow."""
    if table not in RESULT_TABLES:
        raise UserError(f"Unknown result table {table!r}; one of {', '.join(RESULT_TABLES)}")
    sql = f"SELECT * FROM eval.{table}"
    params: list[Any] = []
    if score_run_id is not None:
        cols = {
            r[0]
            for r in wh.fetchall(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = 'eval' "
                "AND table_name = ?",
                [table],
            )
        }
        if "score_run_id" not in cols:
            raise UserError(f"eval.{table} is not per score run")
        sql += " WHERE score_run_id = ?"
        params.append(score_run_id)
    result = wh.arrow(sql, params)
    meta: dict[str, Any] = {"table": f"eval.{table}"}
    if score_run_id is not None:
        meta["score_run_id"] = score_run_id
    return result.replace_schema_metadata(_metadata(meta))


def write_text(text: str, out: Path | None) -> None:
    if out is None:
        print(text, end="" if text.endswith("\n") else "\n")
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
