-- Score runs reference results instead of copying them (issue 34, item 3: publishing and
-- scoring that stay flat as uploads accrue). A run used to copy every reused submission's
-- metrics, quarter losses and PIT rows from the run before, and every tested pair's
-- Diebold-Mariano rows (068), so each upload's run cost O(k) rows and O(k^2) tests for k
-- submissions on the board. Now:
-- - results are stored once where they are computed: eval.metric_rows,
--   eval.quarter_loss_rows, eval.pit_rows (the tables eval.metrics, eval.quarter_losses
--   and eval.pit, renamed; their score_run_id is the run that computed them);
-- - eval.run_results (score_run_id, submission_id, from_run) says which run's rows are
--   each submission's results in each run (from_run = the run itself when computed there);
-- - eval.metrics, eval.quarter_losses and eval.pit are views that show every run's rows
--   as before (score_run_id the run that reads them);
-- - Diebold-Mariano rows are stored once per pair and common sample in eval.dm_test_rows
--   (the table eval.dm_tests, renamed), and eval.run_dm_sources (score_run_id, from_run)
--   lists the runs on the same common sample whose tests a run includes; the view
--   eval.dm_tests shows, per run, the tests of its sources between two of its members.
-- Rows stored before keep their run (each run its own copy: run_results and
-- run_dm_sources point every run at itself).
ALTER TABLE eval.metrics RENAME TO metric_rows;
ALTER TABLE eval.quarter_losses RENAME TO quarter_loss_rows;
ALTER TABLE eval.pit RENAME TO pit_rows;
ALTER TABLE eval.dm_tests RENAME TO dm_test_rows;

CREATE TABLE eval.run_results (
    score_run_id   INTEGER NOT NULL,
    submission_id  INTEGER NOT NULL,
    from_run       INTEGER NOT NULL
);

CREATE TABLE eval.run_dm_sources (
    score_run_id   INTEGER NOT NULL,
    from_run       INTEGER NOT NULL
);

INSERT INTO eval.run_results
SELECT score_run_id, submission_id, score_run_id
FROM (
    SELECT score_run_id, submission_id FROM eval.metric_rows
    UNION
    SELECT score_run_id, submission_id FROM eval.quarter_loss_rows
    UNION
    SELECT score_run_id, submission_id FROM eval.pit_rows
    UNION
    SELECT score_run_id, unnest(submission_ids) FROM eval.score_runs
);

INSERT INTO eval.run_dm_sources
SELECT score_run_id, score_run_id FROM eval.score_runs
UNION
SELECT DISTINCT score_run_id, score_run_id FROM eval.dm_test_rows;

CREATE VIEW eval.metrics AS
SELECT r.score_run_id, m.submission_id, m.level, m.horizon, m.item_id, m.statement, m.n,
       m.r2, m.mse, m.mae, m.nll, m.crps, m.z2, m.cov50, m.cov80, m.cov90, m.cov95,
       m.sum_y, m.sum_y2, m.sse, m.sae, m.n_density
FROM eval.run_results r
JOIN eval.metric_rows m ON m.score_run_id = r.from_run AND m.submission_id = r.submission_id;

CREATE VIEW eval.quarter_losses AS
SELECT r.score_run_id, q.submission_id, q.horizon, q.origin_q, q.n, q.sum_sq, q.sum_abs
FROM eval.run_results r
JOIN eval.quarter_loss_rows q ON q.score_run_id = r.from_run AND q.submission_id = r.submission_id;

CREATE VIEW eval.pit AS
SELECT r.score_run_id, p.submission_id, p.bin, p.n, p.share
FROM eval.run_results r
JOIN eval.pit_rows p ON p.score_run_id = r.from_run AND p.submission_id = r.submission_id;

CREATE VIEW eval.dm_tests AS
SELECT s.score_run_id, d.submission_a, d.submission_b, d.loss, d.horizon, d.n_quarters,
       d.bandwidth, d.mean_diff, d.dm_stat, d.p_value
FROM eval.run_dm_sources s
JOIN eval.dm_test_rows d ON d.score_run_id = s.from_run
SEMI JOIN eval.run_results a
  ON a.score_run_id = s.score_run_id AND a.submission_id = d.submission_a
SEMI JOIN eval.run_results b
  ON b.score_run_id = s.score_run_id AND b.submission_id = d.submission_b;
