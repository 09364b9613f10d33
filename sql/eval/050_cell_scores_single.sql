-- Per-cell scores of ONE single-forecast submission whose forecasts are in eval.forecasts
-- (getvariable('submission_id')) into eval.cell_density_scores: the rows of 057's view
-- single_cell_terms over 049's cells (its forecasts joined with the truth). A file kept
-- in the upload store stores no per-cell rows: its cells meet the truth by position when
-- a run reads them (067).
INSERT INTO eval.cell_density_scores
    (submission_id, cell, r, nll, crps, z, u, in50, in80, in90, in95)
SELECT getvariable('submission_id'), cell, r, nll, crps, z, u, in50, in80, in90, in95
FROM single_cell_terms;
