"""What the public may learn of an upload's scores: numbers with keyed noise, so that no
combination of them reads a truth value back (docs/service.md, "The truth: threat
model"; the budget: proforma.app.read.noise_budget).

An upload's exact aggregate over n cells is a known function of its own forecasts and the
truth; two uploads that differ in one cell of a group give that cell's truth from the
difference of the group's two aggregates. So every truth-derived number of an upload
(source 'upload'; the in-house models' and reference baselines' numbers stay exact: no
client chooses their forecasts) leaves the warehouse as

    x + s z,   s = sigma * sensitivity / n,

z a standard normal drawn from a keyed hash (DuckDB's 64-bit hash of a secret of the
warehouse, the number's label: submission, group and metric, and the exact value x, by
Box-Muller): the same number is published with the same noise in every run and on
every page (re-scoring gives no fresh draw to average), and a number that changes (a new
sample) gets a fresh draw, which the budget counts. sigma is the upload's grant
(service.disclosure_grants, fixed when it was admitted: noise_budget.sigma); the metric's
`disclosure` and `sensitivity` (contracts/metrics.py) say how: `noise` at every level,
`headline_noise` (coverage shares) at the global and horizon levels only, R2 from the
published MSE, NLL and z2 withheld (they move without bound as an upload's sigma
shrinks). An upload's PIT histogram and every Diebold-Mariano test that involves an
upload are withheld too; its rank on a public board is taken from its public numbers.
An upload is public on the first footprints made (as many as its grant counted).
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Iterable
from typing import Any

from proforma.app.read import noise_budget
from proforma.app.rounds.resolve import rank_round_board
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.metrics import METRICS, Disclosure

_TWO52 = 2**52


def secret(wh: Warehouse) -> bytes:
    """The warehouse's noise key (created on first use; never leaves the warehouse)."""
    value = wh.scalar("SELECT secret FROM service.disclosure_key LIMIT 1")
    if value is None:
        wh.execute("INSERT INTO service.disclosure_key VALUES (?)", [secrets.token_hex(32)])
        value = wh.scalar("SELECT secret FROM service.disclosure_key LIMIT 1")
    return bytes.fromhex(str(value))


def _uniform(label: str, x: str, part: str) -> str:
    # in (0, 1]: the keyed hash of the label, mixed with the hash of the exact value
    return (
        f"((xor(hash(getvariable('disclosure_key') || {label} || '{part}'), hash({x})) "
        f"% {_TWO52}) + 1)::DOUBLE / {float(_TWO52)!r}"
    )


#: SQL of a standard normal drawn for ({label}, {x}) (Box-Muller over two keyed hashes).
NORMAL_SQL = (
    f"(sqrt(-2 * ln({_uniform('{label}', '{x}', '/1')})) "
    f"* cos(2 * pi() * {_uniform('{label}', '{x}', '/2')}))"
)


def fallback_sigma() -> float:
    """An upload without a grant (received before grants existed): the last upload of a
    week at the default limit."""
    from proforma.app.store.settings import get_settings

    settings = get_settings()
    week = noise_budget.week_uploads(settings.uploads_per_day)
    return noise_budget.sigma(week, week, settings.upload_footprints)


def fallback_footprints() -> int:
    from proforma.app.store.settings import get_settings

    return int(get_settings().upload_footprints)


def grant(wh: Warehouse, job_id: int, user_id: int, at: Any, daily_limit: int) -> float:
    """Fix the noise of job `job_id`'s upload (its sigma) from the user's uploads of the
    seven days before it and the footprints it may be public on (the setting
    upload_footprints); called as the job is recorded, under the admission lock."""
    ordinal = 1 + int(
        wh.scalar(
            "SELECT count(*) FROM service.disclosure_grants WHERE user_id = ? "
            "AND granted_at > ? - INTERVAL 7 DAY AND granted_at <= ?",
            [user_id, at, at],
        )
        or 0
    )
    footprints = fallback_footprints()
    week = noise_budget.week_uploads(daily_limit)
    sigma = noise_budget.sigma(ordinal, week, footprints)
    wh.execute(
        "INSERT INTO service.disclosure_grants VALUES (?, ?, ?, ?, ?, ?, ?)",
        [job_id, user_id, ordinal, week, footprints, sigma, at],
    )
    return sigma


class Dither:
    """The keyed noise of one read of the warehouse: uploads' grants and the draws for
    (label, value) pairs, computed by DuckDB (the same function as sql/public's macros)."""

    def __init__(self, wh: Warehouse):
        self.wh = wh
        self.cache: dict[tuple[str, float], float] = {}
        self._grants: dict[tuple[str, int], tuple[float, int]] | None = None
        self._places: dict[int, int] | None = None
        wh.set_params({"disclosure_key": secret(wh).hex()})

    def grants(self) -> dict[tuple[str, int], tuple[float, int]]:
        if self._grants is None:
            self._grants = {
                (str(door), int(sid)): (float(sigma), int(footprints))
                for door, sid, sigma, footprints in self.wh.fetchall(
                    "SELECT door, submission_id, sigma, footprints FROM service.upload_noise"
                )
            }
        return self._grants

    def sigma(self, submission_id: int, door: str = "static") -> float:
        got = self.grants().get((door, int(submission_id)))
        return got[0] if got is not None else fallback_sigma()

    def public_on(self, submission_id: int, footprint_id: int | None) -> bool:
        """Whether an upload's numbers are public on this footprint: one of the first
        names made, as many as its grant counted (service.footprint_places)."""
        if footprint_id is None:
            return True
        got = self.grants().get(("static", int(submission_id)))
        allowed = got[1] if got is not None else fallback_footprints()
        if self._places is None:  # one read per Dither, not one per row
            self._places = dict(
                self.wh.fetchall("SELECT footprint_id, place FROM service.footprint_places")
            )
        place = self._places.get(int(footprint_id))
        return place is not None and int(place) <= allowed

    def prefetch(self, pairs: Iterable[tuple[str, Any]]) -> None:
        todo = sorted(
            {
                (label, float(x))
                for label, x in pairs
                if x is not None and math.isfinite(float(x)) and (label, float(x)) not in self.cache
            }
        )
        if todo:
            rows = self.wh.fetchall(
                f"SELECT l, x, {NORMAL_SQL.format(label='l', x='x')} "
                "FROM (SELECT unnest(?::VARCHAR[]) AS l, unnest(?::DOUBLE[]) AS x)",
                [[t[0] for t in todo], [t[1] for t in todo]],
            )
            self.cache.update({(str(a), float(b)): float(c) for a, b, c in rows})

    def z(self, label: str, x: float) -> float:
        if (label, x) not in self.cache:
            self.prefetch([(label, x)])
        return self.cache[(label, x)]


def coarsen(value: Any, scale: float | None, dither: Dither, label: str) -> Any:
    """`value` with the keyed noise of (`label`, value) at standard deviation `scale`."""
    if value is None or scale is None or not scale > 0:
        return value
    x = float(value)
    if not math.isfinite(x):
        return value
    return x + scale * dither.z(label, x)


def quantum(metric: str, n: Any, row: dict[str, Any] | None = None, sigma: float = 1.0) -> Any:
    """The noise's standard deviation of an upload's `metric` over n cells, for grant
    `sigma` (None: exact, or derived from another metric)."""
    spec = METRICS.get(metric)
    if not n or spec is None or spec.sensitivity is None:
        return None
    if spec.disclosure in (Disclosure.noise, Disclosure.headline_noise):
        return sigma * spec.sensitivity / float(n)
    return None


def _level(group: str) -> str:
    return group.split("/", 1)[0]


def coarsen_metrics(
    row: dict[str, Any],
    dither: Dither,
    submission_id: int | None,
    group: str,
    *,
    door: str = "static",
    headline: bool | None = None,
    label: str | None = None,
    sigma: float | None = None,
) -> dict[str, Any]:
    """One metrics row of an upload as published (`group`: its level and group key, as
    sql/public/005 names it; `label`: the labels' prefix when not `submission/group/`;
    `sigma`: the grant, when not the submission's own)."""
    out = dict(row)
    n = row.get("n")
    if sigma is None:
        assert submission_id is not None, "a grant is the submission's or given"
        sigma = dither.sigma(submission_id, door)
    prefix = label if label is not None else f"{submission_id}/{group}/"
    top = _level(group) in noise_budget.HEADLINE_LEVELS if headline is None else headline
    for name, spec in METRICS.items():
        if name not in row:
            continue
        if spec.disclosure is Disclosure.withheld or (
            spec.disclosure is Disclosure.headline_noise and not top
        ):
            out[name] = None
        elif spec.disclosure in (Disclosure.noise, Disclosure.headline_noise):
            out[name] = coarsen(row[name], quantum(name, n, row, sigma), dither, prefix + name)
    if "r2" in row:
        out["r2"] = r2_from_mse(row.get("r2"), row.get("mse"), out.get("mse"))
    return out


def r2_from_mse(r2: Any, mse: Any, public_mse: Any) -> Any:
    """R2 as published: 1 - MSE' (1 - r2) / mse, the truth's spread from the exact pair."""
    if r2 is None or mse is None or public_mse is None:
        return r2 if mse is None or r2 is None else None
    r2, mse = float(r2), float(mse)
    if not (math.isfinite(r2) and mse > 0):
        return r2
    return 1.0 - float(public_mse) * (1.0 - r2) / mse


def register(wh: Warehouse) -> None:
    """SQL macros and variables for sql/public on this connection, with this warehouse's
    key: pf_coarsen(value, scale, label) (what `coarsen` computes, set-based) and the
    fallback grant (variables disclosure_fallback_sigma, disclosure_fallback_footprints)."""
    wh.set_params(
        {
            "disclosure_key": secret(wh).hex(),
            "disclosure_fallback_sigma": fallback_sigma(),
            "disclosure_fallback_footprints": fallback_footprints(),
        }
    )
    wh.execute(
        "CREATE OR REPLACE TEMP MACRO pf_normal(label, x) AS "
        + NORMAL_SQL.format(label="label", x="x")
    )
    wh.execute(
        "CREATE OR REPLACE TEMP MACRO pf_coarsen(x, s, label) AS "
        "CASE WHEN x IS NULL OR s IS NULL OR NOT s > 0 OR NOT isfinite(x) THEN x "
        "ELSE x + s * pf_normal(label, x) END"
    )


def _withheld(row: dict[str, Any], min_cells: int) -> bool:
    """A row over fewer than `min_cells` cells shows its count, never its metrics (as
    sql/public withholds it)."""
    if int(row.get("n") or 0) >= min_cells:
        return False
    for metric in METRICS:
        if metric in row:
            row[metric] = None
    return True


def _rank_key(value: Any) -> float:
    return -float(value) if value is not None and math.isfinite(float(value)) else math.inf


def disclosed_round(wh: Warehouse, board: dict[str, Any], min_cells: int) -> dict[str, Any]:
    """A round's leaderboard as the public may see it: every row over fewer than
    `min_cells` cells withheld (all entries: a baseline's exact number over a handful of
    cells is a handful of truth values); an upload's numbers with the keyed noise of its
    grant (labels round/<round>/<entry>/<horizon or global>/<metric>, as sql/public/050,
    so the page, the API and the snapshot agree); the baselines', oracle's and in-house
    models' numbers otherwise exact (no client chooses their forecasts). The order is
    the public numbers' (best R2 first on the common board, then the others)."""
    dither: Dither | None = None
    rid = board["round"]["round_id"]
    for model in board["models"]:
        rows = [(model, "global")] + [(r, str(r["horizon"])) for r in model["by_horizon"]]
        for row, group in rows:
            if _withheld(row, min_cells) or model["kind"] != "upload":
                continue
            dither = dither or Dither(wh)
            public = coarsen_metrics(
                row,
                dither,
                int(model["submission_id"]),
                group,
                door="round",
                headline=True,
                label=f"round/{rid}/{model['submission_id']}/{group}/",
            )
            row.update(public)
    board["models"].sort(key=lambda m: (not m.get("common_sample", True), _rank_key(m.get("r2"))))
    rank_round_board(board["models"])
    return board


def disclosed_live(
    wh: Warehouse, models: list[dict[str, Any]], min_cells: int
) -> list[dict[str, Any]]:
    """The live leaderboard as the public may see it, by the rules of disclosed_round: a
    model pooled over fewer than `min_cells` cells withheld; a model that entered any
    round by upload has its metrics with keyed noise (label live/<name>/global/<metric>;
    its grant: the largest sigma of its entries) and its Diebold-Mariano test withheld;
    the order is the public MSE's."""
    sigmas: dict[str, float] = {}
    dither: Dither | None = None
    for name, sid in wh.fetchall(
        "SELECT name, submission_id FROM rounds.submissions WHERE kind = 'upload'"
    ):
        dither = dither or Dither(wh)
        sigmas[name] = max(sigmas.get(name, 0.0), dither.sigma(int(sid), "round"))
    for row in models:
        if _withheld(row, min_cells):
            row["dm_stat"] = row["dm_p"] = None
            continue
        if row["name"] not in sigmas:
            continue
        assert dither is not None
        row.update(
            coarsen_metrics(
                row,
                dither,
                None,
                "global",
                label=f"live/{row['name']}/global/",
                sigma=sigmas[row["name"]],
            )
        )
        row["dm_stat"] = row["dm_p"] = None
    models.sort(key=lambda m: float(m["mse"]) if m.get("mse") is not None else math.inf)
    return models
