"""One submission whose scoring fails never stops the others: it is recorded for the
scoring context and left out, every other submission is scored as before, and runs of
the same context leave it out without trying again (a new sql/eval version retries)."""

from __future__ import annotations

import numpy as np
from scoring_fixtures import forecasts_from, module_warehouse, truth_cells

from proforma.app import scoring
from proforma.app.scoring.cells import failed_submissions, scoring_context

SMALL = "horizon IN (1, 7) AND item IN ('atq', 'niq')"


def test_a_poisoned_submission_is_left_out_and_the_others_are_scored(tmp_path_factory):
    wh = module_warehouse(tmp_path_factory, "isolation")
    # The published rules score sigma as a 32-bit float: 1e39 cannot be cast there.
    wh.execute(
        "INSERT INTO meta.builds (status, sql_checksum, parameters, reg_stats, started_at) "
        "VALUES ('succeeded', 'test', '{\"rules\": \"published\"}', 'estimate', now())"
    )
    scoring.create_footprint(wh, "small", predicate=SMALL)
    cells = truth_cells(wh)
    actual = cells["actual"].to_numpy()
    rng = np.random.default_rng(1)
    good = [
        scoring.ingest_forecasts(
            wh,
            f"good {k}",
            forecasts_from(
                cells, actual + rng.normal(0, 0.3, actual.size), np.full(actual.size, 0.4)
            ),
        )
        for k in range(2)
    ]
    poison = scoring.ingest_forecasts(
        wh, "poison", forecasts_from(cells, actual, np.full(actual.size, 0.4))
    )
    # A value today's checks refuse, stored as an older release (or a gap in the checks)
    # would have let it through.
    wh.execute(
        "UPDATE eval.forecast_rows SET sigma = 1e39 WHERE submission_id = ? AND "
        "rowid = (SELECT min(rowid) FROM eval.forecast_rows WHERE submission_id = ?)",
        [poison, poison],
    )
    run = scoring.score(wh, "small", baselines=False, coherence=False)
    ids = wh.scalar("SELECT submission_ids FROM eval.score_runs WHERE score_run_id = ?", [run])
    assert sorted(ids) == sorted(good)
    ctx = scoring_context(wh)
    failed = failed_submissions(wh, ctx, [poison, *good])
    assert list(failed) == [poison]
    assert "ConversionException" in failed[poison]
    # The same context does not try it again; the others keep scoring.
    again = scoring.score(wh, "small", baselines=False, coherence=False)
    assert wh.scalar("SELECT count(*) FROM eval.submission_failures") == 1
    assert sorted(
        wh.scalar("SELECT submission_ids FROM eval.score_runs WHERE score_run_id = ?", [again])
    ) == sorted(good)
    # Only the poisoned submission is named: everything else scores as before.
    solo = scoring.score(wh, "small", submissions=good, baselines=False, coherence=False)
    assert wh.scalar(
        "SELECT count(*) FROM eval.metrics WHERE score_run_id = ? AND level = 'global'", [solo]
    ) == len(good)
