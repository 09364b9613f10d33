-- Chronos-2's origin plan: the test origins (panel.origins, split 'test') that
-- `proforma run chronos` forecasts, in (origin_q, firm_id) order. With
-- getvariable('footprint_id') > 0, only the origins of that origin-sample footprint
-- (eval.footprint_origins, e.g. the LLM sample), matched by gvkey through panel.firms so
-- a sample drawn on an earlier build of the same panel still applies.
SELECT o.firm_id, o.origin_q
FROM panel.origins AS o
WHERE o.split = 'test'
  AND (getvariable('footprint_id') <= 0
       OR EXISTS (
           SELECT 1
           FROM eval.footprint_origins AS s
           JOIN panel.firms AS f ON f.gvkey = s.gvkey
           WHERE s.footprint_id = getvariable('footprint_id')
             AND f.firm_id = o.firm_id AND s.origin_q = o.origin_q))
ORDER BY o.origin_q, o.firm_id
