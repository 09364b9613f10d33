-- Problems of a quantile submission's integer-keyed rows in eval.forecasts
-- (getvariable('submission_id'); its grid has getvariable('k_levels') levels and
-- component k holds level k + 1): rows whose quantile_level was missing or outside
-- (0, 1) (stored with component NULL), cells that lack a level of the grid (every cell
-- must carry the same grid), and cells whose values decrease as the level rises
-- (compared where both values are finite; a cell with a non-finite value is left out of
-- scoring with a warning). One row: each problem's count (rows for levels, cells
-- otherwise) and its first 3 cells (packed cell keys, in cell order).
WITH keyed AS (
    SELECT eval.cell_key(firm_id, origin_q, item_id, horizon) AS cell, component, mu
    FROM eval.forecasts
    WHERE submission_id = getvariable('submission_id')
      AND firm_id IS NOT NULL AND origin_q BETWEEN 0 AND 16383 AND item_id IS NOT NULL
      AND horizon BETWEEN 1 AND 20
),
bad_level AS (
    SELECT count(*) AS n,
           (SELECT min(cell, 3) FROM (SELECT DISTINCT cell FROM keyed WHERE component IS NULL)) AS ex
    FROM keyed WHERE component IS NULL
),
incomplete AS (
    SELECT count(*) AS n, min(cell, 3) AS ex
    -- (a cell with a bad level is reported as such, not again here)
    FROM (SELECT cell FROM keyed
          GROUP BY cell
          HAVING count(DISTINCT component) <> getvariable('k_levels')
             AND count(component) = count(*))
),
decreasing AS (
    SELECT count(*) AS n, min(cell, 3) AS ex
    FROM (
        SELECT DISTINCT cell
        FROM (SELECT cell, mu, lag(mu) OVER (PARTITION BY cell ORDER BY component) AS below
              FROM keyed WHERE component IS NOT NULL)
        WHERE isfinite(mu) AND isfinite(below) AND mu < below
    )
)
SELECT bad_level.n AS bad_level_n, bad_level.ex AS bad_level_ex,
       incomplete.n AS incomplete_n, incomplete.ex AS incomplete_ex,
       decreasing.n AS decreasing_n, decreasing.ex AS decreasing_ex
FROM bad_level, incomplete, decreasing;
