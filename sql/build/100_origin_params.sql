-- Origin parameters: panel.origin_params from stage.raw_stats (or the pinned statistics
-- stage.reg_stats_pinned). The parameters of origin quarter t are trailing means of the
-- raw statistics: mu(i, t) = mean mu_raw, sigma(i, t) = mean sigma_raw + 1e-8 over
-- (the rule stats_quarters) 'calendar': the statistics available in the calendar
-- quarters t-3..t (fewer at the panel start; a quarter where none of mu or sigma is
-- available gets no parameters); 'both_pools': the last four quarters that have
-- statistics, up to t (the released package's rolling window over its statistics rows),
-- and quarters without raw statistics get no parameters. An item has no value at an
-- origin without parameters.
-- sigma is stored as the standardization's whole divisor (the 1e-8 numerical floor
-- included), so pinned statistics are used exactly as given.
CREATE OR REPLACE TABLE panel.origin_params AS
SELECT item_id::SMALLINT AS item_id, q::INTEGER AS q,
       avg(mu_raw) OVER w AS mu,
       avg(sigma_raw) OVER w + 1e-8 AS sigma
FROM stage.raw_stats
WHERE NOT getvariable('reg_stats_pinned') AND getvariable('stats_quarters') = 'calendar'
WINDOW w AS (PARTITION BY item_id ORDER BY q RANGE BETWEEN 3 PRECEDING AND CURRENT ROW)
QUALIFY mu IS NOT NULL AND sigma IS NOT NULL
UNION ALL
SELECT item_id::SMALLINT AS item_id, q::INTEGER AS q,
       avg(mu_raw) OVER w AS mu,
       avg(sigma_raw) OVER w + 1e-8 AS sigma
FROM stage.raw_stats
WHERE NOT getvariable('reg_stats_pinned') AND getvariable('stats_quarters') = 'both_pools'
WINDOW w AS (PARTITION BY item_id ORDER BY q ROWS BETWEEN 3 PRECEDING AND CURRENT ROW)
UNION ALL
SELECT item_id, q, mu, sigma
FROM stage.reg_stats_pinned
WHERE getvariable('reg_stats_pinned')
ORDER BY item_id, q;
