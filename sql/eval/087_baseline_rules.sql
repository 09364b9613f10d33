-- The reference baselines' forecast rules, one definition each, for the static baselines
-- (090, 091, 092) and a prospective round's entries (sql/rounds/080, 081): temp macros on
-- the connection that writes them.
-- Seasonal random walk: p(h) = the item's value at the calendar lag (4 - h mod 4) mod 4
-- (standardized as the origin's own value is); the baseline x_t at lag 0; `fallback`
-- where the lagged quarter was not reported (the rule seasonal_rw_fill: 'baseline', x_t,
-- in 090; 'imputed', the tabular view's imputed fill, none where the imputation left a
-- gap, in 092).
CREATE OR REPLACE TEMP MACRO pf_seasonal_lag(horizon) AS (4 - horizon % 4) % 4;
CREATE OR REPLACE TEMP MACRO pf_seasonal_rw_forecast(lag, baseline, lagged, fallback) AS
    CASE WHEN lag = 0 THEN baseline WHEN lagged IS NOT NULL THEN lagged ELSE fallback END;
-- Fade / AR(1): the per (item, horizon) OLS x_{t+h} = a + rho x_t (089's fit: n cells,
-- sxx, the means of x_{t+h} and of the change) applied to x_t. Where OLS is not possible
-- the rule fade_fallback decides (`fallback`, getvariable('fade_fallback')):
-- 'mean_change' (fewer than 100 cells, or a non-finite fit) predicts x_t plus the mean
-- change (x_t without any cell); 'mean_actual' (the released package) predicts the mean
-- of x_{t+h} with fewer than 100 cells or sxx <= 1e-12, and x_t without any cell.
CREATE OR REPLACE TEMP MACRO pf_fade_forecast(
    fallback, n, a, rho, sxx, mean_actual, mean_change, baseline
) AS
    CASE
        WHEN fallback = 'mean_actual' THEN
            CASE WHEN n IS NULL THEN baseline
                 WHEN n < 100 OR sxx <= 1e-12 THEN mean_actual
                 ELSE a + rho * baseline END
        WHEN n >= 100 AND isfinite(rho) AND isfinite(a) THEN a + rho * baseline
        ELSE baseline + coalesce(mean_change, 0)
    END;
