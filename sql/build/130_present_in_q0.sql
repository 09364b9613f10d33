-- present_in_q0: stage.origin_q0 from panel.origins, panel.splits, stage.fq and
-- stage.param_lists. One row per eligible origin: deflator, industry, its split's purge
-- quarter (last_q: the last target quarter it may keep) and x0, the 78 baselines x_t
-- standardized with the origin's parameters (item_id order). An item is present_in_q0 at
-- an origin when x0[item_id] is not NULL (reported at t, with statistics at t); only
-- such items get targets (truth cells, future tuples, tabular targets).
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
