-- Persistence and seasonality of key items on syn_panel (010). Persistence: pooled OLS
-- slope of a ratio on its own value one quarter and four quarters earlier (consecutive
-- firm quarters, ratios winsorized at the 1st/99th percentiles). Seasonality: the share
-- of within-firm-year variance of log values explained by the firm's calendar-quarter
-- means (0 = no seasonal pattern).
CREATE OR REPLACE TEMP TABLE syn_ratios AS
WITH w AS (
    SELECT gvkey, q,
        max(v) FILTER (WHERE item = 'revtq') AS revtq,
        max(v) FILTER (WHERE item = 'gpq') AS gpq,
        max(v) FILTER (WHERE item = 'niq') AS niq,
        max(v) FILTER (WHERE item = 'atq') AS atq,
        max(v) FILTER (WHERE item = 'ltq') AS ltq,
        max(v) FILTER (WHERE item = 'cheq') AS cheq,
        max(v) FILTER (WHERE item = 'oancfq') AS oancfq,
        max(v) FILTER (WHERE item = 'xsgaq') AS xsgaq
    FROM syn_panel
    GROUP BY gvkey, q
),
r AS (
    SELECT gvkey, q, 'gross margin gpq/revtq' AS ratio, gpq / nullif(revtq, 0) AS x FROM w
    UNION ALL SELECT gvkey, q, 'ROA niq/atq', niq / nullif(atq, 0) FROM w
    UNION ALL SELECT gvkey, q, 'leverage ltq/atq', ltq / nullif(atq, 0) FROM w
    UNION ALL SELECT gvkey, q, 'cash cheq/atq', cheq / nullif(atq, 0) FROM w
    UNION ALL SELECT gvkey, q, 'operating CF oancfq/atq', oancfq / nullif(atq, 0) FROM w
    UNION ALL SELECT gvkey, q, 'SG&A xsgaq/revtq', xsgaq / nullif(revtq, 0) FROM w
    UNION ALL SELECT gvkey, q, 'log revenue', ln(nullif(greatest(revtq, 0), 0)) FROM w
),
b AS (
    SELECT ratio, quantile_cont(x, 0.01) AS lo, quantile_cont(x, 0.99) AS hi
    FROM r WHERE x IS NOT NULL AND isfinite(x) GROUP BY ratio
)
SELECT r.gvkey, r.q, r.ratio, least(greatest(r.x, b.lo), b.hi) AS x
FROM r JOIN b USING (ratio)
WHERE r.x IS NOT NULL AND isfinite(r.x);

WITH lagged AS (
    SELECT a.ratio, a.x, l1.x AS x1, l4.x AS x4
    FROM syn_ratios AS a
    LEFT JOIN syn_ratios AS l1 ON l1.gvkey = a.gvkey AND l1.ratio = a.ratio AND l1.q = a.q - 1
    LEFT JOIN syn_ratios AS l4 ON l4.gvkey = a.gvkey AND l4.ratio = a.ratio AND l4.q = a.q - 4
),
persistence AS (
    SELECT 'persistence' AS kind, ratio AS name,
        round(regr_slope(x, x1), 3) AS value_1, round(regr_slope(x, x4), 3) AS value_2,
        count(x1) AS n
    FROM lagged GROUP BY ratio
),
logs AS (
    SELECT gvkey, q, item, ln(v) AS lv
    FROM syn_panel
    WHERE item IN ('revtq', 'cogsq', 'invtq', 'rectq', 'xsgaq', 'apq') AND v > 0
),
fy AS (
    SELECT *, lv - avg(lv) OVER (PARTITION BY gvkey, item, q // 4) AS d,
        count(*) OVER (PARTITION BY gvkey, item, q // 4) AS n_year
    FROM logs
),
seas AS (
    SELECT *, avg(d) OVER (PARTITION BY gvkey, item, q % 4) AS s
    FROM fy WHERE n_year = 4
),
seasonality AS (
    SELECT 'seasonality' AS kind, item AS name,
        round(1 - sum((d - s) * (d - s)) / nullif(sum(d * d), 0), 3) AS value_1,
        round(sqrt(avg(s * s)), 4) AS value_2,
        count(*) AS n
    FROM seas GROUP BY item
)
SELECT * FROM persistence
UNION ALL
SELECT * FROM seasonality
ORDER BY kind, name;
