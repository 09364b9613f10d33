-- The seasonal random walk's forecasts for round getvariable('round_id'), by the rule of
-- the static baseline (sql/eval/087's pf_seasonal_rw_forecast, as sql/eval/090 applies
-- it): for every cell of the round, the item's value at the calendar lag (panel.values at
-- the open) standardized with the round's frozen z, k, mu, sigma and clipped at +-6; x_t
-- (the baseline) where the lag is 0 or the lagged quarter was not reported. Columns of
-- app/rounds/submit.submit_table.
WITH cells AS (
    SELECT b.gvkey, b.item_id, b.baseline, h.horizon, pf_seasonal_lag(h.horizon) AS lag
    FROM rounds.baselines AS b, range(1, 21) AS h(horizon)
    WHERE b.round_id = getvariable('round_id')
)
SELECT c.gvkey, i.item AS target, r.origin_q, c.horizon::TINYINT AS horizon,
       pf_seasonal_rw_forecast(c.lag, c.baseline::DOUBLE,
                               panel.pf_standardize(v.v, p.k, o.z, p.mu, p.sigma),
                               c.baseline::DOUBLE) AS mu,
       CAST(NULL AS DOUBLE) AS sigma
FROM cells AS c
JOIN rounds.rounds AS r ON r.round_id = getvariable('round_id')
JOIN rounds.origins AS o ON o.round_id = r.round_id AND o.gvkey = c.gvkey
JOIN rounds.params AS p ON p.round_id = r.round_id AND p.item_id = c.item_id
JOIN ref.items AS i ON i.item_id = c.item_id
JOIN panel.firms AS f ON f.gvkey = c.gvkey
LEFT JOIN panel.values AS v
  ON v.firm_id = f.firm_id AND v.item_id = c.item_id AND v.q = r.origin_q - c.lag
ORDER BY c.gvkey, c.item_id, c.horizon;
