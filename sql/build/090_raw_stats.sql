-- Per-quarter raw statistics: stage.raw_stats from panel.values, stage.fq,
-- stage.lag_pool and panel.item_k, for every item (0..78) and every calendar quarter
-- of the panel. mu_raw(i, q) = mean of asinh(k_i v_q / z_q) over the firms reporting i
-- at q (each deflated by its own quarter's z); sigma_raw(i, q) = sample std (ddof 1) of
-- asinh(k_i r) over the lagged-ratio pool of quarter q. The scale item uses
-- asinh(k_0 z_q) for both (contemporaneous deflators, no self-deflation, no lag pool).
-- Missing mu -> 0; missing or zero sigma -> 1. (Empty when reg_stats is pinned.)
CREATE OR REPLACE TABLE stage.raw_stats AS
WITH quarters AS (
    SELECT range AS q
    FROM range((SELECT min(q) FROM stage.fq), (SELECT max(q) FROM stage.fq) + 1)
),
grid AS (
    SELECT k.item_id, k.k, qs.q::INTEGER AS q
    FROM panel.item_k AS k, quarters AS qs
    WHERE NOT getvariable('reg_stats_pinned')
),
mu AS (
    SELECT v.item_id, v.q, avg(asinh(k.k * v.v / f.z)) AS mu_raw
    FROM panel.values AS v
    JOIN stage.fq AS f USING (firm_id, q)
    JOIN panel.item_k AS k USING (item_id)
    WHERE v.item_id > 0 AND NOT getvariable('reg_stats_pinned')
    GROUP BY v.item_id, v.q
),
sigma AS (
    SELECT p.item_id, p.q, stddev_samp(asinh(k.k * p.r)) AS sigma_raw
    FROM stage.lag_pool AS p
    JOIN panel.item_k AS k USING (item_id)
    WHERE NOT getvariable('reg_stats_pinned')
    GROUP BY p.item_id, p.q
),
scale AS (
    SELECT f.q, avg(asinh(k.k * f.z)) AS mu_raw, stddev_samp(asinh(k.k * f.z)) AS sigma_raw
    FROM stage.fq AS f, panel.item_k AS k
    WHERE k.item_id = 0 AND NOT getvariable('reg_stats_pinned')
    GROUP BY f.q
)
SELECT g.item_id, g.q,
       coalesce(CASE WHEN g.item_id = 0 THEN s.mu_raw ELSE m.mu_raw END, 0) AS mu_raw,
       coalesce(nullif(CASE WHEN g.item_id = 0 THEN s.sigma_raw ELSE sg.sigma_raw END, 0), 1)
           AS sigma_raw
FROM grid AS g
LEFT JOIN mu AS m ON m.item_id = g.item_id AND m.q = g.q
LEFT JOIN sigma AS sg ON sg.item_id = g.item_id AND sg.q = g.q
LEFT JOIN scale AS s ON g.item_id = 0 AND s.q = g.q
ORDER BY g.item_id, g.q;
