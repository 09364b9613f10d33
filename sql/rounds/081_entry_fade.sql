-- Fade / AR(1) forecasts for round getvariable('round_id'), by the rule of the static
-- baseline: sql/eval/089's per (item, horizon) fit (temp table baseline_fade_fit, on the
-- finite truth cells of the train and val splits of the panel at the open) and
-- sql/eval/087's pf_fade_forecast (where OLS is impossible: the rule getvariable('fade_fallback')),
-- applied to the round's baselines. Columns of app/rounds/submit.submit_table.
WITH cells AS (
    SELECT b.gvkey, b.item_id, b.baseline::DOUBLE AS baseline, h.horizon
    FROM rounds.baselines AS b, range(1, 21) AS h(horizon)
    WHERE b.round_id = getvariable('round_id')
)
SELECT c.gvkey, i.item AS target, r.origin_q, c.horizon::TINYINT AS horizon,
       pf_fade_forecast(getvariable('fade_fallback'), f.n, f.a, f.rho, f.sxx, f.mean_actual,
                        f.mean_change, c.baseline) AS mu,
       CAST(NULL AS DOUBLE) AS sigma
FROM cells AS c
JOIN rounds.rounds AS r ON r.round_id = getvariable('round_id')
JOIN ref.items AS i ON i.item_id = c.item_id
LEFT JOIN baseline_fade_fit AS f ON f.item_id = c.item_id AND f.horizon = c.horizon
ORDER BY c.gvkey, c.item_id, c.horizon;
