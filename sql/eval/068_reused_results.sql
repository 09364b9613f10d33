-- Results copied into score run getvariable('score_run_id') for the submissions in the
-- temp table reuse (submission_id, from_run): their eval.metrics, eval.quarter_losses
-- and eval.pit rows of from_run, an earlier run on the same common sample under the same
-- scoring context (same cells, same stored cell scores, so the same numbers), and the
-- Diebold-Mariano tests between two reused submissions from the latest of the runs in
-- the temp table same_sample_runs (score_run_id) that tested them.
INSERT INTO eval.metrics BY NAME
SELECT m.* REPLACE (getvariable('score_run_id') AS score_run_id)
FROM eval.metrics m
JOIN reuse r ON r.submission_id = m.submission_id AND r.from_run = m.score_run_id;

INSERT INTO eval.quarter_losses BY NAME
SELECT q.* REPLACE (getvariable('score_run_id') AS score_run_id)
FROM eval.quarter_losses q
JOIN reuse r ON r.submission_id = q.submission_id AND r.from_run = q.score_run_id;

INSERT INTO eval.pit BY NAME
SELECT p.* REPLACE (getvariable('score_run_id') AS score_run_id)
FROM eval.pit p
JOIN reuse r ON r.submission_id = p.submission_id AND r.from_run = p.score_run_id;

INSERT INTO eval.dm_tests BY NAME
WITH tested AS (
    -- One source run per unordered pair (a run tests each pair once, in either order).
    SELECT least(d.submission_a, d.submission_b) AS lo,
           greatest(d.submission_a, d.submission_b) AS hi,
           max(d.score_run_id) AS from_run
    FROM eval.dm_tests d
    SEMI JOIN same_sample_runs s ON s.score_run_id = d.score_run_id
    WHERE d.submission_a IN (SELECT submission_id FROM reuse)
      AND d.submission_b IN (SELECT submission_id FROM reuse)
    GROUP BY 1, 2
)
SELECT d.* REPLACE (getvariable('score_run_id') AS score_run_id)
FROM eval.dm_tests d
JOIN tested t ON t.from_run = d.score_run_id
             AND t.lo = least(d.submission_a, d.submission_b)
             AND t.hi = greatest(d.submission_a, d.submission_b);
