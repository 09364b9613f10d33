-- Per-quarter raw statistics: stage.raw_stats from panel.values, stage.fq,
-- stage.lag_pool and panel.item_k (items 0..78). mu_raw(i, q) = mean of
-- asinh(k_i v_q / z_q) over the firms reporting i at q with a valid deflator (each
-- deflated by its own quarter's z); sigma_raw(i, q) = sample std (ddof 1) of
-- asinh(k_i r) over the lagged-ratio pool of quarter q. The scale item uses
-- asinh(k_0 z_q) for both (contemporaneous deflators, no self-deflation, no lag pool).
-- A single-value or zero std counts as 1, and sigma_raw carries getvariable(
-- 'sigma_raw_floor') (the package's 1e-8, or 0). Which quarters have statistics is the
-- rule stats_quarters (contracts/rules.py): 'calendar', every calendar quarter of the
-- panel, each statistic where its own observations exist and NULL where none do (the
-- paper's "available reported observations only": 100's means skip it); 'both_pools'
-- (the released package), only the quarters where both pools hold values (every quarter
-- with a valid deflator for the scale item). (Empty when reg_stats is pinned.)
CREATE OR REPLACE TABLE stage.raw_stats AS
WITH quarters AS (
    SELECT range AS q
    FROM range((SELECT min(q) FROM stage.fq), (SELECT max(q) FROM stage.fq) + 1)
),
mu AS (
    SELECT v.item_id, v.q, avg(asinh(k.k * v.v / f.z)) AS mu_raw
    FROM panel.values AS v
    JOIN stage.fq AS f USING (firm_id, q)
    JOIN panel.item_k AS k USING (item_id)
    WHERE v.item_id > 0 AND f.z IS NOT NULL AND NOT getvariable('reg_stats_pinned')
    GROUP BY v.item_id, v.q
),
sigma AS (
    -- a pool of one value has no std (NULL), which counts as 1 like a zero std
    SELECT p.item_id, p.q, coalesce(nullif(stddev_samp(asinh(k.k * p.r)), 0), 1) AS sigma_raw
    FROM stage.lag_pool AS p
    JOIN panel.item_k AS k USING (item_id)
    WHERE NOT getvariable('reg_stats_pinned')
    GROUP BY p.item_id, p.q
),
scale AS (
    SELECT 0::SMALLINT AS item_id, f.q, avg(asinh(k.k * f.z)) AS mu_raw,
           coalesce(nullif(stddev_samp(asinh(k.k * f.z)), 0), 1) AS sigma_raw
    FROM stage.fq AS f, panel.item_k AS k
    WHERE k.item_id = 0 AND f.z IS NOT NULL AND NOT getvariable('reg_stats_pinned')
    GROUP BY f.q
),
calendar AS (
    SELECT k.item_id, qs.q::INTEGER AS q,
           CASE WHEN k.item_id = 0 THEN s.mu_raw ELSE m.mu_raw END AS mu_raw,
           CASE WHEN k.item_id = 0 THEN s.sigma_raw ELSE sg.sigma_raw END
               + getvariable('sigma_raw_floor') AS sigma_raw
    FROM panel.item_k AS k
    CROSS JOIN quarters AS qs
    LEFT JOIN mu AS m ON m.item_id = k.item_id AND m.q = qs.q
    LEFT JOIN sigma AS sg ON sg.item_id = k.item_id AND sg.q = qs.q
    LEFT JOIN scale AS s ON k.item_id = 0 AND s.q = qs.q
    WHERE getvariable('stats_quarters') = 'calendar' AND NOT getvariable('reg_stats_pinned')
),
both_pools AS (
    SELECT m.item_id, m.q::INTEGER AS q, m.mu_raw,
           sg.sigma_raw + getvariable('sigma_raw_floor') AS sigma_raw
    FROM mu AS m
    JOIN sigma AS sg USING (item_id, q)
    WHERE getvariable('stats_quarters') = 'both_pools'
    UNION ALL
    SELECT item_id, q::INTEGER, mu_raw, sigma_raw + getvariable('sigma_raw_floor')
    FROM scale
    WHERE getvariable('stats_quarters') = 'both_pools'
)
SELECT * FROM calendar
UNION ALL
SELECT * FROM both_pools
ORDER BY item_id, q;
