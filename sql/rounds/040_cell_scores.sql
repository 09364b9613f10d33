-- The resolved cells ONE submission of their round (getvariable('submission_id')) has no
-- score for yet: those this resolution resolved, and those an earlier resolution could
-- not score for it (its failure was isolated there), as the static scorer's per-cell
-- terms read them
-- (sql/eval/057 single, 054 mixture, 056 quantile forecast: the same terms and rules; the
-- round's rule set, rounds.rounds.rules, sets their variables):
-- * temp table round_cells: each resolved cell of finite actual and baseline with a
--   cell number of this resolution (the terms key cells by one integer);
-- * temp view round_forecast_cells: the submission's forecasts of those cells as
--   (cell, actual, component, mu, sigma), from rounds.forecasts (a single forecast,
--   component 0) or rounds.forecast_components (a mixture or a quantile forecast).
CREATE OR REPLACE TEMP TABLE round_cells AS
SELECT row_number() OVER (ORDER BY t.gvkey, t.item_id, t.horizon) AS cell,
       t.gvkey, t.item_id, t.horizon, t.actual::DOUBLE AS actual
FROM rounds.truth AS t
JOIN rounds.submissions AS s USING (round_id)
WHERE s.submission_id = getvariable('submission_id')
  AND isfinite(t.actual) AND isfinite(t.baseline)
  AND NOT EXISTS (SELECT 1 FROM rounds.cell_scores AS done
                  WHERE done.submission_id = s.submission_id AND done.gvkey = t.gvkey
                    AND done.item_id = t.item_id AND done.horizon = t.horizon);

CREATE OR REPLACE TEMP VIEW round_forecast_cells AS
SELECT c.cell, c.actual, f.component, f.mu, f.sigma
FROM (SELECT gvkey, item_id, horizon, 0 AS component, mu, sigma
      FROM rounds.forecasts
      WHERE submission_id = getvariable('submission_id')
      UNION ALL
      SELECT gvkey, item_id, horizon, component, mu, sigma
      FROM rounds.forecast_components
      WHERE submission_id = getvariable('submission_id')) AS f
JOIN round_cells AS c USING (gvkey, item_id, horizon);
