-- Joint availability of the 78-item vector over scale-valid firm-quarters (syn_fq,
-- syn_panel from 010), full sample and test split, as in the paper's Table "Joint
-- availability": firm-quarters, firms, matrix density, items per firm-quarter (mean,
-- median, p10, p90, shares with >= 40, >= 70 and all 78) and cell density by statement.
WITH per_fq AS (
    SELECT f.gvkey, f.q, f.split,
        count(p.item_id) AS n_items,
        count(p.item_id) FILTER (WHERE p.item_id IN (SELECT item_id FROM ref.items WHERE statement = 'BS')) AS n_bs,
        count(p.item_id) FILTER (WHERE p.item_id IN (SELECT item_id FROM ref.items WHERE statement = 'IS')) AS n_is,
        count(p.item_id) FILTER (WHERE p.item_id IN (SELECT item_id FROM ref.items WHERE statement = 'CF')) AS n_cf,
        count(p.item_id) FILTER (WHERE p.item_id IN (SELECT item_id FROM ref.items WHERE statement = 'Der')) AS n_der
    FROM syn_fq AS f
    LEFT JOIN syn_panel AS p USING (gvkey, q)
    GROUP BY f.gvkey, f.q, f.split
),
scoped AS (
    SELECT 'full' AS scope, * FROM per_fq
    UNION ALL SELECT 'test' AS scope, * FROM per_fq WHERE split = 'test'
),
sizes AS (
    SELECT statement, count(*) AS k FROM ref.items WHERE item_id > 0 GROUP BY statement
)
SELECT scope,
    count(*) AS firm_quarters,
    count(DISTINCT gvkey) AS firms,
    round(100.0 * sum(n_items) / (78.0 * count(*)), 1) AS density_pct,
    round(avg(n_items), 1) AS items_mean,
    quantile_disc(n_items, 0.5) AS items_median,
    quantile_disc(n_items, 0.1) AS items_p10,
    quantile_disc(n_items, 0.9) AS items_p90,
    round(100.0 * avg(CAST(n_items >= 40 AS DOUBLE)), 1) AS ge40_pct,
    round(100.0 * avg(CAST(n_items >= 70 AS DOUBLE)), 1) AS ge70_pct,
    round(100.0 * avg(CAST(n_items = 78 AS DOUBLE)), 2) AS complete_pct,
    round(100.0 * sum(n_bs) / (count(*) * (SELECT k FROM sizes WHERE statement = 'BS')), 1) AS bs_pct,
    round(100.0 * sum(n_is) / (count(*) * (SELECT k FROM sizes WHERE statement = 'IS')), 1) AS is_pct,
    round(100.0 * sum(n_cf) / (count(*) * (SELECT k FROM sizes WHERE statement = 'CF')), 1) AS cf_pct,
    round(100.0 * sum(n_der) / (count(*) * (SELECT k FROM sizes WHERE statement = 'Der')), 1) AS der_pct
FROM scoped
GROUP BY scope
ORDER BY scope;
