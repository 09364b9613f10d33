-- The common sample of a score run with ONE submission (temp tables common_cells and
-- run_valid, exactly as 050 makes them, without 050's per-cell count over all
-- submissions; used for speed): the footprint cells (fp_truth) that the submission in
-- run_subs predicts finitely (all mixture components finite, sigma finite and > 0).
CREATE OR REPLACE TEMP TABLE common_cells AS
WITH single AS (
    SELECT eval.cell_key(f.firm_id, f.origin_q, f.item_id, f.horizon) AS cell
    FROM eval.forecasts f
    JOIN run_subs r ON r.submission_id = f.submission_id AND r.n_components = 1
    WHERE isfinite(f.mu) AND (f.sigma IS NULL OR (isfinite(f.sigma) AND f.sigma > 0))
),
mixture AS (
    SELECT eval.cell_key(f.firm_id, f.origin_q, f.item_id, f.horizon) AS cell
    FROM eval.forecasts f
    JOIN run_subs r ON r.submission_id = f.submission_id AND r.n_components > 1
    GROUP BY ALL
    HAVING bool_and(isfinite(f.mu) AND (f.sigma IS NULL OR (isfinite(f.sigma) AND f.sigma > 0)))
)
SELECT t.*
FROM fp_truth t
SEMI JOIN (SELECT cell FROM single UNION ALL SELECT cell FROM mixture) v ON v.cell = t.cell;

CREATE OR REPLACE TEMP TABLE run_valid AS
SELECT r.submission_id, c.cell
FROM common_cells c, run_subs r;
