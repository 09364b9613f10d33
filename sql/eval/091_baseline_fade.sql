-- Fade / AR(1) forecasts for submission getvariable('submission_id') into
-- eval.forecast_points (component 0, no sigma): the per (item, horizon) OLS fit
-- x_{t+h} = a + rho x_t of 089 (temp table baseline_fade_fit, on the finite truth cells of
-- the train and val splits) applied to every truth cell of split getvariable('split')
-- whose origin lies in the block getvariable('first_q')..getvariable('last_q') (088).
-- The rule, and its fall-back where OLS is impossible (the rule fade_fallback), is 087's
-- pf_fade_forecast.
INSERT INTO eval.forecast_points
SELECT
    getvariable('submission_id'),
    t.firm_id, t.origin_q, t.item_id, t.horizon,
    pf_fade_forecast(getvariable('fade_fallback'), f.n, f.a, f.rho, f.sxx, f.mean_actual,
                     f.mean_change, t.baseline) AS mu
FROM panel.truth t
LEFT JOIN baseline_fade_fit f ON f.item_id = t.item_id AND f.horizon = t.horizon
WHERE t.split = getvariable('split')
  AND t.origin_q BETWEEN getvariable('first_q') AND getvariable('last_q');
