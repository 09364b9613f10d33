-- Tabular view: the table macros panel.tabular_feature_rows(lo_q, hi_q) and
-- panel.tabular_target_rows(lo_q, hi_q) over panel.values, panel.origins,
-- panel.item_k, panel.origin_params and panel.truth_cells, for origins with
-- lo_q <= origin_q <= hi_q. Features, one row per (origin, item): on the firm's
-- CALENDAR grid (a quarter the firm did not report is missing, gaps do not collapse)
-- u_j = the unclipped standardized level at t-j (origin's z and parameters);
-- level_j = clip(u_j, +-6) for j = 0..3 and yoy_j = clip(u_j - u_(j+4), +-yoy_clip)
-- for j = 0..7 (panel.rule_set.yoy_clip, the rule yoy_clip). Item 0 (scale) gives scale_level_0 (its own parameters, no
-- self-deflation). Targets: the truth cells' actual per (origin, item, horizon);
-- absent cells (missing, not present_in_q0, purged) are NULL in the wide view that
-- app.views.tabular_reader assembles (985 features: 78 x (4 + 8) + 1 + 48 FF48 dummies
-- with Unknown omitted; targets {item}_t1..t20).
CREATE OR REPLACE MACRO panel.tabular_feature_rows(lo_q, hi_q) AS TABLE
WITH slots AS (
    SELECT o.firm_id, o.origin_q, o.z, (o.origin_q + r.rel)::INTEGER AS q
    FROM panel.origins AS o, range(-11, 1) AS r(rel)
    WHERE o.origin_q BETWEEN lo_q AND hi_q
),
u AS (
    SELECT o.firm_id, o.origin_q, v.item_id, (o.origin_q - v.q)::INTEGER AS lag,
           CASE WHEN v.item_id = 0
                THEN panel.pf_unclipped(v.v, k.k, 1.0, p.mu, p.sigma)
                ELSE panel.pf_unclipped(v.v, k.k, o.z, p.mu, p.sigma)
           END AS u
    FROM slots AS o
    JOIN panel.values AS v ON v.firm_id = o.firm_id AND v.q = o.q
    JOIN panel.item_k AS k ON k.item_id = v.item_id
    JOIN panel.origin_params AS p ON p.item_id = v.item_id AND p.q = o.origin_q
    WHERE v.q BETWEEN lo_q - 11 AND hi_q
      AND (v.item_id > 0 OR v.q = o.origin_q)
),
w AS (
    SELECT firm_id, origin_q, item_id,
           max(u) FILTER (WHERE lag = 0) AS u0, max(u) FILTER (WHERE lag = 1) AS u1,
           max(u) FILTER (WHERE lag = 2) AS u2, max(u) FILTER (WHERE lag = 3) AS u3,
           max(u) FILTER (WHERE lag = 4) AS u4, max(u) FILTER (WHERE lag = 5) AS u5,
           max(u) FILTER (WHERE lag = 6) AS u6, max(u) FILTER (WHERE lag = 7) AS u7,
           max(u) FILTER (WHERE lag = 8) AS u8, max(u) FILTER (WHERE lag = 9) AS u9,
           max(u) FILTER (WHERE lag = 10) AS u10, max(u) FILTER (WHERE lag = 11) AS u11
    FROM u
    GROUP BY firm_id, origin_q, item_id
)
SELECT firm_id, origin_q, item_id,
       panel.pf_clip(u0) AS level_0, panel.pf_clip(u1) AS level_1,
       panel.pf_clip(u2) AS level_2, panel.pf_clip(u3) AS level_3,
       panel.pf_clip_yoy(u0 - u4, c.yoy_clip) AS yoy_0, panel.pf_clip_yoy(u1 - u5, c.yoy_clip) AS yoy_1,
       panel.pf_clip_yoy(u2 - u6, c.yoy_clip) AS yoy_2, panel.pf_clip_yoy(u3 - u7, c.yoy_clip) AS yoy_3,
       panel.pf_clip_yoy(u4 - u8, c.yoy_clip) AS yoy_4, panel.pf_clip_yoy(u5 - u9, c.yoy_clip) AS yoy_5,
       panel.pf_clip_yoy(u6 - u10, c.yoy_clip) AS yoy_6, panel.pf_clip_yoy(u7 - u11, c.yoy_clip) AS yoy_7
FROM w, panel.rule_set AS c;

CREATE OR REPLACE MACRO panel.tabular_target_rows(lo_q, hi_q) AS TABLE
SELECT firm_id, origin_q, item_id, horizon, actual
FROM panel.truth_cells
WHERE origin_q BETWEEN lo_q AND hi_q;
