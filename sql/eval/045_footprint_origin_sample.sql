-- A seeded, calendar-balanced sample of getvariable('n_origins') origins of split
-- getvariable('split') (panel.origins) into eval.footprint_origins for footprint
-- getvariable('footprint_id'): origins are ranked within their calendar quarter by a
-- seeded hash and taken round by round across quarters, so every quarter contributes
-- about equally (the LLM footprint).
INSERT INTO eval.footprint_origins
WITH ranked AS (
    SELECT firm_id, origin_q,
           hash(firm_id, origin_q, getvariable('seed')) AS h,
           row_number() OVER (
               PARTITION BY origin_q
               ORDER BY hash(firm_id, origin_q, getvariable('seed')), firm_id) AS round
    FROM panel.origins
    WHERE split = getvariable('split')
)
SELECT getvariable('footprint_id'), firm_id, origin_q
FROM ranked
ORDER BY round, h, firm_id, origin_q
LIMIT getvariable('n_origins');
