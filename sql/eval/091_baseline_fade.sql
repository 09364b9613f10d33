-- Fade / AR(1) forecasts for submission getvariable('submission_id') into
-- eval.forecast_points (component 0, no sigma): the per (item, horizon) OLS fit
-- x_{t+h} = a + rho x_t of 089 (temp table baseline_fade_fit, on the finite truth cells of
-- the train and val splits) applied to every truth cell of split getvariable('split')
-- whose origin lies in the block getvariable('first_q')..getvariable('last_q') (088).
-- Where OLS is not possible the rule sets differ: `paper` (fewer than 100 cells, or no
-- variance in x_t) predicts x_t plus the mean change (x_t without any cell); `published`
-- (the released package) predicts the mean of x_{t+h} with fewer than 100 cells or
-- sum (x_t - mean)^2 <= 1e-12, and x_t without any cell.
INSERT INTO eval.forecast_points
SELECT
    getvariable('submission_id'),
    t.firm_id, t.origin_q, t.item_id, t.horizon,
    CASE
        WHEN getvariable('published') THEN
            CASE WHEN f.n IS NULL THEN t.baseline
                 WHEN f.n < 100 OR f.sxx <= 1e-12 THEN f.mean_actual
                 ELSE f.a + f.rho * t.baseline END
        WHEN f.n >= 100 AND isfinite(f.rho) AND isfinite(f.a) THEN f.a + f.rho * t.baseline
        ELSE t.baseline + coalesce(f.mean_change, 0)
    END AS mu
FROM panel.truth t
LEFT JOIN baseline_fade_fit f ON f.item_id = t.item_id AND f.horizon = t.horizon
WHERE t.split = getvariable('split')
  AND t.origin_q BETWEEN getvariable('first_q') AND getvariable('last_q');
