-- Public scores: every score run's provenance (footprint version, build and eval SQL
-- versions, sample sizes) and its aggregate results (metrics by level, coverage, DM
-- tests, PIT histograms, per-quarter loss sums, coherence). Aggregates over fewer than
-- getvariable('public_min_cells') cells are withheld, and the truth sums (sum_y,
-- sum_y2) are not published, so no firm-level value can be read back.
CREATE TABLE pub.score_runs AS
SELECT score_run_id, footprint_id, footprint_name, footprint_version, submission_ids,
       footprint_cells, n_cells, build_id,
       json_extract_string(build, '$.sql_checksum') AS build_sql_version,
       eval_sql_version, started_at, finished_at, elapsed_s
FROM eval.score_runs
ORDER BY score_run_id;

CREATE TABLE pub.metrics AS
SELECT m.score_run_id, m.submission_id, s.name AS model, m.level, m.horizon, i.item,
       coalesce(m.statement, i.statement) AS statement, m.n, m.r2, m.mse, m.mae, m.nll,
       m.crps, m.z2, m.cov50, m.cov80, m.cov90, m.cov95
FROM eval.metrics m
JOIN eval.submissions s USING (submission_id)
LEFT JOIN ref.items i ON i.item_id = m.item_id
WHERE m.n >= getvariable('public_min_cells')
ORDER BY m.score_run_id, m.submission_id, m.level, m.horizon, m.item_id;

CREATE TABLE pub.coverage AS
SELECT score_run_id, submission_id, footprint_cells, predicted_cells, coverage
FROM eval.coverage
ORDER BY score_run_id, submission_id;

CREATE TABLE pub.dm_tests AS
SELECT score_run_id, submission_a, submission_b, loss, horizon, n_quarters, bandwidth,
       mean_diff, dm_stat, p_value
FROM eval.dm_tests
ORDER BY score_run_id, submission_a, submission_b, loss, horizon;

CREATE TABLE pub.pit AS
SELECT score_run_id, submission_id, bin, n, share
FROM eval.pit
ORDER BY score_run_id, submission_id, bin;

CREATE TABLE pub.quarter_losses AS
SELECT score_run_id, submission_id, horizon, qlabel(origin_q) AS origin_quarter, n, sum_sq, sum_abs
FROM eval.quarter_losses
WHERE n >= getvariable('public_min_cells')
ORDER BY score_run_id, submission_id, horizon, origin_q;

CREATE TABLE pub.coherence AS
SELECT submission_id, identity, n_instances, median_violation, mean_violation, eval_sql_version
FROM eval.coherence
WHERE n_instances >= getvariable('public_min_cells')
ORDER BY submission_id, identity;

-- The latest score run of each footprint, pooled over all cells: the leaderboard rows.
CREATE TABLE pub.leaderboard AS
WITH latest AS (
    SELECT footprint_name, max(score_run_id) AS score_run_id
    FROM eval.score_runs GROUP BY footprint_name
)
SELECT l.footprint_name AS footprint, m.score_run_id, m.submission_id, m.model, m.n,
       m.r2, m.mse, m.mae, m.nll, m.crps, m.cov50, m.cov80, m.cov90, m.cov95
FROM latest l JOIN pub.metrics m USING (score_run_id)
WHERE m.level = 'global'
ORDER BY footprint, m.r2 DESC NULLS LAST;
