-- Per-cell scores of ONE point-only submission (getvariable('submission_id'): one
-- component, no sigma, not a quantile forecast) into eval.cell_point_scores: the residual
-- r = mu - actual of every cell with a finite mu and a panel.truth cell with finite actual
-- and baseline (origins getvariable('first_q')..('last_q'), the submission's range). The
-- same cells and residuals as 050 gives a single forecast without sigma (published rules:
-- r rounded to float32 as the published evaluator stores it), without its density terms,
-- which are all NULL for such a submission.
INSERT INTO eval.cell_point_scores
WITH truth AS (
    SELECT eval.cell_key(firm_id, origin_q, item_id, horizon) AS cell, actual
    FROM panel.truth
    WHERE origin_q BETWEEN getvariable('first_q') AND getvariable('last_q')
      AND isfinite(actual) AND isfinite(baseline)
)
SELECT
    getvariable('submission_id') AS submission_id,
    t.cell,
    CASE WHEN getvariable('float32_residuals') THEN CAST(f.mu - t.actual AS FLOAT)::DOUBLE
         ELSE f.mu - t.actual END AS r
FROM (
    -- from whichever table holds it (uploads and reference baselines: eval.forecast_points;
    -- a model's point forecasts: eval.forecast_rows), each branch read alone
    SELECT eval.cell_key(firm_id, origin_q, item_id, horizon) AS cell, mu
    FROM eval.forecast_points
    WHERE submission_id = getvariable('submission_id')
    UNION ALL
    SELECT eval.cell_key(firm_id, origin_q, item_id, horizon) AS cell, mu
    FROM eval.forecast_rows
    WHERE submission_id = getvariable('submission_id')
) f
JOIN truth t ON t.cell = f.cell
WHERE isfinite(f.mu);
