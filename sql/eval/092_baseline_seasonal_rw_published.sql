-- Seasonal random walk under the `published` rules, for submission
-- getvariable('submission_id') into eval.forecast_points (component 0, no sigma): for every truth
-- cell of split getvariable('split') whose origin lies in the block
-- getvariable('first_q')..getvariable('last_q') (088), p(h) = level_{(4 - h mod 4) mod 4} of
-- the origin's row in the factor-imputed tabular view, as the published package predicts
-- from its (imputed) tabular file: level_0 is the baseline x_t; a lagged level is the
-- value reported at t - lag standardized with the origin's z and parameters (panel.values,
-- clipped at +-6), or where the firm did not report it the imputation's fill
-- (panel.tabular_imputed_cells, feature index (item_id - 1) * 4 + lag); where the
-- imputation left a gap (a quarter with too few firms) there is no forecast. Every input
-- is read for the block's quarters only (and the values of the three quarters before
-- it), so the joins hold one block at a time.
INSERT INTO eval.forecast_points
WITH cells AS (
    SELECT firm_id, origin_q, item_id, horizon, baseline, pf_seasonal_lag(horizon) AS lag
    FROM panel.truth
    WHERE split = getvariable('split')
      AND origin_q BETWEEN getvariable('first_q') AND getvariable('last_q')
),
lagged AS (
    SELECT firm_id, item_id, q, v
    FROM panel.values
    WHERE q BETWEEN getvariable('first_q') - 3 AND getvariable('last_q')
),
fills AS (
    SELECT firm_id, origin_q, feature, value
    FROM panel.tabular_imputed_cells
    WHERE origin_q BETWEEN getvariable('first_q') AND getvariable('last_q')
)
SELECT
    getvariable('submission_id'),
    c.firm_id, c.origin_q, c.item_id, c.horizon,
    pf_seasonal_rw_forecast(c.lag, c.baseline,
                            panel.pf_standardize(v.v, k.k, o.z, op.mu, op.sigma),
                            fill.value) AS mu
FROM cells AS c
JOIN panel.origins AS o ON o.firm_id = c.firm_id AND o.origin_q = c.origin_q
JOIN panel.origin_params AS op ON op.item_id = c.item_id AND op.q = c.origin_q
JOIN panel.item_k AS k ON k.item_id = c.item_id
LEFT JOIN lagged AS v
  ON v.firm_id = c.firm_id AND v.item_id = c.item_id AND v.q = c.origin_q - c.lag
LEFT JOIN fills AS fill
  ON fill.firm_id = c.firm_id AND fill.origin_q = c.origin_q
 AND fill.feature = (c.item_id - 1) * 4 + c.lag;
