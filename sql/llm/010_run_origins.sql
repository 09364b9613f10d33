-- The origins of an LLM run (docs/llm.md "Running"), from footprint
-- getvariable('footprint_id')'s frozen origins (eval.footprint_origins; a gvkey is mapped
-- to this build's firm id through panel.firms, a row frozen without one keeps its firm
-- id), panel.origins and ref.ff48: in the sampler's order (firms by the seeded hash of
-- the gvkey with getvariable('seed'), then quarter), the first getvariable('max_origins')
-- of them (all when unset), each with the plain-English name of its Fama-French 48
-- industry ('Unknown' for bucket 49) and whether it is in the decoding-noise subset: a
-- seeded simple random sample of getvariable('noise_origins') of the run's origins.
WITH frozen AS (
    SELECT CASE WHEN o.gvkey IS NULL THEN o.firm_id ELSE k.firm_id END AS firm_id,
           o.origin_q
    FROM eval.footprint_origins AS o
    LEFT JOIN panel.firms AS k ON k.gvkey = o.gvkey
    WHERE o.footprint_id = getvariable('footprint_id')
),
ordered AS (
    SELECT f.firm_id, f.origin_q, p.gvkey, o.ff48,
           row_number() OVER (ORDER BY hash(p.gvkey, getvariable('seed')), p.gvkey,
                                       f.origin_q) AS run_order
    FROM frozen AS f
    JOIN panel.origins AS o ON o.firm_id = f.firm_id AND o.origin_q = f.origin_q
    JOIN panel.firms AS p ON p.firm_id = f.firm_id
),
selected AS (
    SELECT *,
           row_number() OVER (ORDER BY hash(gvkey, origin_q, getvariable('seed'), 'noise'),
                                       gvkey, origin_q) AS noise_rank
    FROM ordered
    WHERE getvariable('max_origins') IS NULL OR run_order <= getvariable('max_origins')
)
SELECT s.firm_id::INTEGER AS firm_id, s.origin_q::INTEGER AS origin_q, s.gvkey,
       coalesce((SELECT any_value(r.label) FROM ref.ff48 AS r WHERE r.ff48 = s.ff48),
                'Unknown') AS industry,
       s.noise_rank <= getvariable('noise_origins') AS in_noise_subset,
       s.run_order
FROM selected AS s
ORDER BY s.run_order;
