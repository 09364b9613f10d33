-- Freeze a footprint's cells: the common sample of the chosen submissions
-- (temp table common_cells, from 040 and 050) into eval.footprint_cells for footprint
-- getvariable('footprint_id') (e.g. Full, frozen from the model suite).
INSERT INTO eval.footprint_cells
SELECT getvariable('footprint_id'), firm_id, origin_q, item_id, horizon
FROM common_cells;
