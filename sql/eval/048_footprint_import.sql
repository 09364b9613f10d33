-- Frozen cells of an imported sample mask: the temp table mask_cells (gvkey, origin_q,
-- item_id, horizon: a published mask in keys form, or its bitmap realigned onto rows,
-- app/scoring/footprint_import.py) into eval.footprint_cells for footprint
-- getvariable('footprint_id'), each cell with its gvkey (the key that survives a rebuild).
-- Only cells at test origins of this build are kept: a key of another vintage names no
-- origin here.
INSERT INTO eval.footprint_cells (footprint_id, firm_id, origin_q, item_id, horizon, gvkey)
SELECT getvariable('footprint_id'), f.firm_id, m.origin_q, m.item_id, m.horizon, m.gvkey
FROM mask_cells AS m
JOIN panel.firms AS f USING (gvkey)
JOIN panel.origins AS o ON o.firm_id = f.firm_id AND o.origin_q = m.origin_q AND o.split = 'test';
