-- Public scores: every score run's provenance (footprint version, build and eval SQL
-- versions, sample sizes) and its aggregate results (metrics by level, coverage, DM
-- tests, PIT histograms, coherence). Aggregates over fewer than
-- getvariable('public_min_cells') cells are withheld, the truth sums (sum_y, sum_y2) and
-- the per-quarter loss sums are not published, and an upload's numbers are coarsened
-- (below), so no firm-level value can be read back.
-- The public history is bounded: the latest getvariable('public_history_runs') runs of
-- each footprint (the current board and a few before it); every run stays in the
-- warehouse (GET /api/v1/leaderboards/{footprint}?run=ID), so the snapshot does not grow
-- with every upload.
-- The older runs of the history keep their global and per-horizon metrics (the finer
-- levels, most of the rows, are the current board's only).
CREATE OR REPLACE TEMP TABLE public_runs AS
SELECT score_run_id, k = 1 AS is_current
FROM (SELECT score_run_id,
             row_number() OVER (PARTITION BY footprint_name ORDER BY score_run_id DESC) AS k
      FROM eval.score_runs)
WHERE k <= getvariable('public_history_runs');

CREATE TABLE pub.score_runs AS
SELECT score_run_id, footprint_id, footprint_name, footprint_version, submission_ids,
       footprint_cells, n_cells, build_id,
       json_extract_string(build, '$.sql_checksum') AS build_sql_version,
       eval_sql_version, started_at, finished_at, elapsed_s
FROM eval.score_runs
WHERE score_run_id IN (SELECT score_run_id FROM public_runs)
ORDER BY score_run_id;

-- An upload's truth-derived numbers are coarsened (app/api/disclosure.py: a dithered
-- quantum of 4 A / n, A the metric's single-cell sensitivity: 240 for MSE, 2 for MAE and
-- CRPS; 8 / n for coverage shares; NLL and z2 at the global level only, 2 significant
-- digits), so that differencing two uploads reads no truth value back; other
-- submissions' numbers are exact. pf_coarsen and pf_two_digits are the publisher's UDFs.
-- Each metric's column is written as its definition says (contracts/metrics.py:
-- disclosure and sensitivity; the slot metric_public).
CREATE TABLE pub.metrics AS
WITH m AS (
    SELECT m.*, s.name AS model, s.source = 'upload' AS is_upload, m.level = 'global' AS is_global,
           i.item,
           coalesce(m.statement, i.statement) AS item_statement,
           m.submission_id || '/' || m.level || '/' || coalesce(CAST(m.horizon AS VARCHAR), '')
           || '/' || coalesce(i.item, '') || '/' || coalesce(m.statement, '') || '/' AS label
    FROM eval.metrics m
    JOIN public_runs r USING (score_run_id)
    JOIN eval.submissions s USING (submission_id)
    LEFT JOIN ref.items i ON i.item_id = m.item_id
    WHERE m.n >= getvariable('public_min_cells')
      AND (r.is_current OR m.level IN ('global', 'horizon'))
)
SELECT score_run_id, submission_id, model, level, horizon, item, item_statement AS statement, n,
       {{ metric_public }}
FROM m
ORDER BY score_run_id, submission_id, level, horizon, item_id;

CREATE TABLE pub.coverage AS
SELECT score_run_id, submission_id, footprint_cells, predicted_cells, coverage
FROM eval.coverage
WHERE score_run_id IN (SELECT score_run_id FROM public_runs)
ORDER BY score_run_id, submission_id;

-- A test between two submissions one of which is an upload: the statistic to one decimal
-- and the p-value to two (the mean loss difference, a difference of two uploads' exact
-- sums, is withheld). Only the tests against each group's leader are published (per run,
-- loss and horizon, 0 pooled: the submission with the lowest mean loss, MSE or MAE; the
-- leaderboard's dm_vs_leader): a run holds every pair, k^2 / 2 for k submissions, which
-- stay in the warehouse, so the snapshot grows with the board, not its square.
CREATE OR REPLACE TEMP TABLE public_dm_leaders AS
SELECT m.score_run_id, l.loss, coalesce(m.horizon, 0) AS horizon,
       arg_min(m.submission_id, CASE l.loss WHEN 'squared' THEN m.mse ELSE m.mae END) AS leader
FROM eval.metrics m
JOIN public_runs r USING (score_run_id)
CROSS JOIN (VALUES ('squared'), ('absolute')) l(loss)
WHERE m.level IN ('global', 'horizon')
  AND CASE l.loss WHEN 'squared' THEN m.mse ELSE m.mae END IS NOT NULL
GROUP BY ALL;

CREATE TABLE pub.dm_tests AS
SELECT d.score_run_id, d.submission_a, d.submission_b, d.loss, d.horizon, d.n_quarters,
       d.bandwidth,
       CASE WHEN a.up OR b.up THEN NULL ELSE d.mean_diff END AS mean_diff,
       CASE WHEN a.up OR b.up THEN round(d.dm_stat, 1) ELSE d.dm_stat END AS dm_stat,
       CASE WHEN a.up OR b.up THEN round(d.p_value, 2) ELSE d.p_value END AS p_value
FROM eval.dm_tests d
JOIN (SELECT submission_id, source = 'upload' AS up FROM eval.submissions) a
  ON a.submission_id = d.submission_a
JOIN (SELECT submission_id, source = 'upload' AS up FROM eval.submissions) b
  ON b.submission_id = d.submission_b
JOIN public_dm_leaders l
  ON l.score_run_id = d.score_run_id AND l.loss = d.loss AND l.horizon = d.horizon
 AND l.leader IN (d.submission_a, d.submission_b)
WHERE d.score_run_id IN (SELECT score_run_id FROM public_runs)
ORDER BY d.score_run_id, d.submission_a, d.submission_b, d.loss, d.horizon;

-- PIT histograms: an upload's bin counts are withheld and its shares coarsened (8 / n).
CREATE TABLE pub.pit AS
SELECT p.score_run_id, p.submission_id, p.bin,
       CASE WHEN s.source = 'upload' THEN NULL ELSE p.n END AS n,
       CASE WHEN s.source = 'upload'
            THEN pf_coarsen(p.share, 8.0 / nullif(t.total, 0),
                            p.submission_id || '/pit/' || p.bin || '/share')
            ELSE p.share END AS share
FROM eval.pit p
JOIN eval.submissions s USING (submission_id)
JOIN (SELECT score_run_id, submission_id, sum(n) AS total FROM eval.pit GROUP BY ALL) t
  USING (score_run_id, submission_id)
WHERE p.score_run_id IN (SELECT score_run_id FROM public_runs)
ORDER BY p.score_run_id, p.submission_id, p.bin;

-- The quarter losses (per submission, horizon and origin quarter: the finest grain, from
-- which two uploads differing in one cell per group read 893 truth values back) stay in
-- the warehouse: the Diebold-Mariano tests made from them are published above.

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
       {{ metric_columns }}
FROM latest l JOIN pub.metrics m USING (score_run_id)
WHERE m.level = 'global'
ORDER BY footprint, m.r2 DESC NULLS LAST;
