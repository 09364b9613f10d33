-- Metrics of score run getvariable('score_run_id') from run_agg (the additive sums per
-- submission, item, horizon and origin quarter of 065) into eval.metric_rows (global,
-- horizon, item, statement, item x horizon), eval.quarter_loss_rows (per horizon and origin
-- quarter: the Diebold-Mariano input) and eval.pit_rows (20 bins): every level, the quarter
-- losses and the PIT histogram are roll-ups of run_agg. The run's eval.run_results rows
-- (from_run = the run itself) make them its results (the views eval.metrics, ...).
-- Every sum is rolled up (slot metric_sum_rollup) and every metric finished from its
-- sums (slot metric_finish) as contracts/metrics.py defines them: R2 = 1 - SSE / (sum
-- y^2 - (sum y)^2 / n + 1e-12), the truth-only denominator shared by all submissions
-- (same cells), NaN when the truth has no variance (<= 1e-15); each density mean over
-- the cells with that term; coverage at p the share of those cells whose actual lies in
-- the central p interval (from u for densities, from the quantile pair for grids).
CREATE OR REPLACE TEMP TABLE run_fine AS
SELECT
    a.submission_id, a.item_id, a.horizon, i.statement,
    {{ metric_sum_rollup }}
FROM run_agg a
JOIN ref.items i ON i.item_id = a.item_id
GROUP BY a.submission_id, a.item_id, a.horizon, i.statement;

INSERT INTO eval.metric_rows BY NAME
WITH rolled AS (
    SELECT
        submission_id, horizon, item_id, statement,
        GROUPING(horizon, item_id, statement) AS g,
        {{ metric_sum_rollup }}
    FROM run_fine
    GROUP BY GROUPING SETS (
        (submission_id),
        (submission_id, horizon),
        (submission_id, item_id),
        (submission_id, statement),
        (submission_id, item_id, horizon)
    )
)
SELECT
    getvariable('score_run_id') AS score_run_id,
    submission_id,
    CASE g WHEN 7 THEN 'global' WHEN 3 THEN 'horizon' WHEN 5 THEN 'item'
           WHEN 6 THEN 'statement' WHEN 1 THEN 'item_horizon' END AS level,
    horizon, item_id, CASE WHEN g = 6 THEN statement END AS statement, n,
    {{ metric_finish }},
    sum_y, sum_y2, sse, sae, n_density
FROM rolled;

INSERT INTO eval.quarter_loss_rows
SELECT getvariable('score_run_id'), submission_id, horizon, origin_q, sum(n), sum(sse), sum(sae)
FROM run_agg
GROUP BY submission_id, horizon, origin_q;

INSERT INTO eval.pit_rows
WITH per_sub AS (
    SELECT submission_id, [{{ metric_pit_sums }}] AS counts
    FROM run_agg
    GROUP BY submission_id
),
bins AS (
    -- run_agg's per-group counts and run_pit's per-submission counts (065, 067)
    SELECT submission_id, bin, sum(n) AS n
    FROM (SELECT submission_id, CAST(b AS TINYINT) AS bin, counts[b + 1] AS n
          FROM per_sub, range(20) t(b)
          UNION ALL
          SELECT submission_id, bin, n FROM run_pit)
    GROUP BY submission_id, bin
)
SELECT getvariable('score_run_id'), submission_id, bin, n,
       n / sum(n) OVER (PARTITION BY submission_id)
FROM bins
WHERE n > 0;

-- the headline sums per (firm, origin quarter): the bootstrap's clusters
INSERT INTO eval.cluster_loss_rows BY NAME
SELECT getvariable('score_run_id') AS score_run_id, *
FROM run_clusters;

INSERT INTO eval.run_results
SELECT DISTINCT getvariable('score_run_id'), submission_id, getvariable('score_run_id')
FROM agg_subs;
