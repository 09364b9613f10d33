-- Standardization: the macros panel.pf_unclipped and panel.pf_standardize that every
-- later step and view applies. A value v of an example with origin t is standardized
-- with the ORIGIN's deflator z_t and parameters (k_i, mu(i, t), sigma(i, t)) for every
-- lead and lag: x = clip((asinh(k v / z_t) - mu) / (sigma + 1e-8), -6, 6). The scale
-- item is standardized from its own value (z = 1: not divided by itself).
-- panel.pf_clip_yoy clips a year-over-year change of unclipped levels at 6 sqrt 2.
CREATE OR REPLACE MACRO panel.pf_unclipped(v, k, z, mu, sigma) AS
    (asinh(k * v / z) - mu) / (sigma + 1e-8);
CREATE OR REPLACE MACRO panel.pf_standardize(v, k, z, mu, sigma) AS
    greatest(-6.0, least(6.0, (asinh(k * v / z) - mu) / (sigma + 1e-8)));
CREATE OR REPLACE MACRO panel.pf_clip_yoy(d) AS
    greatest(-6.0 * sqrt(2.0), least(6.0 * sqrt(2.0), d));
CREATE OR REPLACE MACRO panel.pf_clip(u) AS
    greatest(-6.0, least(6.0, u));
