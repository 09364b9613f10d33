-- Per-cell scores of ONE submission whose forecasts are in eval.forecasts
-- (getvariable('submission_id')) into eval.cell_density_scores: the rows of its per-cell
-- terms {{ terms }} over 049's cells (its forecasts joined with the truth): 057's
-- single_cell_terms, 054's mixture_cell_terms or 056's quantile_cell_terms, each giving
-- the score columns its family has. A file kept in the upload store stores no per-cell
-- rows: its cells meet the truth by position when a run reads them (067).
INSERT INTO eval.cell_density_scores BY NAME
SELECT getvariable('submission_id') AS submission_id,
       COLUMNS(lambda c: c IN ('cell', 'r', 'r_abs', 'nll', 'crps', 'z', 'u',
                               {{ metric_coverage_names }}))
FROM {{ terms }};
