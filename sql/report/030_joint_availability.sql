-- Joint availability of the 78-item vector (Table A3), from stage.fq (scale-valid
-- firm-quarters with their 78 values in item_id order), panel.splits and ref.items:
-- one row per sample, 'full' (quarters in the split window) and 'test', with the
-- firm-quarters, distinct firms, matrix density (% of item x firm-quarter cells
-- reported), items per firm-quarter (mean, median, p10, p90), the % with >= 40 and
-- >= 70 items, the % complete-case (all 78), and the cell density by statement
-- (BS, IS, CF, Der) in %.
WITH window_q AS (
    SELECT min(first_q) AS lo, max(last_q) AS hi,
           min(first_q) FILTER (WHERE split = 'test') AS test_lo FROM panel.splits
),
statement_of AS (
    SELECT list(statement ORDER BY item_id) AS st FROM ref.items WHERE item_id > 0
),
fq AS (
    SELECT f.firm_id, f.q,
           len(list_filter(f.vals, lambda v: v IS NOT NULL)) AS n_items,
           len(list_filter(list_zip(f.vals, s.st), lambda p: p[1] IS NOT NULL AND p[2] = 'BS')) AS n_bs,
           len(list_filter(list_zip(f.vals, s.st), lambda p: p[1] IS NOT NULL AND p[2] = 'IS')) AS n_is,
           len(list_filter(list_zip(f.vals, s.st), lambda p: p[1] IS NOT NULL AND p[2] = 'CF')) AS n_cf,
           len(list_filter(list_zip(f.vals, s.st), lambda p: p[1] IS NOT NULL AND p[2] = 'Der')) AS n_der
    FROM stage.fq AS f, window_q AS w, statement_of AS s
    WHERE f.q BETWEEN w.lo AND w.hi
),
samples AS (
    SELECT 'full' AS sample, fq.* FROM fq
    UNION ALL
    SELECT 'test', fq.* FROM fq, window_q AS w WHERE fq.q >= w.test_lo
),
sizes AS (
    SELECT count(*) FILTER (WHERE statement = 'BS') AS bs, count(*) FILTER (WHERE statement = 'IS') AS is_,
           count(*) FILTER (WHERE statement = 'CF') AS cf, count(*) FILTER (WHERE statement = 'Der') AS der,
           count(*) AS items
    FROM ref.items WHERE item_id > 0
)
SELECT s.sample,
       count(*) AS firm_quarters,
       count(DISTINCT s.firm_id) AS firms,
       100.0 * sum(s.n_items) / (count(*) * any_value(z.items)) AS density,
       avg(s.n_items) AS items_mean,
       quantile_disc(s.n_items, 0.5) AS items_median,
       quantile_disc(s.n_items, 0.1) AS items_p10,
       quantile_disc(s.n_items, 0.9) AS items_p90,
       100.0 * avg((s.n_items >= 40)::INTEGER) AS pct_ge40,
       100.0 * avg((s.n_items >= 70)::INTEGER) AS pct_ge70,
       100.0 * avg((s.n_items = z.items)::INTEGER) AS pct_complete,
       100.0 * sum(s.n_bs) / (count(*) * any_value(z.bs)) AS density_bs,
       100.0 * sum(s.n_is) / (count(*) * any_value(z.is_)) AS density_is,
       100.0 * sum(s.n_cf) / (count(*) * any_value(z.cf)) AS density_cf,
       100.0 * sum(s.n_der) / (count(*) * any_value(z.der)) AS density_der
FROM samples AS s CROSS JOIN sizes AS z
GROUP BY s.sample
ORDER BY s.sample = 'test', s.sample
