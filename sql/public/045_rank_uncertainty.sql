-- Public rank uncertainty of each footprint's board (the current runs of public_runs,
-- 005; docs/scoring.md, "The board and its rank uncertainty"): how it was computed (seed,
-- replications, block size, levels), each member's headline-metric intervals and, per
-- track, its probability of ranking first, its model-confidence-set p-value and whether
-- it is in the set. An upload's numbers are derived from the hidden truth, so they are
-- coarsened as its metrics are (the publisher's pf_coarsen; each bound to its metric's
-- quantum, the slot metric_interval_quantum, under labels of their own; probabilities to
-- 0.05) and withheld, like every aggregate, on a board under
-- getvariable('public_min_cells') cells; set membership is published as it is (one bit a
-- board: app/read/rank_disclosure.py says why).
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
WITH i AS (
    SELECT i.*, r.n, r.mse, r.r2, r.is_upload,
           i.submission_id || '/global////' || i.metric AS label
    FROM eval.metric_intervals i
    JOIN public_uncertainty_rows r USING (score_run_id, submission_id)
)
SELECT score_run_id, submission_id, metric,
       CASE WHEN is_upload THEN pf_coarsen(estimate, {{ metric_interval_quantum }}, label)
            ELSE estimate END AS estimate,
       CASE WHEN is_upload THEN pf_coarsen(lo, {{ metric_interval_quantum }}, label || '/ci_lo')
            ELSE lo END AS lo,
       CASE WHEN is_upload THEN pf_coarsen(hi, {{ metric_interval_quantum }}, label || '/ci_hi')
            ELSE hi END AS hi
FROM i
ORDER BY score_run_id, submission_id, metric;

CREATE TABLE pub.rank_sets AS
SELECT k.score_run_id, k.track, k.submission_id,
       CASE WHEN r.is_upload
            THEN least(1.0, greatest(0.0, round(pf_coarsen(k.p_best, 0.05,
                       k.submission_id || '/global////p_best'), 2)))
            ELSE k.p_best END AS p_best,
       CASE WHEN r.is_upload
            THEN least(1.0, greatest(0.0, round(pf_coarsen(k.mcs_p, 0.05,
                       k.submission_id || '/global////mcs_p'), 2)))
            ELSE k.mcs_p END AS mcs_p,
       k.in_mcs
FROM eval.rank_sets k
JOIN public_uncertainty_rows r USING (score_run_id, submission_id)
ORDER BY k.score_run_id, k.track, k.submission_id;
