-- The seasonal random walk's forecasts for round getvariable('round_id'), by the rule of
-- sql/eval/090: for every cell of the round, p(h) = x_{t - ((4 - h) mod 4)}, the item's
-- value at that calendar lag (panel.values at the open) standardized with the round's
-- frozen z, k, mu, sigma and clipped at +-6; x_t (the baseline) where the lag is 0 or the
-- lagged quarter was not reported. Columns of app/rounds/submit.submit_table.
WITH cells AS (
    SELECT b.gvkey, b.item_id, b.baseline, h.horizon, (4 - h.horizon % 4) % 4 AS lag
    FROM rounds.baselines AS b, range(1, 21) AS h(horizon)
    WHERE b.round_id = getvariable('round_id')
)
SELECT c.gvkey, i.item AS target, r.origin_q, c.horizon::TINYINT AS horizon,
       CASE WHEN c.lag = 0 OR v.v IS NULL THEN c.baseline::DOUBLE
            ELSE panel.pf_standardize(v.v, p.k, o.z, p.mu, p.sigma) END AS mu,
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
