-- Public scores: every score run's provenance (footprint version, build and eval SQL
-- versions, sample sizes) and its aggregate results (metrics by level, coverage, DM
-- tests, PIT histograms, coherence). Aggregates over fewer than
-- getvariable('public_min_cells') cells are withheld, the truth sums (sum_y, sum_y2) and
-- the per-quarter loss sums are not published, and an upload's numbers are coarsened
-- (005, and the tests below), so no firm-level value can be read back.
-- The public history is bounded: the latest getvariable('public_history_runs') runs of
-- each footprint (the current board and a few before it); every run stays in the
-- warehouse (GET /api/v1/leaderboards/{footprint}?run=ID), so the snapshot does not grow
-- with every upload.
-- What each run of it keeps, so that its size is bounded by the board, not the uploads
-- (docs/service.md, "The public snapshot"):
-- * the current run of each footprint: every member's headline rows (global and
--   per-horizon metrics, PIT, coverage, its pooled tests against the leaders); the finer
--   levels (per item, statement, item x horizon: about 1,700 rows a submission; the
--   per-horizon tests) only for the in-house submissions and the top
--   getvariable('public_detail_top') of each track's ranking (R2, MAE, CRPS); every other
--   submission's detail stays in the warehouse (GET /api/v1/leaderboards/{footprint}
--   ?by=item or ?by=horizon);
-- * the older runs of the history: global metrics, coverage and the pooled tests.
-- The metric rows and PIT bins are stored once per (from_run, submission) in the schema
-- `store` the snapshot starts from (005: a copy of the publisher's file, extended at each
-- publication); `metrics` and `pit` are views that show them for each run referencing
-- them, so a publication writes the runs' membership (store.run_members: an integer row
-- per run and member), not every member's rows again.
-- The store's bookkeeping (which row sets it holds, 005) stays private.
DROP TABLE IF EXISTS pub.store.metric_sets;

CREATE TABLE pub.score_runs AS
SELECT score_run_id, footprint_id, footprint_name, footprint_version, submission_ids,
       footprint_cells, n_cells, build_id,
       json_extract_string(build, '$.sql_checksum') AS build_sql_version,
       eval_sql_version, started_at, finished_at, elapsed_s, board IS NOT false AS board
FROM eval.score_runs
WHERE score_run_id IN (SELECT score_run_id FROM public_runs)
ORDER BY score_run_id;

-- Which stored rows each published run shows: one row per run and member, the run that
-- scored the member's rows (from_run), whether the run is its footprint's current one, and
-- whether the member's per-item detail is published on it.
CREATE TABLE pub.store.run_members AS
SELECT r.score_run_id, r.submission_id, r.from_run, p.is_current,
       d.submission_id IS NOT NULL AS detail
FROM eval.run_results r
JOIN public_runs p USING (score_run_id)
LEFT JOIN public_detail d USING (score_run_id, submission_id);

CREATE VIEW pub.metrics AS
SELECT m.score_run_id, c.* EXCLUDE (part, score_run_id, item_id)
FROM store.run_members m
JOIN store.metrics c ON c.score_run_id = m.from_run AND c.submission_id = m.submission_id
WHERE c.level = 'global' OR (m.is_current AND c.level = 'horizon') OR m.detail;

CREATE TABLE pub.coverage AS
SELECT score_run_id, submission_id, footprint_cells, predicted_cells, coverage
FROM eval.coverage
WHERE score_run_id IN (SELECT score_run_id FROM public_runs)
ORDER BY score_run_id, submission_id;

-- A test between two submissions one of which is an upload is withheld (its statistic is
-- a function of the upload's per-quarter losses: rounded, one pair of uploads read a
-- cell's truth from it). Only the tests against each group's leader are published (per
-- run, loss and horizon, 0 pooled: the submission that is not an upload with the lowest
-- mean loss, MSE or MAE: an upload's exact loss compared with the others' would tell which
-- side of a known number it lies; the leaderboard's dm_vs_leader as the public sees it):
-- a run holds every pair, k^2 / 2 for k submissions, which
-- stay in the warehouse, so the snapshot grows with the board, not its square.
-- Which of those, like the metrics: the pooled tests of every member of every run of the
-- history; the per-horizon tests (20 horizons x 2 losses a member, most of the file's
-- test rows) of the current run's detail members only (public_detail: the in-house
-- submissions and the top of each track), whose per-horizon detail the snapshot shows.
-- Every other member's per-horizon tests are served from the warehouse
-- (GET /api/v1/leaderboards/{footprint}?by=horizon).
CREATE OR REPLACE TEMP TABLE public_dm_leaders AS
SELECT m.score_run_id, l.loss, coalesce(m.horizon, 0) AS horizon,
       arg_min(m.submission_id, CASE l.loss WHEN 'squared' THEN m.mse ELSE m.mae END) AS leader
FROM eval.metrics m
JOIN public_runs r USING (score_run_id)
JOIN eval.submissions s USING (submission_id)
CROSS JOIN (VALUES ('squared'), ('absolute')) l(loss)
-- (per-horizon leaders of the current runs only: an older run publishes pooled tests)
WHERE (m.level = 'global' OR (r.is_current AND m.level = 'horizon')) AND s.source <> 'upload'
  AND CASE l.loss WHEN 'squared' THEN m.mse ELSE m.mae END IS NOT NULL
GROUP BY ALL;

-- The rows of the view eval.dm_tests for the published runs only: each run's sources
-- first (eval.run_dm_sources), so that the other runs' chains are never expanded.
CREATE TABLE pub.dm_tests AS
WITH tests AS (
    SELECT s.score_run_id, d.submission_a, d.submission_b, d.loss, d.horizon, d.n_quarters,
           d.bandwidth, d.mean_diff, d.dm_stat, d.p_value,
           CASE WHEN l.leader = d.submission_a THEN d.submission_b
                ELSE d.submission_a END AS other
    FROM eval.run_dm_sources s
    JOIN public_runs r USING (score_run_id)
    JOIN eval.dm_test_rows d ON d.score_run_id = s.from_run
    JOIN public_dm_leaders l
      ON l.score_run_id = s.score_run_id AND l.loss = d.loss AND l.horizon = d.horizon
     AND l.leader IN (d.submission_a, d.submission_b)
    WHERE d.horizon = 0 OR r.is_current
), kept AS (
    SELECT t.* FROM tests t
    LEFT JOIN public_detail p ON p.score_run_id = t.score_run_id AND p.submission_id = t.other
    WHERE t.horizon = 0 OR p.submission_id IS NOT NULL
)
SELECT d.score_run_id, d.submission_a, d.submission_b, d.loss, d.horizon, d.n_quarters,
       d.bandwidth,
       CASE WHEN a.up OR b.up THEN NULL ELSE d.mean_diff END AS mean_diff,
       CASE WHEN a.up OR b.up THEN NULL ELSE d.dm_stat END AS dm_stat,
       CASE WHEN a.up OR b.up THEN NULL ELSE d.p_value END AS p_value
FROM kept d
SEMI JOIN eval.run_results ra
  ON ra.score_run_id = d.score_run_id AND ra.submission_id = d.submission_a
SEMI JOIN eval.run_results rb
  ON rb.score_run_id = d.score_run_id AND rb.submission_id = d.submission_b
JOIN (SELECT submission_id, source = 'upload' AS up FROM eval.submissions) a
  ON a.submission_id = d.submission_a
JOIN (SELECT submission_id, source = 'upload' AS up FROM eval.submissions) b
  ON b.submission_id = d.submission_b
ORDER BY d.score_run_id, d.submission_a, d.submission_b, d.loss, d.horizon;

-- PIT histograms of the current run of each footprint (stored once, 005).
CREATE VIEW pub.pit AS
SELECT m.score_run_id, c.submission_id, c.bin, c.n, c.share
FROM store.run_members m
JOIN store.pit c ON c.from_run = m.from_run AND c.submission_id = m.submission_id
WHERE m.is_current;

-- The quarter losses (per submission, horizon and origin quarter: the finest grain, from
-- which two uploads differing in one cell per group read 893 truth values back) stay in
-- the warehouse: the Diebold-Mariano tests made from them are published above.

CREATE TABLE pub.coherence AS
SELECT submission_id, identity, n_instances, median_violation, mean_violation, eval_sql_version
FROM eval.coherence
WHERE n_instances >= getvariable('public_min_cells')
ORDER BY submission_id, identity;

-- The board of each footprint (eval.board_runs), pooled over all cells: the leaderboard
-- rows.
CREATE TABLE pub.leaderboard AS
WITH latest AS (
    SELECT footprint_name, score_run_id FROM eval.board_runs
)
SELECT l.footprint_name AS footprint, m.score_run_id, m.submission_id, m.model, m.n,
       {{ metric_columns }}
FROM latest l JOIN pub.metrics m USING (score_run_id)
WHERE m.level = 'global'
ORDER BY footprint, m.r2 DESC NULLS LAST;
