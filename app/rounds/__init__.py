"""Prospective rounds (docs/rounds.md): open (freeze origins, parameters, deadline and
inputs at the data's last quarter), submit (until the deadline, immutable), resolve (the
newly realized cells after each ingest that adds quarters), leaderboards per round and
across rounds.

- open_round(wh, inputs_root, *, name, deadline, days) -> record
- list_rounds(wh), get_round(wh, name) -> records
- submit_file(wh, round, path, name, *, family), submit_table(...) -> submission record
- resolve(wh) -> counts; leaderboard(wh, round), live_leaderboard(wh)
- enter_entries(wh, round) (app/rounds/entries.py): the reference baselines (and the
  oracle on a synthetic panel) enter automatically
"""

from proforma.app.rounds.open import open_round
from proforma.app.rounds.resolve import leaderboard, live_leaderboard, resolve
from proforma.app.rounds.store import get_round, list_rounds, round_submissions
from proforma.app.rounds.submit import submit_file, submit_table

__all__ = [
    "get_round",
    "leaderboard",
    "list_rounds",
    "live_leaderboard",
    "open_round",
    "resolve",
    "round_submissions",
    "submit_file",
    "submit_table",
]
