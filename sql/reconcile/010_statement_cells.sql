-- Statement cells to reconcile: the temp table reconcile_points from the identifier
-- points (sql/eval/079's view of the parent's point forecast and sd per cell), panel.origins, panel.origin_params,
-- panel.item_k and ref.identities. One row per forecast cell (firm, origin, horizon,
-- item) of an item that belongs to some identity: the point forecast x (mean of the
-- mixture components; a cell with a non-finite component is left out, as in scoring),
-- its value in reported units v = panel.pf_destandardize(x) with the ORIGIN's deflator
-- and parameters, and the delta-method sd of v, dollar_sd = |dv/dx| s with
-- dv/dx = z cosh(x sigma + mu) sigma / k and s the predictive sd in standardized space
-- (moment-matched over components, sqrt(mean s_k^2 + var mu_k), floored at 1e-4 like
-- scoring; NULL when the submission has no sigma). Cells whose origin is not an eligible
-- origin cannot be taken to dollars and stay out (they pass through unchanged). Rows
-- are stored in (origin_q, firm_id, horizon, item_id) order so each origin quarter's
-- batch is a range scan.
CREATE OR REPLACE TEMP TABLE reconcile_points AS
WITH points AS (
    -- each cell's point forecast and its sd (sql/eval/079), the identities' items only
    SELECT firm_id, origin_q, item_id, horizon, x, s
    FROM {{ points }}
    WHERE item_id IN (SELECT item_id FROM ref.identities)
)
SELECT p.origin_q, p.firm_id, p.horizon, p.item_id,
       panel.pf_destandardize(p.x, k.k, o.z, op.mu, op.sigma) AS v,
       o.z * cosh(p.x * op.sigma + op.mu) * op.sigma / k.k
           * CASE WHEN p.s < 1e-4 THEN 1e-4 ELSE p.s END AS dollar_sd
FROM points AS p
JOIN panel.origins AS o ON o.firm_id = p.firm_id AND o.origin_q = p.origin_q
JOIN panel.origin_params AS op ON op.item_id = p.item_id AND op.q = p.origin_q
JOIN panel.item_k AS k ON k.item_id = p.item_id
ORDER BY p.origin_q, p.firm_id, p.horizon, p.item_id;
