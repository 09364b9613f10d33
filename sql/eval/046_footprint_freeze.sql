-- Freeze a footprint's cells: the common sample of the chosen submissions
-- (temp table common_cells, from 040 and 058) into eval.footprint_cells for footprint
-- getvariable('footprint_id') (e.g. Full, frozen from the model suite), each cell with
-- its firm's gvkey (the key that survives a rebuild; 040 maps it back).
INSERT INTO eval.footprint_cells (footprint_id, firm_id, origin_q, item_id, horizon, gvkey)
SELECT getvariable('footprint_id'), c.firm_id, c.origin_q, c.item_id, c.horizon, f.gvkey
FROM common_cells c
JOIN panel.firms f USING (firm_id);
