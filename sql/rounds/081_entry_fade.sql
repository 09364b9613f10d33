-- Fade / AR(1) forecasts for round getvariable('round_id'), by the rule of sql/eval/091:
-- per (item, horizon) OLS x_{t+h} = a + rho x_t on the finite truth cells of the train and
-- val splits of the panel at the open, applied to the round's baselines; where OLS is not
-- possible, `published` (getvariable('published')) predicts the mean of x_{t+h} (fewer
-- than 100 cells or sum (x_t - mean)^2 <= 1e-12) and x_t without any cell, `paper` x_t
-- plus the mean change.
WITH fit AS (
    SELECT item_id, horizon, count(*) AS n,
           regr_intercept(actual, baseline) AS a, regr_slope(actual, baseline) AS rho,
           regr_sxx(actual, baseline) AS sxx, avg(actual) AS mean_actual,
           avg(change) AS mean_change
    FROM panel.truth
    WHERE split IN ('train', 'val') AND isfinite(actual) AND isfinite(baseline)
    GROUP BY item_id, horizon
),
cells AS (
    SELECT b.gvkey, b.item_id, b.baseline::DOUBLE AS baseline, h.horizon
    FROM rounds.baselines AS b, range(1, 21) AS h(horizon)
    WHERE b.round_id = getvariable('round_id')
)
SELECT c.gvkey, i.item AS target, r.origin_q, c.horizon::TINYINT AS horizon,
       CASE
           WHEN getvariable('published') THEN
               CASE WHEN f.n IS NULL THEN c.baseline
                    WHEN f.n < 100 OR f.sxx <= 1e-12 THEN f.mean_actual
                    ELSE f.a + f.rho * c.baseline END
           WHEN f.n >= 100 AND isfinite(f.rho) AND isfinite(f.a) THEN f.a + f.rho * c.baseline
           ELSE c.baseline + coalesce(f.mean_change, 0)
       END AS mu,
       CAST(NULL AS DOUBLE) AS sigma
FROM cells AS c
JOIN rounds.rounds AS r ON r.round_id = getvariable('round_id')
JOIN ref.items AS i ON i.item_id = c.item_id
LEFT JOIN fit AS f ON f.item_id = c.item_id AND f.horizon = c.horizon
ORDER BY c.gvkey, c.item_id, c.horizon;
