-- The common sample of a score run with several submissions (temp table common_cells)
-- from fp_truth and the run's submissions (temp table run_subs): the footprint cells that EVERY submission
-- predicts finitely (all mixture components finite, sigma finite and positive where
-- given). Also run_valid (submission, cell) for each submission's coverage.
CREATE OR REPLACE TEMP TABLE run_valid AS
WITH single AS (
    SELECT f.submission_id, eval.cell_key(f.firm_id, f.origin_q, f.item_id, f.horizon) AS cell
    FROM eval.forecasts f
    JOIN run_subs r ON r.submission_id = f.submission_id AND r.n_components = 1
    WHERE isfinite(f.mu) AND (f.sigma IS NULL OR (isfinite(f.sigma) AND f.sigma > 0))
),
mixture AS (
    SELECT f.submission_id, eval.cell_key(f.firm_id, f.origin_q, f.item_id, f.horizon) AS cell
    FROM eval.forecasts f
    JOIN run_subs r ON r.submission_id = f.submission_id AND r.n_components > 1
    GROUP BY ALL
    HAVING bool_and(isfinite(f.mu) AND (f.sigma IS NULL OR (isfinite(f.sigma) AND f.sigma > 0)))
)
SELECT v.submission_id, v.cell
FROM (SELECT * FROM single UNION ALL SELECT * FROM mixture) v
SEMI JOIN fp_truth t ON t.cell = v.cell;
