-- The temp table run_agg of a score run: additive sums of stored cell scores per
-- (submission, item, horizon, origin quarter) on the run's common sample, which 070 rolls
-- up. Filled by 065 (submissions whose cell scores are in eval.cell_density_scores) and
-- 066 (point-only submissions, eval.cell_point_scores); the caller runs each step only
-- when the run has such submissions, as either one alone still hashes the common sample.
-- The sums are the metric registry's (contracts/metrics.py, filled in for the slot by
-- proforma.app.store.metric_sql): n, the truth's sum_y and sum_y2, and each metric's.
CREATE OR REPLACE TEMP TABLE run_agg (
    submission_id INTEGER,
    item_id SMALLINT,
    horizon TINYINT,
    origin_q INTEGER,
    {{ metric_sum_columns }},
    {{ metric_pit_columns }}
);

-- The same sums per (submission, firm, origin quarter) for the headline metrics only
-- (contracts/metrics.py cluster_sums): the clusters a board's bootstrap resamples
-- (proforma.app.scoring.uncertainty); 070 keeps them in eval.cluster_loss_rows.
CREATE OR REPLACE TEMP TABLE run_clusters (
    submission_id INTEGER,
    firm_id INTEGER,
    origin_q INTEGER,
    {{ metric_cluster_columns }}
);

-- PIT bin counts per submission, from steps that count them over a whole submission
-- (065, 067) rather than per (item, horizon, origin quarter) as run_agg's pit columns; 070
-- adds both.
CREATE OR REPLACE TEMP TABLE run_pit (
    submission_id INTEGER,
    bin TINYINT,
    n BIGINT
);
