"""What the public may learn of an upload's scores: coarsened so that differencing two
uploads cannot read a truth value back (docs/service.md, "The truth: threat model").

An upload's exact aggregate over n cells is a known function of its own forecasts and the
truth; two uploads that differ in one cell of a group give that cell's truth from the
difference of the group's two aggregates. So every truth-derived number of an upload
(source 'upload'; the in-house models' and reference baselines' numbers stay exact: no
client chooses their forecasts) leaves the warehouse rounded to a quantum

    q = K * A / n

where A bounds how fast the difference of one cell's terms in two uploads moves with
the truth value (MSE: 2 |mu_1 - mu_2| <= 240, predictions being |x| <= 60; MAE and CRPS:
2), n is the group's cell count and K = 4, with a subtractive dither: the published
value is q * (floor(x / q + u + 1/2) - u), u in [-1/2, 1/2) a keyed hash (DuckDB's
64-bit hash of a secret of the warehouse and the submission, group and metric; its
output is never shown), so its error is
uniform on [-q/2, q/2] and independent between submissions (a second upload cannot
locate the rounding boundary), and the same in every run (re-scoring gives no fresh
draw to average). One differencing pair then misses the truth value by an error of
standard deviation K / sqrt(6) ~ 1.6 standardized units, and 19 pairs (the default daily
limit, 20 uploads) still by about 0.4. Shares (interval coverage, PIT) move by 1/n per
cell: quantum 8 / n. NLL and z^2 move without bound as sigma shrinks: an upload's are
published for the whole footprint only (global level), to 2 significant digits.

Each metric's treatment and its A are part of its definition (contracts/metrics.py:
`disclosure`, `sensitivity`); sql/public/005 coarsens with the same ones.
"""

from __future__ import annotations

import math
import secrets
from typing import Any

from proforma.app.store.metric_sql import DISCLOSURE_K
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.metrics import METRICS, Disclosure

K = DISCLOSURE_K
#: A PIT bin's share moves by 1 / n per cell: quantum 8 / n.
SHARE_QUANTUM = 8.0


def coarsened() -> tuple[str, ...]:
    """The metrics an upload publishes rounded to a quantum (their definitions say so)."""
    return tuple(
        m.name for m in METRICS.values() if m.disclosure is not Disclosure.global_two_digits
    )


def unbounded() -> tuple[str, ...]:
    """The metrics an upload publishes for the whole footprint only, to two digits."""
    return tuple(m.name for m in METRICS.values() if m.disclosure is Disclosure.global_two_digits)


def secret(wh: Warehouse) -> bytes:
    """The warehouse's dither key (created on first use; never leaves the warehouse)."""
    value = wh.scalar("SELECT secret FROM service.disclosure_key LIMIT 1")
    if value is None:
        wh.execute("INSERT INTO service.disclosure_key VALUES (?)", [secrets.token_hex(32)])
        value = wh.scalar("SELECT secret FROM service.disclosure_key LIMIT 1")
    return bytes.fromhex(str(value))


_TWO52 = 2**52
#: SQL of a label's dither u in [-1/2, 1/2): DuckDB's 64-bit hash of the warehouse's key
#: and the label (keyed, never shown; md5 cost the publication 13 s at 2M values).
DITHER_SQL = (
    f"(CAST(hash(getvariable('disclosure_key') || {{label}}) % {_TWO52} AS DOUBLE) "
    f"/ {float(_TWO52)!r} - 0.5)"
)


class Dither:
    """Labels' dithers, computed by DuckDB (the same function as sql/public's macro)."""

    def __init__(self, wh: Warehouse):
        self.wh = wh
        self.cache: dict[str, float] = {}
        wh.set_params({"disclosure_key": secret(wh).hex()})

    def prefetch(self, labels: list[str]) -> None:
        todo = sorted({x for x in labels if x not in self.cache})
        if todo:
            rows = self.wh.fetchall(
                f"SELECT l, {DITHER_SQL.format(label='l')} FROM unnest(?::VARCHAR[]) AS t(l)",
                [todo],
            )
            self.cache.update({str(a): float(b) for a, b in rows})

    def u(self, label: str) -> float:
        if label not in self.cache:
            self.prefetch([label])
        return self.cache[label]


def coarsen(value: Any, quantum: float | None, dither: Dither, label: str) -> Any:
    """`value` rounded to `quantum` with the keyed subtractive dither of `label`."""
    if value is None or quantum is None or not quantum > 0:
        return value
    x = float(value)
    if not math.isfinite(x):
        return value
    u = dither.u(label)
    return quantum * (math.floor(x / quantum + u + 0.5) - u)


def two_digits(value: Any) -> Any:
    if value is None or value == 0 or not math.isfinite(float(value)):
        return value
    x = float(value)
    return round(x, 1 - math.floor(math.log10(abs(x))))


def quantum(metric: str, n: Any, row: dict[str, Any] | None = None) -> float | None:
    """The quantum of `metric` over n cells (r2 from its MSE's quantum and the truth's
    spread, mse / (1 - r2))."""
    if not n:
        return None
    if metric == "share":
        return SHARE_QUANTUM / float(n)
    spec = METRICS.get(metric)
    if spec is None or spec.sensitivity is None:
        return None
    if spec.disclosure is Disclosure.quantum:
        return K * spec.sensitivity / float(n)
    if spec.disclosure is Disclosure.r2 and row is not None:
        mse, r2 = row.get("mse"), row.get(metric)
        if mse is None or r2 is None or not mse > 0:
            return None
        return K * spec.sensitivity / float(n) * (1.0 - float(r2)) / float(mse)
    return None


def metric_labels(submission_id: int, group: str) -> list[str]:
    return [f"{submission_id}/{group}/{m}" for m in coarsened()]


def coarsen_metrics(
    row: dict[str, Any], dither: Dither, submission_id: int, group: str
) -> dict[str, Any]:
    """One metrics row of an upload as published (`group`: its level and group key)."""
    out = dict(row)
    n = row.get("n")
    for metric in coarsened():
        if metric in row:
            out[metric] = coarsen(
                row[metric], quantum(metric, n, row), dither, f"{submission_id}/{group}/{metric}"
            )
    for metric in unbounded():
        if metric in row:
            out[metric] = two_digits(row[metric]) if group.startswith("global") else None
    return out


def upload_ids(wh: Warehouse) -> set[int]:
    return {
        int(r[0])
        for r in wh.fetchall("SELECT submission_id FROM eval.submissions WHERE source = 'upload'")
    }


def register(wh: Warehouse) -> None:
    """SQL macros for sql/public on this connection, with this warehouse's key:
    pf_coarsen(value, quantum, label) and pf_two_digits(value), computing what coarsen and
    two_digits compute, set-based."""
    wh.set_params({"disclosure_key": secret(wh).hex()})
    wh.execute(
        f"CREATE OR REPLACE TEMP MACRO pf_dither(label) AS {DITHER_SQL.format(label='label')}"
    )
    wh.execute(
        "CREATE OR REPLACE TEMP MACRO pf_coarsen(x, q, label) AS "
        "CASE WHEN x IS NULL OR q IS NULL OR NOT q > 0 OR NOT isfinite(x) THEN x "
        "ELSE q * (floor(x / q + pf_dither(label) + 0.5) - pf_dither(label)) END"
    )
    wh.execute(
        "CREATE OR REPLACE TEMP MACRO pf_two_digits(x) AS "
        "CASE WHEN x IS NULL OR x = 0 OR NOT isfinite(x) THEN x "
        "ELSE round(x, 1 - CAST(floor(log10(abs(x))) AS INTEGER)) END"
    )


def _withheld(row: dict[str, Any], min_cells: int) -> bool:
    """A row over fewer than `min_cells` cells shows its count, never its metrics (as
    sql/public withholds it)."""
    if int(row.get("n") or 0) >= min_cells:
        return False
    for metric in (*coarsened(), *unbounded()):
        if metric in row:
            row[metric] = None
    return True


def disclosed_round(wh: Warehouse, board: dict[str, Any], min_cells: int) -> dict[str, Any]:
    """A round's leaderboard as the public may see it: every row over fewer than
    `min_cells` cells withheld (all entries: a baseline's exact number over a handful of
    cells is a handful of truth values); an upload's numbers coarsened with the keyed
    dither of sql/public/050 (the same labels, so the page, the API and the snapshot
    agree), NLL and z2 to two digits and for all horizons only; the baselines', oracle's
    and in-house models' numbers otherwise exact (no client chooses their forecasts)."""
    dither: Dither | None = None
    rid = board["round"]["round_id"]
    for model in board["models"]:
        rows = [(model, "global")] + [(r, str(r["horizon"])) for r in model["by_horizon"]]
        for row, group in rows:
            if _withheld(row, min_cells) or model["kind"] != "upload":
                continue
            dither = dither or Dither(wh)
            label = f"round/{rid}/{model['submission_id']}/{group}/"
            original = dict(row)
            for metric in coarsened():
                row[metric] = coarsen(
                    original[metric],
                    quantum(metric, original["n"], original),
                    dither,
                    label + metric,
                )
            for metric in unbounded():
                row[metric] = two_digits(original[metric]) if group == "global" else None
    return board


def disclosed_live(
    wh: Warehouse, models: list[dict[str, Any]], min_cells: int
) -> list[dict[str, Any]]:
    """The live leaderboard as the public may see it, by the rules of disclosed_round: a
    model pooled over fewer than `min_cells` cells withheld; a model that entered any
    round by upload has its metrics coarsened (label live/<name>/global/<metric>) and
    its Diebold-Mariano statistic and p-value to two digits (each is a function of the
    truth of the cells it pools)."""
    uploaders = {
        r[0]
        for r in wh.fetchall("SELECT DISTINCT name FROM rounds.submissions WHERE kind = 'upload'")
    }
    dither: Dither | None = None
    for row in models:
        if _withheld(row, min_cells):
            row["dm_stat"] = row["dm_p"] = None
            continue
        if row["name"] not in uploaders:
            continue
        dither = dither or Dither(wh)
        original = dict(row)
        for metric in coarsened():
            if metric in row:
                row[metric] = coarsen(
                    original[metric],
                    quantum(metric, original["n"], original),
                    dither,
                    f"live/{row['name']}/global/{metric}",
                )
        for metric in unbounded():
            if metric in row:
                row[metric] = two_digits(original[metric])
        for stat in ("dm_stat", "dm_p"):
            if row.get(stat) is not None:
                row[stat] = two_digits(row[stat])
    return models
