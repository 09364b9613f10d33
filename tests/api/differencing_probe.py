"""The static differencing probe (issue 34, item 2; issue 47, item 2; docs/service.md,
"The truth: threat model"), run by tests/api/test_api_differencing.py over two days and by
bench/differencing.py over a whole week: a user's uploads, two a pair, differ in a few
target cells only (+60 against -60, a tiny sigma there), each target with its own horizon
and item; every public number of a pair that holds a target is read (the snapshot's
levels; the API and the leaderboards are checked to show the same) and attacked at once
(tests/differencing_attack.py), and so are the warehouse's exact numbers.
"""

from __future__ import annotations

import io
import itertools
import math
import time
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq
from differencing_attack import Reading, estimate, rms
from service_helpers import Api, submission_bytes

from proforma.app.read import noise_budget
from proforma.contracts.metrics import METRICS

LINEAR = ("mse", "mae", "crps")
SENSITIVITY = {m: float(METRICS[m].sensitivity or 0.0) for m in LINEAR}


def _targets(wh, base: pa.Table) -> list[dict]:
    statement = dict(wh.fetchall("SELECT item, statement FROM ref.items"))
    truth = {
        (r[0], r[1], r[2], r[3]): r[4]
        for r in wh.fetchall(
            "SELECT f.gvkey, i.item, qlabel(t.origin_q), t.horizon, t.actual FROM panel.truth t "
            "JOIN panel.firms f USING (firm_id) JOIN ref.items i USING (item_id) "
            "WHERE t.split = 'test' AND isfinite(t.actual) AND isfinite(t.baseline)"
        )
    }
    keys = list(
        zip(*(base[c].to_pylist() for c in ("firm", "target", "origin", "horizon")), strict=True)
    )
    pred = base["prediction"].to_numpy(zero_copy_only=False)
    chosen: list[dict] = []
    for row, key in enumerate(keys):
        taken = {(t["item"], t["horizon"]) for t in chosen}
        if (
            key in truth
            and math.isfinite(pred[row])
            and key[1] not in {t for t, _ in taken}
            and key[3] not in {h for _, h in taken}
        ):
            chosen.append(
                {
                    "row": row,
                    "item": key[1],
                    "horizon": key[3],
                    "statement": statement[key[1]],
                    "truth": truth[key],
                }
            )
    assert len(chosen) >= 4
    return chosen


def _pair_file(base: pa.Table, targets: list[dict], sign: float) -> bytes:
    pred = base["prediction"].to_numpy(zero_copy_only=False).copy()
    sigma = base["sigma"].to_numpy(zero_copy_only=False).copy()
    for t in targets:
        pred[t["row"]], sigma[t["row"]] = 60.0 * sign, 1e-3
    table = base.set_column(base.column_names.index("prediction"), "prediction", pa.array(pred))
    table = table.set_column(table.column_names.index("sigma"), "sigma", pa.array(sigma))
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def _holds(targets: list[dict], level: str, horizon, item, statement) -> list[int]:
    return [
        i
        for i, t in enumerate(targets)
        if (horizon is None or int(horizon) == t["horizon"])
        and (item is None or item == t["item"])
        and (statement is None or statement == t["statement"])
    ]


def _readings(rows: list[dict]) -> dict[tuple, Reading]:
    out = {}
    for r in rows:
        group = (r["level"], r["horizon"], r["item"], r["statement"])
        for m in LINEAR:
            if r.get(m) is not None:
                out[(group, m)] = Reading(group, m, int(r["n"]), float(r[m]))
    return out


def _next_day(api: Api) -> None:
    """A day passes for alice: her jobs and grants move one day back."""
    wh = api.wh
    try:
        uid = wh.scalar("SELECT user_id FROM service.users WHERE name = 'alice'")
        wh.execute(
            "UPDATE service.jobs SET created_at = created_at - INTERVAL 1 DAY WHERE user_id = ?",
            [uid],
        )
        wh.execute(
            "UPDATE service.disclosure_grants SET granted_at = granted_at - INTERVAL 1 DAY "
            "WHERE user_id = ?",
            [uid],
        )
    finally:
        wh.close()


@dataclass(frozen=True)
class Outcome:
    public_rms: float
    exact_rms: float
    targets: int
    uploads: int
    sigmas: list[float]


def run_probe(api: Api, days: int, pairs_a_day: int, daily_limit: int) -> Outcome:
    """Spend `days` days of the user's limit on pairs of uploads and attack every public
    channel of them; asserts what must hold on the way (the API, the leaderboards and
    the snapshot agree; every level is read; no test of an upload is public)."""
    wh = api.wh
    base = pq.read_table(io.BytesIO(submission_bytes(wh, sigma=True)))
    targets = _targets(wh, base)
    pairs: list[tuple[int, int]] = []
    for day in range(days):
        for k in range(pairs_a_day):
            ids = []
            for sign, tag in ((1.0, "plus"), (-1.0, "minus")):
                r = api.upload(_pair_file(base, targets, sign), name=f"d{day}-p{k}-{tag}")
                assert r.status_code == 202, r.text
                job = api.wait(r.json()["job_id"])
                assert job["status"] == "done", job
                ids.append(job["submission_id"])
            pairs.append((ids[0], ids[1]))
        assert api.upload(submission_bytes(wh, limit=20), name="one-more").status_code == 429
        if day < days - 1:
            _next_day(api)
    uploads = [sid for pair in pairs for sid in pair]
    grants = dict(
        wh.fetchall(
            "SELECT submission_id, sigma FROM service.upload_noise WHERE door = 'static' "
            "AND list_contains(?, submission_id)",
            [uploads],
        )
    )
    # each upload of the week is noisier than the one before (its ordinal in the budget)
    assert len(grants) == len(uploads)
    assert all(grants[a] < grants[b] for a, b in itertools.pairwise(uploads))
    # the budget holds for the week's limit, whatever the user does within it
    week = noise_budget.week_uploads(daily_limit)
    footprints = int(wh.scalar("SELECT max(footprints) FROM service.disclosure_grants"))
    allowed = [noise_budget.sigma(j, week, footprints) for j in range(1, week + 1)]
    assert noise_budget.information(allowed, footprints) <= noise_budget.BUDGET + 1e-9
    run = wh.scalar("SELECT max(score_run_id) FROM eval.score_runs WHERE footprint_name = 'full'")

    def snapshot(sid: int) -> list[dict]:
        sql = (
            "SELECT level, horizon, item, statement, n, mse, mae, crps FROM metrics "
            f"WHERE submission_id = {sid} AND score_run_id = (SELECT max(score_run_id) "
            "FROM score_runs WHERE footprint_name = 'full')"
        )
        body = api.client.post("/api/v1/query", json={"sql": sql}).json()
        return [dict(zip(body["columns"], r, strict=True)) for r in body.get("rows", [])]

    deadline = time.monotonic() + 300  # the last publication holds every upload
    while missing := [sid for sid in uploads if not snapshot(sid)]:
        assert time.monotonic() < deadline, f"not in the snapshot: {missing}"
        time.sleep(0.5)

    def exact(sid: int) -> list[dict]:
        return wh.arrow(
            "SELECT m.level, m.horizon, i.item, coalesce(m.statement, i.statement) AS statement, "
            "m.n, m.mse, m.mae, m.crps FROM eval.metrics m LEFT JOIN ref.items i USING (item_id) "
            "WHERE m.score_run_id = ? AND m.submission_id = ?",
            [run, sid],
        ).to_pylist()

    def attack(read) -> float:
        readings = [(_readings(read(a)), _readings(read(b))) for a, b in pairs]
        groups = {key[0] for plus, _ in readings for key in plus}
        found = estimate(
            readings,
            [(grants[a], grants[b]) for a, b in pairs],
            {g: _holds(targets, *g) for g in groups},
            len(targets),
            SENSITIVITY,
        )
        return rms(found, [t["truth"] for t in targets])

    def api_rows(sid: int) -> list[dict]:
        """The API's levels of an upload (global, horizon, item, statement)."""
        scores = api.client.get(f"/api/v1/submissions/{sid}").json()["scores"]
        full = next(s for s in scores if s["footprint"] == "full")
        rows = [{"level": "global", **full["global"]}]
        for level, key in (("horizon", "by_horizon"), ("item", "by_item")):
            rows += [{"level": level, **r} for r in full[key]]
        rows += [{"level": "statement", **r} for r in full["by_statement"]]
        return rows

    def public(sid: int) -> list[dict]:
        """Every level an attacker reads: the snapshot's (the item x horizon detail of the
        top of the board) and the API's, which serves the rest from the warehouse."""
        got = {(r["level"], r["horizon"], r["item"], r["statement"]): r for r in api_rows(sid)}
        for r in snapshot(sid):
            key = (r["level"], r["horizon"], r["item"], r["statement"])
            if key in got:  # the API and the snapshot publish the same numbers
                assert got[key]["mse"] == r["mse"] and got[key]["crps"] == r["crps"], key
            got[key] = r
        return list(got.values())

    exact_rms = attack(exact)
    detailed = [sid for sid in uploads if len({r["level"] for r in snapshot(sid)}) > 2]
    assert detailed, "no upload's detail in the snapshot"
    levels = {r["level"] for r in public(detailed[0])}
    assert levels == set(noise_budget.STATIC_LEVELS)  # every level is in the attack
    # the leaderboards publish the same numbers, and no test of an upload
    sid = pairs[0][0]
    mine = {(r["level"], r["horizon"]): r for r in public(sid)}
    board = api.client.get("/api/v1/leaderboards/full?by=horizon").json()["rows"]
    for r in (r for r in board if r["submission_id"] == sid):
        assert r["mse"] == mine[("horizon", r["horizon"])]["mse"]
        assert r["dm_vs_leader"] is None and r["p_value"] is None
    found = attack(public)
    # The quarter losses (one group per horizon and origin quarter) are not public.
    tables = api.client.get("/api/v1/query/tables").json()["tables"]
    assert "quarter_losses" not in tables
    return Outcome(found, exact_rms, len(targets), len(uploads), [grants[u] for u in uploads])
