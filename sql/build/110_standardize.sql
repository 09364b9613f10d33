-- Standardization: the macros panel.pf_unclipped, panel.pf_standardize, panel.pf_clip,
-- panel.pf_clip_yoy and panel.pf_destandardize that every later step, view and forecast
-- in dollars applies, and panel.rule_set (one row: the build's rule set and its
-- year-over-year clip) for the views, which run outside the build. A value v of an example with origin t is standardized with the
-- ORIGIN's deflator z_t and parameters (k_i, mu(i, t), sigma(i, t)) for every lead and lag:
-- x = clip((asinh(k v / z_t) - mu) / sigma, -6, 6), where panel.origin_params.sigma is
-- the whole divisor (its numerical floor included, see 100_origin_params), so a
-- published statistics file pins it unchanged. The scale item is standardized from its
-- own value (z = 1: not divided by itself). pf_clip_yoy(d, bound) clips a year-over-year
-- change of unclipped levels at +-bound: the build's panel.rule_set.yoy_clip (the rule
-- yoy_clip: 6 sqrt 2, or the released package's literal 6 x 1.4142).
-- pf_destandardize is the exact inverse of pf_unclipped:
-- v = z sinh(x sigma + mu) / k. Clipping is written with CASE (not greatest/least, which
-- skip NULLs) so a missing value stays missing.
CREATE OR REPLACE MACRO panel.pf_clip(u) AS
    CASE WHEN u > 6.0 THEN 6.0 WHEN u < -6.0 THEN -6.0 ELSE u END;
CREATE OR REPLACE MACRO panel.pf_clip_yoy(d, bound) AS
    CASE WHEN d > bound THEN bound WHEN d < -bound THEN -bound ELSE d END;
CREATE OR REPLACE MACRO panel.pf_unclipped(v, k, z, mu, sigma) AS
    (asinh(k * v / z) - mu) / sigma;
CREATE OR REPLACE MACRO panel.pf_standardize(v, k, z, mu, sigma) AS
    panel.pf_clip((asinh(k * v / z) - mu) / sigma);
CREATE OR REPLACE MACRO panel.pf_destandardize(x, k, z, mu, sigma) AS
    z * sinh(x * sigma + mu) / k;

CREATE OR REPLACE TABLE panel.rule_set AS
SELECT getvariable('rules')::VARCHAR AS rules, getvariable('yoy_clip')::DOUBLE AS yoy_clip;
