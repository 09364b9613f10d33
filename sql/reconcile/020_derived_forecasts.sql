-- The derived (reconciled) submission's forecasts, from the identifier points
-- (sql/eval/079's view of the parent's point forecast per cell), eval.reconcile_cells (job getvariable('reconcile_id')),
-- panel.origins, panel.origin_params and panel.item_k: one single forecast per cell the
-- parent predicts finitely. A cell the projection changed gets its reconciled value
-- standardized exactly like the truth (panel.pf_standardize with the ORIGIN's deflator
-- and parameters, clipped at +-6); every other cell passes through as the parent's
-- point forecast (mean of its components), bit for bit. No sigma: a reconciled
-- statement is a point forecast.
WITH points AS (
    -- each cell's point forecast (sql/eval/079)
    SELECT firm_id, origin_q, item_id, horizon, x FROM {{ points }}
),
changed AS (
    SELECT r.firm_id, r.origin_q, r.item_id, r.horizon,
           panel.pf_standardize(r.v, k.k, o.z, op.mu, op.sigma) AS x
    FROM eval.reconcile_cells AS r
    JOIN panel.origins AS o ON o.firm_id = r.firm_id AND o.origin_q = r.origin_q
    JOIN panel.origin_params AS op ON op.item_id = r.item_id AND op.q = r.origin_q
    JOIN panel.item_k AS k ON k.item_id = r.item_id
    WHERE r.reconcile_id = getvariable('reconcile_id')
)
SELECT p.firm_id::INTEGER AS firm_id, p.origin_q::INTEGER AS origin_q,
       p.item_id::SMALLINT AS item_id, p.horizon::TINYINT AS horizon,
       0::SMALLINT AS component,
       CASE WHEN c.x IS NULL THEN p.x ELSE c.x END AS mu
FROM points AS p
LEFT JOIN changed AS c
  ON c.firm_id = p.firm_id AND c.origin_q = p.origin_q AND c.item_id = p.item_id
 AND c.horizon = p.horizon
ORDER BY p.origin_q, p.firm_id, p.item_id, p.horizon
