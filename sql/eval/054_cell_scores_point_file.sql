-- Per-cell scores of ONE point-only upload kept in the upload store
-- (getvariable('forecast_file'): its content-addressed parquet file of packed cell keys
-- and mu, app/scoring/submissions/store.py) into eval.cell_point_scores, scanning the
-- file in place: the same cells and residuals as 053 gives the same rows from
-- eval.forecast_points (r = mu - actual for every finite mu with a panel.truth cell of
-- finite actual and baseline, origins getvariable('first_q')..('last_q'); published
-- rules: r rounded to float32). The file already holds the packed key, so the truth is
-- the only side that computes one.
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
FROM read_parquet(getvariable('forecast_file')) f
JOIN truth t ON t.cell = f.cell
WHERE isfinite(f.mu);
