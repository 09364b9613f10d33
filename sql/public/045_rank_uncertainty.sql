-- Public rank uncertainty of each footprint's board (the current runs of public_runs,
-- 005; docs/scoring.md, "The board and its rank uncertainty"): how it was computed (seed,
-- replications, block size, levels), each member's headline-metric intervals and, per
-- track, its probability of ranking first, its model-confidence-set p-value and whether
-- it is in the set, among the members that are not uploads (eval.rank_sets scope
-- 'public'). An upload's intervals, probabilities and membership are not published: each
-- would be one more channel to its cells' truth (docs/service.md, "The truth: threat
-- model"; app/read/board_disclosure.py); nothing is published for a board under
-- getvariable('public_min_cells') cells.
CREATE TABLE pub.uncertainty_runs AS
SELECT u.*
FROM eval.uncertainty_runs u
JOIN public_runs p USING (score_run_id)
WHERE p.is_current
ORDER BY u.score_run_id;

CREATE OR REPLACE TEMP TABLE public_uncertainty_rows AS
SELECT m.score_run_id, m.submission_id, m.n, m.mse, m.r2, s.source = 'upload' AS is_upload
FROM eval.metrics m
JOIN public_runs p USING (score_run_id)
JOIN eval.submissions s USING (submission_id)
WHERE p.is_current AND m.level = 'global' AND m.n >= getvariable('public_min_cells');

CREATE TABLE pub.metric_intervals AS
SELECT i.score_run_id, i.submission_id, i.metric, i.estimate, i.lo, i.hi
FROM eval.metric_intervals i
JOIN public_uncertainty_rows r USING (score_run_id, submission_id)
WHERE NOT r.is_upload
ORDER BY i.score_run_id, i.submission_id, i.metric;

CREATE TABLE pub.rank_sets AS
SELECT k.score_run_id, k.track, k.submission_id, k.p_best, k.mcs_p, k.in_mcs
FROM eval.rank_sets k
JOIN public_uncertainty_rows r USING (score_run_id, submission_id)
WHERE k.scope = 'public' AND NOT r.is_upload
ORDER BY k.score_run_id, k.track, k.submission_id;
