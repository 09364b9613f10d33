-- eval.metrics shows every column of eval.metric_rows (issue 33: one definition per
-- metric). A metric added to contracts/metrics.py needs only its column on the stored
-- rows (a migration `ALTER TABLE eval.metric_rows ADD COLUMN <name> DOUBLE`, and the same
-- on rounds.metrics); the view picks it up, as DuckDB binds a view's star when it is read.
-- The columns and their order are those of V0110's view.
DROP VIEW eval.metrics;
CREATE VIEW eval.metrics AS
SELECT r.score_run_id, m.* EXCLUDE (score_run_id)
FROM eval.run_results r
JOIN eval.metric_rows m ON m.score_run_id = r.from_run AND m.submission_id = r.submission_id;
