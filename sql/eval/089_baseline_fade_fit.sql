-- The fade / AR(1) fit (091 applies it block by block) as the temp table
-- baseline_fade_fit: per (item, horizon) OLS x_{t+h} = a + rho x_t on the finite truth
-- cells of the train and val splits (panel.truth actual on baseline), with the cell
-- count, sxx, and the means of x_{t+h} and of the change that 091's fallbacks use.
CREATE OR REPLACE TEMP TABLE baseline_fade_fit AS
SELECT item_id, horizon,
       count(*) AS n,
       regr_intercept(actual, baseline) AS a,
       regr_slope(actual, baseline) AS rho,
       regr_sxx(actual, baseline) AS sxx,
       avg(actual) AS mean_actual,
       avg(change) AS mean_change
FROM panel.truth
WHERE split IN ('train', 'val') AND isfinite(actual) AND isfinite(baseline)
GROUP BY item_id, horizon;
