-- Origin parameters: panel.origin_params from stage.raw_stats (or the pinned statistics
-- stage.reg_stats_pinned). The parameters of origin quarter t are trailing means of the
-- raw statistics: mu(i, t) = mean mu_raw, sigma(i, t) = mean sigma_raw + 1e-8 over
-- `paper`: the calendar quarters t-3..t (fewer at the panel start);
-- `published`: the last four quarters that have statistics, up to t (the released
-- package's rolling window over its statistics rows); quarters without raw statistics
-- get no parameters, so an item has no value at such an origin.
-- sigma is stored as the standardization's whole divisor (the 1e-8 numerical floor
-- included), so pinned statistics are used exactly as given.
CREATE OR REPLACE TABLE panel.origin_params AS
SELECT item_id::SMALLINT AS item_id, q::INTEGER AS q,
       avg(mu_raw) OVER w AS mu,
       avg(sigma_raw) OVER w + 1e-8 AS sigma
FROM stage.raw_stats
WHERE NOT getvariable('reg_stats_pinned') AND NOT getvariable('published')
WINDOW w AS (PARTITION BY item_id ORDER BY q RANGE BETWEEN 3 PRECEDING AND CURRENT ROW)
UNION ALL
SELECT item_id::SMALLINT AS item_id, q::INTEGER AS q,
       avg(mu_raw) OVER w AS mu,
       avg(sigma_raw) OVER w + 1e-8 AS sigma
FROM stage.raw_stats
WHERE NOT getvariable('reg_stats_pinned') AND getvariable('published')
WINDOW w AS (PARTITION BY item_id ORDER BY q ROWS BETWEEN 3 PRECEDING AND CURRENT ROW)
UNION ALL
SELECT item_id, q, mu, sigma
FROM stage.reg_stats_pinned
WHERE getvariable('reg_stats_pinned')
ORDER BY item_id, q;
