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
CREATE OR REPLACE TEMP TABLE public_runs AS
SELECT score_run_id, k = 1 AS is_current
FROM (SELECT score_run_id,
             row_number() OVER (PARTITION BY footprint_name ORDER BY score_run_id DESC) AS k
      FROM eval.score_runs)
WHERE k <= getvariable('public_history_runs');

CREATE OR REPLACE TEMP TABLE public_detail AS
SELECT score_run_id, submission_id
FROM (SELECT m.score_run_id, m.submission_id, s.source,
             row_number() OVER (PARTITION BY m.score_run_id
                                ORDER BY m.r2 DESC NULLS LAST, m.submission_id) AS by_r2,
             row_number() OVER (PARTITION BY m.score_run_id
                                ORDER BY m.mae NULLS LAST, m.submission_id) AS by_mae,
             row_number() OVER (PARTITION BY m.score_run_id
                                ORDER BY m.crps NULLS LAST, m.submission_id) AS by_crps
      FROM eval.metrics m
      JOIN public_runs r USING (score_run_id)
      JOIN eval.submissions s USING (submission_id)
      WHERE r.is_current AND m.level = 'global')
WHERE source <> 'upload' OR least(by_r2, by_mae, by_crps) <= getvariable('public_detail_top');

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
-- Each row's public values depend on that row only, and a run references the rows of
-- the submissions it reuses (eval.run_results: from_run), so they are computed once per
-- (from_run, submission) into the publisher's cache (catalog pubcache, a private file
-- beside the snapshot, named after this file's text and the disclosure key: any change
-- starts a new one; app/read/snapshot.py) and each publication computes only the rows of
-- the submissions scored since the last one, then copies the rest: a publication no longer
-- costs a coarsening per row of the whole board.
-- The cache holds the rows the snapshot takes: every (from_run, submission)'s headline
-- rows (global, horizon) and the finer rows of those in public_detail only, so that it
-- stays the size of what is published.
CREATE OR REPLACE TEMP TABLE public_metric_refs AS
SELECT DISTINCT r.from_run, r.submission_id, x.part
FROM eval.run_results r
JOIN public_runs p USING (score_run_id)
LEFT JOIN public_detail d USING (score_run_id, submission_id)
CROSS JOIN (VALUES ('headline'), ('detail')) x(part)
WHERE x.part = 'headline' OR d.submission_id IS NOT NULL;

CREATE TABLE IF NOT EXISTS pubcache.metric_sets (
    from_run BIGINT, submission_id BIGINT, part VARCHAR
);

CREATE OR REPLACE TEMP TABLE public_metric_todo AS
SELECT from_run, submission_id, part FROM public_metric_refs
EXCEPT SELECT from_run, submission_id, part FROM pubcache.metric_sets;

CREATE OR REPLACE TEMP TABLE public_metric_new AS
WITH m AS (
    SELECT m.*, t.part, s.name AS model, s.source = 'upload' AS is_upload,
           m.level = 'global' AS is_global, i.item,
           coalesce(m.statement, i.statement) AS item_statement,
           m.submission_id || '/' || m.level || '/' || coalesce(CAST(m.horizon AS VARCHAR), '')
           || '/' || coalesce(i.item, '') || '/' || coalesce(m.statement, '') || '/' AS label
    FROM eval.metric_rows m
    JOIN public_metric_todo t
      ON t.from_run = m.score_run_id AND t.submission_id = m.submission_id
     AND t.part = CASE WHEN m.level IN ('global', 'horizon') THEN 'headline' ELSE 'detail' END
    JOIN eval.submissions s ON s.submission_id = m.submission_id
    LEFT JOIN ref.items i ON i.item_id = m.item_id
)
SELECT part, item_id, score_run_id, submission_id, model, level, horizon, item,
       item_statement AS statement, n,
       {{ metric_public }}
FROM m;

CREATE TABLE IF NOT EXISTS pubcache.metrics AS FROM public_metric_new LIMIT 0;
-- (idempotent: rows of a publication that died before recording its sets go first)
DELETE FROM pubcache.metrics c USING public_metric_todo t
WHERE c.score_run_id = t.from_run AND c.submission_id = t.submission_id AND c.part = t.part;
INSERT INTO pubcache.metrics BY NAME FROM public_metric_new;
INSERT INTO pubcache.metric_sets SELECT from_run, submission_id, part FROM public_metric_todo;
-- rows the snapshot no longer takes (a submission out of the top, a sample that changed)
-- leave the cache
CREATE OR REPLACE TEMP TABLE public_metric_stale AS
SELECT from_run, submission_id, part FROM pubcache.metric_sets
EXCEPT SELECT from_run, submission_id, part FROM public_metric_refs;
DELETE FROM pubcache.metrics c USING public_metric_stale t
WHERE c.score_run_id = t.from_run AND c.submission_id = t.submission_id AND c.part = t.part;
DELETE FROM pubcache.metric_sets c USING public_metric_stale t
WHERE c.from_run = t.from_run AND c.submission_id = t.submission_id AND c.part = t.part;

CREATE TABLE pub.metrics AS
SELECT r.score_run_id, c.* EXCLUDE (part, score_run_id, item_id)
FROM eval.run_results r
JOIN public_runs p USING (score_run_id)
JOIN pubcache.metrics c ON c.score_run_id = r.from_run AND c.submission_id = r.submission_id
LEFT JOIN public_detail d ON d.score_run_id = r.score_run_id AND d.submission_id = r.submission_id
WHERE c.n >= getvariable('public_min_cells')
  AND (c.level = 'global' OR (p.is_current AND c.level = 'horizon')
       OR d.submission_id IS NOT NULL)
ORDER BY r.score_run_id, c.submission_id, c.level, c.horizon, c.item_id;

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
CROSS JOIN (VALUES ('squared'), ('absolute')) l(loss)
-- (per-horizon leaders of the current runs only: an older run publishes pooled tests)
WHERE (m.level = 'global' OR (r.is_current AND m.level = 'horizon'))
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
       CASE WHEN a.up OR b.up THEN round(d.dm_stat, 1) ELSE d.dm_stat END AS dm_stat,
       CASE WHEN a.up OR b.up THEN round(d.p_value, 2) ELSE d.p_value END AS p_value
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

-- PIT histograms: an upload's bin counts are withheld and its shares coarsened (8 / n).
-- Like the metrics, a (from_run, submission)'s public bins depend on its own rows only, so
-- they are computed once into the publisher's cache and copied for every run that
-- references them. The current run of each footprint only: an older run's histograms are
-- mostly the same rows again (a run references its members' earlier results), about two
-- thirds of the file's PIT rows for nothing new. Every run's histograms stay in the
-- warehouse (`proforma export`; the pages and GET /api/v1/submissions/{id} show the
-- latest run's).
CREATE OR REPLACE TEMP TABLE public_pit_refs AS
SELECT DISTINCT r.from_run, r.submission_id
FROM eval.run_results r
JOIN public_runs p USING (score_run_id)
WHERE p.is_current;

CREATE TABLE IF NOT EXISTS pubcache.pit (
    from_run INTEGER, submission_id INTEGER, bin TINYINT, n BIGINT, share DOUBLE
);

-- (a submission without PIT bins, a point forecast, is looked for again each time: no rows)
CREATE OR REPLACE TEMP TABLE public_pit_todo AS
SELECT from_run, submission_id FROM public_pit_refs
EXCEPT SELECT DISTINCT from_run, submission_id FROM pubcache.pit;

-- (idempotent: the rows of a publication that died half-way go first)
DELETE FROM pubcache.pit c USING public_pit_todo t
WHERE c.from_run = t.from_run AND c.submission_id = t.submission_id;
INSERT INTO pubcache.pit
SELECT p.score_run_id, p.submission_id, p.bin,
       CASE WHEN s.source = 'upload' THEN NULL ELSE p.n END,
       CASE WHEN s.source = 'upload'
            THEN pf_coarsen(p.share, 8.0 / nullif(sum(p.n) OVER w, 0),
                            p.submission_id || '/pit/' || p.bin || '/share')
            ELSE p.share END
FROM eval.pit_rows p
JOIN public_pit_todo t ON t.from_run = p.score_run_id AND t.submission_id = p.submission_id
JOIN eval.submissions s ON s.submission_id = p.submission_id
WINDOW w AS (PARTITION BY p.score_run_id, p.submission_id);

DELETE FROM pubcache.pit c
WHERE NOT EXISTS (SELECT 1 FROM public_pit_refs r
                  WHERE r.from_run = c.from_run AND r.submission_id = c.submission_id);

CREATE TABLE pub.pit AS
SELECT r.score_run_id, c.submission_id, c.bin, c.n, c.share
FROM eval.run_results r
JOIN public_runs p USING (score_run_id)
JOIN pubcache.pit c ON c.from_run = r.from_run AND c.submission_id = r.submission_id
WHERE p.is_current
ORDER BY r.score_run_id, c.submission_id, c.bin;

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
