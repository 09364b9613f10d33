-- Aggregates of cell_scores for score run getvariable('score_run_id') into eval.metrics
-- (global, horizon, item, statement, item x horizon), eval.quarter_losses (per
-- horizon and origin quarter: the Diebold-Mariano input) and eval.pit (20 bins), in
-- one pass. R2 = 1 - SSE / (sum y^2 - (sum y)^2 / n + 1e-12), the truth-only
-- denominator shared by all submissions (same cells); NaN when the truth has no
-- variance (<= 1e-15). Coverage at p counts u in [(1 - p) / 2, (1 + p) / 2].
CREATE OR REPLACE TEMP TABLE run_agg AS
SELECT
    submission_id, horizon, item_id, statement, origin_q,
    CAST(least(floor(u * 20), 19) AS TINYINT) AS pit_bin,
    GROUPING(horizon, item_id, statement, origin_q,
             CAST(least(floor(u * 20), 19) AS TINYINT)) AS g,
    count(*) AS n,
    sum(y) AS sum_y,
    sum(y * y) AS sum_y2,
    sum(r * r) AS sse,
    sum(abs(r)) AS sae,
    avg(nll) AS nll,
    avg(crps) AS crps,
    avg(z * z) AS z2,
    avg(CAST(u BETWEEN 0.25 AND 0.75 AS DOUBLE)) AS cov50,
    avg(CAST(u BETWEEN 0.10 AND 0.90 AS DOUBLE)) AS cov80,
    avg(CAST(u BETWEEN 0.05 AND 0.95 AS DOUBLE)) AS cov90,
    avg(CAST(u BETWEEN 0.025 AND 0.975 AS DOUBLE)) AS cov95
FROM cell_scores
GROUP BY GROUPING SETS (
    (submission_id),
    (submission_id, horizon),
    (submission_id, item_id),
    (submission_id, statement),
    (submission_id, item_id, horizon),
    (submission_id, horizon, origin_q),
    (submission_id, CAST(least(floor(u * 20), 19) AS TINYINT))
);

INSERT INTO eval.metrics
SELECT
    getvariable('score_run_id'),
    submission_id,
    CASE g
        WHEN 31 THEN 'global'
        WHEN 15 THEN 'horizon'
        WHEN 23 THEN 'item'
        WHEN 27 THEN 'statement'
        WHEN 7 THEN 'item_horizon'
    END AS level,
    horizon, item_id, statement, n,
    CASE WHEN sum_y2 - sum_y * sum_y / n <= 1e-15 THEN 'NaN'::DOUBLE
         ELSE 1 - sse / (sum_y2 - sum_y * sum_y / n + 1e-12) END AS r2,
    sse / n AS mse,
    sae / n AS mae,
    nll, crps, z2, cov50, cov80, cov90, cov95,
    sum_y, sum_y2, sse, sae
FROM run_agg
WHERE g IN (31, 15, 23, 27, 7);

INSERT INTO eval.quarter_losses
SELECT getvariable('score_run_id'), submission_id, horizon, origin_q, n, sse, sae
FROM run_agg
WHERE g = 13;

INSERT INTO eval.pit
SELECT getvariable('score_run_id'), submission_id, pit_bin, n,
       n / sum(n) OVER (PARTITION BY submission_id)
FROM run_agg
WHERE g = 30 AND pit_bin IS NOT NULL;
