-- Metrics of round getvariable('round_id') for the submissions of the temp table
-- round_subs(submission_id, shapes), over their common sample: the resolved cells (finite
-- actual and baseline) that every one of them that shapes it scored (rounds.cell_scores),
-- each over its own cells of it. Per submission,
-- globally (horizon NULL) and per horizon, the sums and metrics of sql/eval/065 and 070,
-- as contracts/metrics.py defines them (slots metric_cell_sums and metric_finish) over
-- each cell's inputs as sql/rounds/040-042 stored them: y = actual - baseline (in double),
-- r, r_abs (a quantile forecast's median residual, r otherwise), the density terms and in{p}
-- (slot metric_coverage_columns: the PIT u in the central p interval, or a grid's level
-- pair around the actual). R2 = 1 - SSE / (sum y^2 - (sum y)^2 / n + 1e-12), NaN when the
-- truth has no variance (<= 1e-15); MAE, MSE; each density mean (NLL, CRPS, z2 = mean
-- z^2) over the cells with that term; coverage at p: the share of cells with a PIT u.
WITH shaping AS (
    -- only entries that are not uploads take cells out of the common sample: one upload
    -- that leaves out one cell must not move the baselines' exact numbers by that cell's
    -- loss (docs/service.md, "The truth: threat model"); an upload is scored on its own
    -- cells of the sample
    SELECT c.gvkey, c.item_id, c.horizon, count(*) AS k
    FROM rounds.cell_scores AS c
    JOIN round_subs AS s USING (submission_id)
    WHERE s.shapes
    GROUP BY c.gvkey, c.item_id, c.horizon
),
common AS (
    SELECT t.gvkey, t.item_id, t.horizon
    FROM rounds.truth AS t
    LEFT JOIN shaping AS s USING (gvkey, item_id, horizon)
    WHERE t.round_id = getvariable('round_id') AND isfinite(t.actual) AND isfinite(t.baseline)
      AND coalesce(s.k, 0) = (SELECT count(*) FROM round_subs WHERE shapes)
),
cells AS (
    SELECT c.submission_id, c.horizon, t.actual::DOUBLE - t.baseline::DOUBLE AS y,
           c.r, c.r_abs, c.nll, c.crps, c.z, c.u,
           {{ metric_coverage_columns }}
    FROM rounds.cell_scores AS c
    JOIN round_subs USING (submission_id)
    JOIN common AS m USING (gvkey, item_id, horizon)
    JOIN rounds.truth AS t
      ON t.round_id = getvariable('round_id') AND t.gvkey = c.gvkey
     AND t.item_id = c.item_id AND t.horizon = c.horizon
),
rolled AS (
    SELECT submission_id, horizon, GROUPING(horizon) AS g,
           {{ metric_cell_sums }}
    FROM cells
    GROUP BY GROUPING SETS ((submission_id), (submission_id, horizon))
)
SELECT submission_id, CASE WHEN g = 1 THEN NULL ELSE horizon END::TINYINT AS horizon, n,
       {{ metric_finish }},
       sum_y, sum_y2, sse, sae
FROM rolled
ORDER BY submission_id, horizon NULLS FIRST;
