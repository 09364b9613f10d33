-- Results referenced by score run getvariable('score_run_id') for the submissions in the
-- temp table reuse (submission_id, from_run), each already scored in from_run, an
-- earlier run on the same common sample under the same scoring context (same cells,
-- same stored cell scores, so the same numbers): the run's eval.run_results rows point
-- at the run whose rows hold them (from_run's own source), so nothing is copied and a
-- run costs the same whatever the number of submissions before it. Its Diebold-Mariano
-- sources (eval.run_dm_sources) are the latest of the runs in the temp table
-- same_sample_runs (score_run_id) with its sources, and the run itself: the view
-- eval.dm_tests shows their tests between two of the run's submissions.
INSERT INTO eval.run_results
SELECT getvariable('score_run_id'), u.submission_id, r.from_run
FROM reuse u
JOIN eval.run_results r ON r.score_run_id = u.from_run AND r.submission_id = u.submission_id;

INSERT INTO eval.run_dm_sources
SELECT DISTINCT getvariable('score_run_id'), from_run
FROM eval.run_dm_sources
WHERE score_run_id = (SELECT max(score_run_id) FROM same_sample_runs);
