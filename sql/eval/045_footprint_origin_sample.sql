-- A seeded, calendar-balanced sample of getvariable('n_origins') origins of split
-- getvariable('split') (panel.origins) into eval.footprint_origins for footprint
-- getvariable('footprint_id'): origins are ranked within their calendar quarter by a
-- seeded hash and taken round by round across quarters, so every quarter contributes
-- about equally (the LLM footprint). The hash is of the gvkey, not the build's firm id,
-- so the same seed draws the same firms from any build of the same panel.
INSERT INTO eval.footprint_origins (footprint_id, firm_id, origin_q, gvkey)
WITH ranked AS (
    SELECT o.firm_id, o.origin_q, f.gvkey,
           hash(f.gvkey, o.origin_q, getvariable('seed')) AS h,
           row_number() OVER (
               PARTITION BY o.origin_q
               ORDER BY hash(f.gvkey, o.origin_q, getvariable('seed')), f.gvkey) AS round
    FROM panel.origins o
    JOIN panel.firms f USING (firm_id)
    WHERE o.split = getvariable('split')
)
SELECT getvariable('footprint_id'), firm_id, origin_q, gvkey
FROM ranked
ORDER BY round, h, gvkey, origin_q
LIMIT getvariable('n_origins');
