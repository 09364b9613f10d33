-- Public footprints and their membership: which origins (gvkey, origin quarter) or
-- cells (plus item and horizon) a footprint holds. Keys only, never values; firm ids
-- become gvkeys through `firm_keys` (panel.firms, or empty before the first build) where
-- the frozen row has none (footprints frozen before V0060).
CREATE TABLE pub.footprints AS
SELECT footprint_id, name, version, kind, predicate, split, description, n_cells, build_id, created_at
FROM eval.footprints
ORDER BY footprint_id;

CREATE TABLE pub.footprint_origins AS
SELECT o.footprint_id, coalesce(o.gvkey, k.gvkey) AS gvkey, qlabel(o.origin_q) AS origin
FROM eval.footprint_origins o
LEFT JOIN firm_keys k USING (firm_id)
WHERE coalesce(o.gvkey, k.gvkey) IS NOT NULL
ORDER BY o.footprint_id, gvkey, o.origin_q;

CREATE TABLE pub.footprint_cells AS
SELECT c.footprint_id, coalesce(c.gvkey, k.gvkey) AS gvkey, qlabel(c.origin_q) AS origin,
       i.item, c.horizon
FROM eval.footprint_cells c
LEFT JOIN firm_keys k USING (firm_id)
JOIN ref.items i USING (item_id)
WHERE coalesce(c.gvkey, k.gvkey) IS NOT NULL
ORDER BY c.footprint_id, gvkey, c.origin_q, c.item_id, c.horizon;
