-- Identity violation of a reconciliation's dollar statements, from the identifier
-- points (sql/eval/079's view of the parent's point forecast per cell), eval.reconcile_cells (job getvariable('reconcile_id')),
-- panel.origins, panel.origin_params, panel.item_k and ref.identities, on origins of
-- split getvariable('split'): every cell in reported units (the reconciled value where
-- the projection changed it, else the parent's point taken to dollars with
-- panel.pf_destandardize), and for every identity instance (firm, origin, horizon,
-- identity) whose members are all forecast, |sum_j s_j v_j| / sum_j |v_j|, as in
-- sql/eval/080_coherence.sql. One row: instances, median and largest share.
WITH points AS (
    -- each cell's point forecast (sql/eval/079), the identities' items only
    SELECT firm_id, origin_q, item_id, horizon, x
    FROM {{ points }}
    WHERE item_id IN (SELECT item_id FROM ref.identities)
),
dollars AS (
    SELECT p.firm_id, p.origin_q, p.item_id, p.horizon,
           coalesce(r.v, panel.pf_destandardize(p.x, k.k, o.z, op.mu, op.sigma)) AS v
    FROM points AS p
    JOIN panel.origins AS o
      ON o.firm_id = p.firm_id AND o.origin_q = p.origin_q AND o.split = getvariable('split')
    JOIN panel.origin_params AS op ON op.item_id = p.item_id AND op.q = p.origin_q
    JOIN panel.item_k AS k ON k.item_id = p.item_id
    LEFT JOIN eval.reconcile_cells AS r
      ON r.reconcile_id = getvariable('reconcile_id') AND r.firm_id = p.firm_id
     AND r.origin_q = p.origin_q AND r.item_id = p.item_id AND r.horizon = p.horizon
),
members AS (
    SELECT identity, count(*) AS m FROM ref.identities GROUP BY identity
),
instances AS (
    SELECT d.firm_id, d.origin_q, d.horizon, i.identity,
           count(*) AS n, sum(i.sign * d.v) AS net, sum(abs(d.v)) AS gross
    FROM dollars AS d
    JOIN ref.identities AS i ON i.item_id = d.item_id
    GROUP BY ALL
)
SELECT count(*) AS instances, median(abs(i.net) / i.gross) AS median_violation,
       max(abs(i.net) / i.gross) AS max_violation
FROM instances AS i
JOIN members AS m ON m.identity = i.identity AND i.n = m.m
WHERE i.gross > 0 AND isfinite(i.gross) AND isfinite(i.net)
