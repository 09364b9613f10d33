-- Item availability by split on scale-valid firm-quarters (syn_panel, syn_fq from 010)
-- next to the published targets of reference/items.csv (ref.items pct_train/val/test).
WITH n AS (SELECT split, count(*) AS fq FROM syn_fq GROUP BY split),
have AS (SELECT split, item_id, count(*) AS k FROM syn_panel GROUP BY split, item_id),
grid AS (
    SELECT i.item_id, i.item, i.statement, s.split,
        CASE s.split WHEN 'train' THEN i.pct_train WHEN 'val' THEN i.pct_val ELSE i.pct_test END AS target
    FROM ref.items AS i
    CROSS JOIN (VALUES ('train'), ('val'), ('test')) AS s(split)
    WHERE i.item_id > 0
)
SELECT g.item_id, g.item, g.statement, g.split,
    round(100.0 * coalesce(h.k, 0) / n.fq, 1) AS pct,
    g.target,
    round(100.0 * coalesce(h.k, 0) / n.fq - g.target, 1) AS diff
FROM grid AS g
JOIN n USING (split)
LEFT JOIN have AS h USING (split, item_id)
ORDER BY g.item_id, CASE g.split WHEN 'train' THEN 0 WHEN 'val' THEN 1 ELSE 2 END;
