-- The cell grid of split getvariable('split') for build getvariable('grid_build_id')
-- (eval.grids, eval.grid_rows, eval.grid_cells; V0112): the split's eligible origins
-- (panel.origins) numbered in (origin, firm) order, and the truth of its scoreable cells
-- (finite actual and baseline, as 040 and 050 score them) at its position. The rows of
-- one origin quarter form a block (first row b, k rows); a cell of row `row` and slot
-- sh = item slot * 20 + horizon - 1 (the item slot: the target's rank in item_id order)
-- lies at b * getvariable('grid_slots') + sh * k + (row - b): origin-major, then slot,
-- then firm, so the cells of one (item, horizon, origin quarter) group are contiguous
-- and a run's aggregates by group (067, 069) read them as runs of equal keys, at about
-- half the cost of keys scattered over the relation. getvariable('grid_fingerprint') is the truth's
-- fingerprint the grid was made from (proforma.app.scoring.grid), so a grid is remade
-- when the truth changes under the same build; getvariable('grid_truth_rows') the
-- truth's stored rows then (grid.truth_rows), the cheap check before a fingerprint.
DELETE FROM eval.grid_cells
WHERE build_id = getvariable('grid_build_id') AND split = getvariable('split');
DELETE FROM eval.grid_rows
WHERE build_id = getvariable('grid_build_id') AND split = getvariable('split');
DELETE FROM eval.grids
WHERE build_id = getvariable('grid_build_id') AND split = getvariable('split');

INSERT INTO eval.grid_rows
SELECT getvariable('grid_build_id'), getvariable('split'),
       CAST(row_number() OVER (ORDER BY origin_q, firm_id) - 1 AS INTEGER), firm_id, origin_q
FROM (SELECT DISTINCT firm_id, origin_q FROM panel.origins WHERE split = getvariable('split'));

INSERT INTO eval.grid_cells
WITH slots AS (
    SELECT item_id, CAST(row_number() OVER (ORDER BY item_id) - 1 AS BIGINT) AS slot
    FROM ref.items
    WHERE is_target
),
blocks AS (
    SELECT row, firm_id, origin_q,
           CAST(min(row) OVER (PARTITION BY origin_q) AS BIGINT) AS b,
           CAST(count(*) OVER (PARTITION BY origin_q) AS BIGINT) AS k
    FROM eval.grid_rows
    WHERE build_id = getvariable('grid_build_id') AND split = getvariable('split')
)
SELECT getvariable('grid_build_id'), getvariable('split'),
       r.b * getvariable('grid_slots') + (s.slot * 20 + t.horizon - 1) * r.k + (r.row - r.b),
       t.actual, t.change
FROM panel.truth t
JOIN blocks r ON r.firm_id = t.firm_id AND r.origin_q = t.origin_q
JOIN slots s ON s.item_id = t.item_id
WHERE t.split = getvariable('split') AND isfinite(t.actual) AND isfinite(t.baseline)
  AND t.horizon BETWEEN 1 AND 20;

INSERT INTO eval.grids
SELECT getvariable('grid_build_id'), getvariable('split'), getvariable('grid_fingerprint'),
       getvariable('grid_truth_rows'),
       (SELECT count(*) FROM eval.grid_rows
        WHERE build_id = getvariable('grid_build_id') AND split = getvariable('split')),
       getvariable('grid_slots'),
       (SELECT count(*) FROM eval.grid_cells
        WHERE build_id = getvariable('grid_build_id') AND split = getvariable('split')),
       now()::TIMESTAMP;
