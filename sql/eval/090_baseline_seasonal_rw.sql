-- Seasonal random walk under the `paper` rules (092 is the `published` one), for
-- submission getvariable('submission_id') into eval.forecast_points (component 0, no sigma): for
-- every truth cell of split getvariable('split') whose origin lies in the block
-- getvariable('first_q')..getvariable('last_q') (088), p(h) = x_{t - ((4 - h) mod 4)}, the
-- item's value at that calendar lag (panel.values) standardized with the ORIGIN's
-- deflator z_t (panel.origins), parameters (panel.origin_params) and k (panel.item_k),
-- clipped at +-6. When the lagged quarter was not reported the forecast falls back to
-- x_t (the baseline): 087's pf_seasonal_rw_forecast. Every input is read for the block's quarters only (and the
-- values of the three quarters before it), so the joins hold one block at a time.
INSERT INTO eval.forecast_points
WITH cells AS (
    SELECT firm_id, origin_q, item_id, horizon, baseline,
           pf_seasonal_lag(horizon) AS lag
    FROM panel.truth
    WHERE split = getvariable('split')
      AND origin_q BETWEEN getvariable('first_q') AND getvariable('last_q')
),
lagged AS (
    SELECT firm_id, item_id, q, v
    FROM panel.values
    WHERE q BETWEEN getvariable('first_q') - 3 AND getvariable('last_q')
)
SELECT
    getvariable('submission_id'),
    c.firm_id, c.origin_q, c.item_id, c.horizon,
    pf_seasonal_rw_forecast(c.lag, c.baseline,
                            panel.pf_standardize(v.v, k.k, o.z, op.mu, op.sigma),
                            c.baseline) AS mu
FROM cells c
JOIN panel.origins o ON o.firm_id = c.firm_id AND o.origin_q = c.origin_q
JOIN panel.origin_params op ON op.item_id = c.item_id AND op.q = c.origin_q
JOIN panel.item_k k ON k.item_id = c.item_id
LEFT JOIN lagged v
  ON v.firm_id = c.firm_id AND v.item_id = c.item_id AND v.q = c.origin_q - c.lag;
