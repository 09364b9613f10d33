-- present_in_q0: stage.origin_q0 from panel.origins, panel.splits and stage.fq. One row
-- per eligible origin with its deflator, industry, its split's purge quarter (last_q:
-- the last target quarter it may keep) and the 78 item values reported at the origin
-- (vals0, item_id order). An item is present_in_q0 at an origin when vals0[item_id] is
-- not NULL; only such items get targets (truth cells, future tuples, tabular targets).
CREATE OR REPLACE TABLE stage.origin_q0 AS
SELECT o.firm_id, o.origin_q, o.split, s.last_q, o.z, o.ff48, f.vals AS vals0
FROM panel.origins AS o
JOIN panel.splits AS s USING (split)
JOIN stage.fq AS f ON f.firm_id = o.firm_id AND f.q = o.origin_q
ORDER BY o.origin_q, o.firm_id;
