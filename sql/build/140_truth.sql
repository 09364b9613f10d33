-- Truth grid: panel.truth_cells and the view panel.truth from stage.origin_q0,
-- stage.fq, stage.param_lists and panel.splits. A cell (firm, origin t, item, horizon
-- h in 1..20) exists when the item is present_in_q0, the firm reports the item at
-- calendar quarter t+h (a scale-valid firm-quarter), and t+h is not purged (t+h <= the
-- split's last quarter). actual = x_(t+h) and baseline = x_t, both standardized with
-- the origin's z, k, mu, sigma and clipped at +-6 (stored as FLOAT); change = actual -
-- baseline. truth_cells stores no split (913M rows at full scale: a per-row string cost
-- a third of the write); the view derives it from origin_q through panel.splits with an
-- equi-join on the split's quarters, so a split filter still prunes origin_q row groups.
-- Rows come in stage.origin_q0's (origin_q, firm_id) order (order-preserving pipeline,
-- no sort), so origin_q ranges scan few row groups.
-- ALP/ALPRD are skipped for this table: on standardized FLOATs they saved no space
-- (measured) while their analysis cost about a quarter of the write's CPU.
SET disabled_compression_methods = 'alp,alprd';
CREATE OR REPLACE TABLE panel.truth_cells AS
WITH slots AS (
    -- one row per (origin, horizon) within the purge bound: an equi-join on (firm_id, q)
    SELECT o.firm_id, o.origin_q, o.z, o.x0, h.horizon,
           (o.origin_q + h.horizon)::INTEGER AS q
    FROM stage.origin_q0 AS o, range(1, getvariable('horizons') + 1) AS h(horizon)
    WHERE o.origin_q + h.horizon <= o.last_q
),
cells AS (
    SELECT s.firm_id, s.origin_q, s.horizon, s.z,
           unnest(range(1, len(s.x0) + 1)) AS item_id,
           unnest(s.x0) AS baseline, unnest(f.vals) AS vh,
           unnest(pl.k) AS k, unnest(pl.mu) AS mu, unnest(pl.sigma) AS sigma
    FROM slots AS s
    JOIN stage.fq AS f ON f.firm_id = s.firm_id AND f.q = s.q
    JOIN stage.param_lists AS pl ON pl.q = s.origin_q
)
SELECT firm_id, origin_q, item_id::SMALLINT AS item_id, horizon::TINYINT AS horizon,
       panel.pf_standardize(vh, k, z, mu, sigma)::FLOAT AS actual,
       baseline::FLOAT AS baseline
FROM cells
WHERE baseline IS NOT NULL AND vh IS NOT NULL;
SET disabled_compression_methods = '';

CREATE OR REPLACE VIEW panel.truth AS
SELECT t.firm_id, t.origin_q, t.item_id, t.horizon, s.split, t.actual, t.baseline,
       t.actual::DOUBLE - t.baseline::DOUBLE AS change  -- in double: FLOAT - FLOAT rounds
FROM panel.truth_cells AS t
JOIN (SELECT sp.split, r.q::INTEGER AS q
      FROM panel.splits AS sp, range(sp.first_q, sp.last_q + 1) AS r(q)) AS s
  ON s.q = t.origin_q;
