-- Metrics of round getvariable('round_id') for the submissions of the temp table
-- round_subs(submission_id), over their common sample: the resolved cells (finite actual
-- and baseline) that every one of them scored (rounds.cell_scores). Per submission,
-- globally (horizon NULL) and per horizon, the sums and metrics of sql/eval/065 and 070:
-- y = actual - baseline (in double), R2 = 1 - SSE / (sum y^2 - (sum y)^2 / n + 1e-12),
-- NaN when the truth has no variance (<= 1e-15); MAE, MSE; each density mean (NLL, CRPS,
-- z2 = mean z^2) over the cells with that term; coverage at p: the share of cells with a
-- PIT u in the central p interval.
WITH common AS (
    SELECT c.gvkey, c.item_id, c.horizon
    FROM rounds.cell_scores AS c
    JOIN round_subs USING (submission_id)
    GROUP BY c.gvkey, c.item_id, c.horizon
    HAVING count(*) = (SELECT count(*) FROM round_subs)
),
cells AS (
    SELECT c.submission_id, c.horizon, c.r, c.nll, c.crps, c.z, c.u,
           t.actual::DOUBLE - t.baseline::DOUBLE AS y
    FROM rounds.cell_scores AS c
    JOIN round_subs USING (submission_id)
    JOIN common AS m USING (gvkey, item_id, horizon)
    JOIN rounds.truth AS t
      ON t.round_id = getvariable('round_id') AND t.gvkey = c.gvkey
     AND t.item_id = c.item_id AND t.horizon = c.horizon
),
rolled AS (
    SELECT submission_id, horizon, GROUPING(horizon) AS g,
           count(*) AS n, sum(y) AS sum_y, sum(y * y) AS sum_y2, sum(r * r) AS sse,
           sum(abs(r)) AS sae,
           sum(nll) / nullif(count(nll), 0) AS nll,
           sum(crps) / nullif(count(crps), 0) AS crps,
           sum(z * z) / nullif(count(z), 0) AS z2,
           count(*) FILTER (WHERE u BETWEEN 0.25 AND 0.75) / nullif(count(u), 0) AS cov50,
           count(*) FILTER (WHERE u BETWEEN 0.10 AND 0.90) / nullif(count(u), 0) AS cov80,
           count(*) FILTER (WHERE u BETWEEN 0.05 AND 0.95) / nullif(count(u), 0) AS cov90,
           count(*) FILTER (WHERE u BETWEEN 0.025 AND 0.975) / nullif(count(u), 0) AS cov95
    FROM cells
    GROUP BY GROUPING SETS ((submission_id), (submission_id, horizon))
)
SELECT submission_id, CASE WHEN g = 1 THEN NULL ELSE horizon END::TINYINT AS horizon, n,
       CASE WHEN sum_y2 - sum_y * sum_y / n <= 1e-15 THEN 'NaN'::DOUBLE
            ELSE 1 - sse / (sum_y2 - sum_y * sum_y / n + 1e-12) END AS r2,
       sse / n AS mse, sae / n AS mae, nll, crps, z2, cov50, cov80, cov90, cov95,
       sum_y, sum_y2, sse, sae
FROM rolled
ORDER BY submission_id, horizon NULLS FIRST;
