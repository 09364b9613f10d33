-- Tuple view: the table macro panel.tuple_window_rows(lo_q, hi_q) over panel.values
-- (the raw tuple view), panel.origins, panel.item_k, panel.origin_params and
-- panel.truth_cells. For every eligible origin t with lo_q <= t <= hi_q it returns the
-- standardized tuples of its window: history = every reported item at rel_q -11..0
-- (x standardized with the origin's z and parameters, clipped at +-6) plus the scale
-- token (item 0, rel_q 0, asinh(k_0 z_t) standardized with the scale's own
-- parameters); future (is_future) = the origin's truth cells (present_in_q0, realized,
-- unpurged: the split's cut) at rel_q = horizon 1..20 with x = actual.
-- app.views.tuple_windows folds these rows into one list row per origin.
CREATE OR REPLACE MACRO panel.tuple_window_rows(lo_q, hi_q) AS TABLE
WITH slots AS (
    -- one row per (origin, history quarter): the join below is then an equi-join on
    -- (firm_id, q) rather than a range join
    SELECT o.firm_id, o.origin_q, o.split, o.ff48, o.z, (o.origin_q + r.rel)::INTEGER AS q
    FROM panel.origins AS o, range(-11, 1) AS r(rel)
    WHERE o.origin_q BETWEEN lo_q AND hi_q
)
SELECT o.firm_id, o.origin_q, o.split, o.ff48,
       (v.q - o.origin_q)::TINYINT AS rel_q, v.item_id,
       CASE WHEN v.item_id = 0
            THEN panel.pf_standardize(v.v, k.k, 1.0, p.mu, p.sigma)
            ELSE panel.pf_standardize(v.v, k.k, o.z, p.mu, p.sigma)
       END::FLOAT AS x,
       false AS is_future
FROM slots AS o
JOIN panel.values AS v ON v.firm_id = o.firm_id AND v.q = o.q
JOIN panel.item_k AS k ON k.item_id = v.item_id
JOIN panel.origin_params AS p ON p.item_id = v.item_id AND p.q = o.origin_q
WHERE v.q BETWEEN lo_q - 11 AND hi_q
  AND (v.item_id > 0 OR v.q = o.origin_q)
UNION ALL
SELECT o.firm_id, o.origin_q, o.split, o.ff48, t.horizon::TINYINT AS rel_q, t.item_id,
       t.actual AS x, true AS is_future
FROM panel.truth_cells AS t
JOIN panel.origins AS o USING (firm_id, origin_q)
WHERE t.origin_q BETWEEN lo_q AND hi_q AND o.origin_q BETWEEN lo_q AND hi_q;

-- Raw windows: the table macro panel.raw_window_rows(lo_q, hi_q) over panel.values and
-- panel.origins. For every eligible origin t with lo_q <= t <= hi_q, the values the firm
-- reported (in reported units, not standardized; items 1..78, no scale token) at rel_q
-- -11..0, with the origin deflator z. Models that forecast in dollars (LLM prompts,
-- Chronos-2 contexts) read it through app.views.raw_windows.
CREATE OR REPLACE MACRO panel.raw_window_rows(lo_q, hi_q) AS TABLE
WITH slots AS (
    SELECT o.firm_id, o.origin_q, o.split, o.ff48, o.z, (o.origin_q + r.rel)::INTEGER AS q
    FROM panel.origins AS o, range(-11, 1) AS r(rel)
    WHERE o.origin_q BETWEEN lo_q AND hi_q
)
SELECT o.firm_id, o.origin_q, o.split, o.ff48, o.z,
       (v.q - o.origin_q)::TINYINT AS rel_q, v.item_id, v.v
FROM slots AS o
JOIN panel.values AS v ON v.firm_id = o.firm_id AND v.q = o.q
WHERE v.q BETWEEN lo_q - 11 AND hi_q AND v.item_id > 0;
