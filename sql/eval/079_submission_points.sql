-- The temp view submission_points: submission getvariable('points_id')'s point forecast
-- of each cell it predicts finitely, from the identifier forecasts (eval.forecasts, or the
-- view over a stored upload's file): x the point (a single forecast's mu as it is, a
-- mixture's mean of its components) and s its sd (a single forecast's sigma, a mixture's
-- moment-matched sqrt(mean sigma_k^2 + var mu_k)). A mixture cell with a non-finite
-- component has no point. The readers: the identity check (080) and the reconciliation
-- (sql/reconcile/010, 020, 030).
-- getvariable('points_components') (the submission's components) is a constant: the
-- branch it rules out never runs, so a single forecast skips the per-cell group-by, half
-- of each reader's time on 10M cells (docs/scoring.md, "Figures behind the code's
-- choices").
CREATE OR REPLACE TEMP VIEW submission_points AS
SELECT firm_id, origin_q, item_id, horizon, mu AS x, sqrt(sigma * sigma) AS s
FROM {{ forecasts }}
WHERE getvariable('points_components') = 1
  AND submission_id = getvariable('points_id') AND isfinite(mu)
UNION ALL
SELECT firm_id, origin_q, item_id, horizon,
       avg(mu) AS x,
       sqrt(avg(sigma * sigma) + var_pop(mu)) AS s
FROM {{ forecasts }}
WHERE getvariable('points_components') > 1 AND submission_id = getvariable('points_id')
GROUP BY ALL
HAVING bool_and(isfinite(mu));
