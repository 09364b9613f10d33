-- The per-cell scores {{ terms }} (the static scorer's terms over round_forecast_cells,
-- 040) of submission getvariable('submission_id') into rounds.cell_scores, keyed by the
-- round's cells again: r, NLL, CRPS, z, PIT u and the central-interval flags as its
-- family has them, and the absolute-track residual r_abs (the column named by the
-- caller: a quantile forecast's median - actual, NULL without level 0.5; r for every other
-- family).
INSERT INTO rounds.cell_scores BY NAME
SELECT getvariable('submission_id') AS submission_id, c.gvkey, c.item_id, c.horizon,
       t.* EXCLUDE (cell)
FROM (SELECT COLUMNS(lambda c: c IN ('cell', 'r', 'nll', 'crps', 'z', 'u',
                                     {{ metric_coverage_names }})),
             {{ r_abs }} AS r_abs
      FROM {{ terms }}) AS t
JOIN round_cells AS c USING (cell);
