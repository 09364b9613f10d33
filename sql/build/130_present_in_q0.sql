-- present_in_q0: stage.param_lists and stage.origin_q0 from panel.item_k,
-- panel.origin_params, panel.origins, panel.splits and stage.fq. stage.param_lists holds
-- each quarter's parameters of items 1..78 as lists in item_id order (k, mu, sigma).
-- stage.origin_q0 holds one row per eligible origin: deflator, industry, its split's
-- purge quarter (last_q: the last target quarter it may keep) and x0, the 78 baselines
-- x_t standardized with the origin's parameters (item_id order). An item is
-- present_in_q0 at an origin when x0[item_id] is not NULL; only such items get targets
-- (truth cells, future tuples, tabular targets).
CREATE OR REPLACE TABLE stage.param_lists AS
SELECT p.q,
       list(k.k ORDER BY p.item_id) AS k,
       list(p.mu ORDER BY p.item_id) AS mu,
       list(p.sigma ORDER BY p.item_id) AS sigma
FROM panel.origin_params AS p
JOIN panel.item_k AS k USING (item_id)
WHERE p.item_id > 0
GROUP BY p.q;

CREATE OR REPLACE TABLE stage.origin_q0 AS
SELECT o.firm_id, o.origin_q, o.split, s.last_q, o.z, o.ff48,
       -- zip the parallel lists: a lambda capturing whole lists copies them per element
       list_transform(list_zip(f.vals, pl.k, pl.mu, pl.sigma),
                      lambda t: panel.pf_standardize(t[1], t[2], o.z, t[3], t[4]))
           AS x0
FROM panel.origins AS o
JOIN panel.splits AS s USING (split)
JOIN stage.fq AS f ON f.firm_id = o.firm_id AND f.q = o.origin_q
JOIN stage.param_lists AS pl ON pl.q = o.origin_q
ORDER BY o.origin_q, o.firm_id;
