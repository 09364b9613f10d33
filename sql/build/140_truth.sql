-- Truth grid: panel.truth_cells and the view panel.truth from stage.origin_q0,
-- stage.fq, panel.item_k and panel.origin_params. A cell (firm, origin t, item,
-- horizon h in 1..20) exists when the item is present_in_q0, the firm reports the item
-- at calendar quarter t+h (a scale-valid firm-quarter), and t+h is not purged
-- (t+h <= the split's last quarter). actual = x_(t+h) and baseline = x_t, both
-- standardized with the origin's z, k, mu, sigma and clipped at +-6 (stored as FLOAT);
-- change = actual - baseline. Rows come in stage.origin_q0's (origin_q, firm_id) order
-- (order-preserving pipeline, no sort), so origin_q ranges scan few row groups.
CREATE OR REPLACE TABLE panel.truth_cells AS
WITH pairs AS (
    SELECT o.firm_id, o.origin_q, o.split, h.horizon, o.z, o.vals0, f.vals AS valsh
    FROM stage.origin_q0 AS o
    CROSS JOIN range(1, getvariable('horizons') + 1) AS h(horizon)
    JOIN stage.fq AS f ON f.firm_id = o.firm_id AND f.q = o.origin_q + h.horizon
    WHERE o.origin_q + h.horizon <= o.last_q
),
cells AS (
    SELECT firm_id, origin_q, split, horizon, z,
           unnest(range(1, len(vals0) + 1)) AS item_id, unnest(vals0) AS v0, unnest(valsh) AS vh
    FROM pairs
)
SELECT c.firm_id, c.origin_q, c.item_id::SMALLINT AS item_id, c.horizon::TINYINT AS horizon,
       c.split,
       panel.pf_standardize(c.vh, k.k, c.z, p.mu, p.sigma)::FLOAT AS actual,
       panel.pf_standardize(c.v0, k.k, c.z, p.mu, p.sigma)::FLOAT AS baseline
FROM cells AS c
JOIN panel.item_k AS k ON k.item_id = c.item_id
JOIN panel.origin_params AS p ON p.item_id = c.item_id AND p.q = c.origin_q
WHERE c.v0 IS NOT NULL AND c.vh IS NOT NULL;

CREATE OR REPLACE VIEW panel.truth AS
SELECT firm_id, origin_q, item_id, horizon, split, actual, baseline,
       actual - baseline AS change
FROM panel.truth_cells;
