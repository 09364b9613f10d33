-- The common sample of a score run with several submissions (temp table common_cells)
-- from fp_truth and the run's submissions (temp table run_subs): the footprint cells that EVERY submission
-- predicts finitely (all mixture components finite, sigma finite and positive where
-- given). Also run_valid (submission, cell) for each submission's coverage. Rows are
-- restricted to the footprint (semi join) before mixtures are grouped by cell, so a
-- small footprint groups only its own cells.
CREATE OR REPLACE TEMP TABLE run_valid AS
WITH single AS (
    SELECT v.submission_id, v.cell
    FROM (
        SELECT f.submission_id, eval.cell_key(f.firm_id, f.origin_q, f.item_id, f.horizon) AS cell
        FROM eval.forecasts f
        JOIN run_subs r ON r.submission_id = f.submission_id AND r.n_components = 1
        WHERE isfinite(f.mu) AND (f.sigma IS NULL OR (isfinite(f.sigma) AND f.sigma > 0))
    ) v
    SEMI JOIN fp_truth t ON t.cell = v.cell
),
mixture AS (
    SELECT v.submission_id, v.cell
    FROM (
        SELECT f.submission_id, eval.cell_key(f.firm_id, f.origin_q, f.item_id, f.horizon) AS cell,
               isfinite(f.mu) AND (f.sigma IS NULL OR (isfinite(f.sigma) AND f.sigma > 0)) AS ok
        FROM eval.forecasts f
        JOIN run_subs r ON r.submission_id = f.submission_id AND r.n_components > 1
    ) v
    SEMI JOIN fp_truth t ON t.cell = v.cell
    GROUP BY v.submission_id, v.cell
    HAVING bool_and(v.ok)
)
SELECT * FROM single
UNION ALL
SELECT * FROM mixture;
