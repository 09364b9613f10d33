-- Additive sums of one chunk of a score run's cells (temp view run_agg_chunk over the
-- per-cell view {{ cell_scores }} of 060) per (submission, item, horizon, origin quarter),
-- with the 20 PIT bin counts as columns (one hash aggregate with few groups; GROUPING
-- SETS would materialize every cell first). app.scoring.metrics collects the chunks into
-- the temp table run_agg: the single forecasts in one chunk, each mixture submission in
-- its own (a mixture's per-cell hash tables are what fills memory; two demo FFNN mixtures
-- at once ran DuckDB out of its 6GB). 070 rolls run_agg up.
CREATE OR REPLACE TEMP VIEW run_agg_chunk AS
SELECT
    submission_id, item_id, horizon, origin_q,
    count(*) AS n,
    sum(y) AS sum_y,
    sum(y * y) AS sum_y2,
    sum(r * r) AS sse,
    sum(abs(r)) AS sae,
    -- nll, z and u are NULL together (no density); crps also for Student-t mixtures.
    count(u) AS n_u,
    sum(nll) AS sum_nll,
    count(crps) AS n_crps,
    sum(crps) AS sum_crps,
    sum(z * z) AS sum_z2,
    count(*) FILTER (WHERE u BETWEEN 0.25 AND 0.75) AS in50,
    count(*) FILTER (WHERE u BETWEEN 0.10 AND 0.90) AS in80,
    count(*) FILTER (WHERE u BETWEEN 0.05 AND 0.95) AS in90,
    count(*) FILTER (WHERE u BETWEEN 0.025 AND 0.975) AS in95,
    count(*) FILTER (WHERE pit_bin = 0) AS pit0,
    count(*) FILTER (WHERE pit_bin = 1) AS pit1,
    count(*) FILTER (WHERE pit_bin = 2) AS pit2,
    count(*) FILTER (WHERE pit_bin = 3) AS pit3,
    count(*) FILTER (WHERE pit_bin = 4) AS pit4,
    count(*) FILTER (WHERE pit_bin = 5) AS pit5,
    count(*) FILTER (WHERE pit_bin = 6) AS pit6,
    count(*) FILTER (WHERE pit_bin = 7) AS pit7,
    count(*) FILTER (WHERE pit_bin = 8) AS pit8,
    count(*) FILTER (WHERE pit_bin = 9) AS pit9,
    count(*) FILTER (WHERE pit_bin = 10) AS pit10,
    count(*) FILTER (WHERE pit_bin = 11) AS pit11,
    count(*) FILTER (WHERE pit_bin = 12) AS pit12,
    count(*) FILTER (WHERE pit_bin = 13) AS pit13,
    count(*) FILTER (WHERE pit_bin = 14) AS pit14,
    count(*) FILTER (WHERE pit_bin = 15) AS pit15,
    count(*) FILTER (WHERE pit_bin = 16) AS pit16,
    count(*) FILTER (WHERE pit_bin = 17) AS pit17,
    count(*) FILTER (WHERE pit_bin = 18) AS pit18,
    count(*) FILTER (WHERE pit_bin = 19) AS pit19
FROM (SELECT *, CAST(least(floor(u * 20), 19) AS TINYINT) AS pit_bin FROM {{ cell_scores }})
GROUP BY submission_id, item_id, horizon, origin_q;

