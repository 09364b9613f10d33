-- Freeze round getvariable('round_id') at origin quarter getvariable('origin_q') from the
-- panel as built at the open (the quarter is the panel's last, so nothing here depends on
-- a later quarter): rounds.origins (the eligible origins of panel.origins at that
-- quarter, by gvkey, with their deflator z and industry), rounds.params (k of
-- panel.item_k and the quarter's (mu, sigma divisor) of panel.origin_params, items with
-- statistics only) and rounds.baselines (x_t of every item an origin reports at t with
-- statistics at t: present_in_q0, standardized as sql/build/130 does, stored as FLOAT as
-- panel.truth_cells stores it).
INSERT INTO rounds.origins
SELECT getvariable('round_id'), f.gvkey, o.z, o.ff48
FROM panel.origins AS o
JOIN panel.firms AS f USING (firm_id)
WHERE o.origin_q = getvariable('origin_q');

INSERT INTO rounds.params
SELECT getvariable('round_id'), k.item_id, k.k, p.mu, p.sigma
FROM panel.item_k AS k
JOIN panel.origin_params AS p ON p.item_id = k.item_id AND p.q = getvariable('origin_q')
WHERE k.k IS NOT NULL AND p.mu IS NOT NULL AND p.sigma IS NOT NULL;

INSERT INTO rounds.baselines
SELECT getvariable('round_id'), f.gvkey, v.item_id,
       panel.pf_standardize(v.v, p.k, o.z, p.mu, p.sigma)::FLOAT
FROM panel.origins AS o
JOIN panel.firms AS f USING (firm_id)
JOIN panel.values AS v ON v.firm_id = o.firm_id AND v.q = o.origin_q
JOIN rounds.params AS p ON p.round_id = getvariable('round_id') AND p.item_id = v.item_id
WHERE o.origin_q = getvariable('origin_q') AND v.item_id >= 1 AND v.v IS NOT NULL;
