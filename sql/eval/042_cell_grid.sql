-- The cell grid of split getvariable('split') for build getvariable('grid_build_id')
-- (eval.grids, eval.grid_rows, eval.grid_cells; V0112): the split's eligible origins
-- (panel.origins) numbered in (firm, origin) order, and the truth of its scoreable cells
-- (finite actual and baseline, as 040 and 050 score them) at position
-- row * getvariable('grid_slots') + item slot * 20 + horizon - 1, the item slot being the
-- target's rank in item_id order. getvariable('grid_fingerprint') is the truth's
-- fingerprint the grid was made from (proforma.app.scoring.grid), so a grid is remade
-- when the truth changes under the same build.
DELETE FROM eval.grid_cells
WHERE build_id = getvariable('grid_build_id') AND split = getvariable('split');
DELETE FROM eval.grid_rows
WHERE build_id = getvariable('grid_build_id') AND split = getvariable('split');
DELETE FROM eval.grids
WHERE build_id = getvariable('grid_build_id') AND split = getvariable('split');

INSERT INTO eval.grid_rows
SELECT getvariable('grid_build_id'), getvariable('split'),
       CAST(row_number() OVER (ORDER BY firm_id, origin_q) - 1 AS INTEGER), firm_id, origin_q
FROM (SELECT DISTINCT firm_id, origin_q FROM panel.origins WHERE split = getvariable('split'));

INSERT INTO eval.grid_cells
WITH slots AS (
    SELECT item_id, CAST(row_number() OVER (ORDER BY item_id) - 1 AS BIGINT) AS slot
    FROM ref.items
    WHERE is_target
)
SELECT getvariable('grid_build_id'), getvariable('split'),
       r.row * getvariable('grid_slots') + s.slot * 20 + t.horizon - 1, t.actual, t.change
FROM panel.truth t
JOIN eval.grid_rows r
  ON r.build_id = getvariable('grid_build_id') AND r.split = getvariable('split')
 AND r.firm_id = t.firm_id AND r.origin_q = t.origin_q
JOIN slots s ON s.item_id = t.item_id
WHERE t.split = getvariable('split') AND isfinite(t.actual) AND isfinite(t.baseline)
  AND t.horizon BETWEEN 1 AND 20;

INSERT INTO eval.grids
SELECT getvariable('grid_build_id'), getvariable('split'), getvariable('grid_fingerprint'),
       (SELECT count(*) FROM panel.truth),
       (SELECT count(*) FROM eval.grid_rows
        WHERE build_id = getvariable('grid_build_id') AND split = getvariable('split')),
       getvariable('grid_slots'),
       (SELECT count(*) FROM eval.grid_cells
        WHERE build_id = getvariable('grid_build_id') AND split = getvariable('split')),
       now()::TIMESTAMP;
