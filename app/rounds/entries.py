"""The entries every round receives at its open (docs/rounds.md): the reference baselines
(seasonal random walk and fade / AR(1), by the rules of sql/eval/090 and 091, computed
over the round's cells: sql/rounds/080, 081) and, on a grown synthetic panel, the oracle
from the frontier's simulated futures (sql/rounds/082). They go through the same checks
and storage as any submission (app/rounds/submit.submit_table)."""

from __future__ import annotations

from typing import Any

from proforma.app.rounds.store import get_round
from proforma.app.rounds.submit import submit_table
from proforma.app.warehouse import Warehouse

BASELINES = (
    ("seasonal_rw", "rounds/080_entry_seasonal_rw", "point"),
    ("fade", "rounds/081_entry_fade", "point"),
)


def _oracle_ready(wh: Warehouse, origin_q: int) -> bool:
    if not (wh.table_exists("raw.oracle_origins") and wh.table_exists("raw.oracle_paths")):
        return False
    return bool(wh.scalar("SELECT count(*) FROM raw.oracle_origins WHERE origin_q = ?", [origin_q]))


def enter_entries(wh: Warehouse, round_name: str) -> list[dict[str, Any]]:
    """Enter the reference baselines (and the oracle where its paths exist) into a round;
    returns the submission records. Entries already in the round are kept as they are."""
    rnd = get_round(wh, round_name)
    have = {
        r[0]
        for r in wh.fetchall(
            "SELECT name FROM rounds.submissions WHERE round_id = ?", [rnd["round_id"]]
        )
    }
    params = {
        "round_id": rnd["round_id"],
        "origin_q": rnd["origin_q"],
        "published": rnd["rules"] == "published",
    }
    todo = [b for b in BASELINES if b[0] not in have]
    if "oracle" not in have and _oracle_ready(wh, rnd["origin_q"]):
        todo.append(("oracle", "rounds/082_entry_oracle", "gaussian"))
    entered = []
    for name, step, family in todo:
        table = wh.query_step(step, params)
        if table.num_rows == 0:
            continue
        entered.append(
            submit_table(
                wh,
                round_name,
                name,
                table,
                kind="oracle" if name == "oracle" else "baseline",
                family=family,
                metadata={"entry": step},
            )
        )
    return entered
