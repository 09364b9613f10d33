-- Coherence of submission getvariable('submission_id') into eval.coherence, from
-- the identifier points (079's view of the submission's point forecast per cell): its
-- point forecasts on origins of split getvariable('split'),
-- de-standardized with the ORIGIN's frozen parameters, v = z_t sinh(x sigma_t
-- + mu_t) / k (panel.pf_destandardize; panel.origins, panel.origin_params, panel.item_k); for every identity
-- instance (firm, origin, horizon, identity) whose members are all forecast, the share
-- |sum_j s_j v_j| / sum_j |v_j|; median (and mean) by identity and overall ('ALL').
INSERT INTO eval.coherence
WITH points AS (
    -- each cell's point forecast (079)
    SELECT firm_id, origin_q, item_id, horizon, x FROM {{ points }}
),
dollars AS (
    SELECT p.firm_id, p.origin_q, p.item_id, p.horizon,
           panel.pf_destandardize(p.x, k.k, o.z, op.mu, op.sigma) AS v
    FROM points p
    JOIN panel.origins o
      ON o.firm_id = p.firm_id AND o.origin_q = p.origin_q AND o.split = getvariable('split')
    JOIN panel.origin_params op ON op.item_id = p.item_id AND op.q = p.origin_q
    JOIN panel.item_k k ON k.item_id = p.item_id
),
members AS (
    SELECT identity, count(*) AS m FROM ref.identities GROUP BY identity
),
instances AS (
    SELECT d.firm_id, d.origin_q, d.horizon, i.identity,
           count(*) AS n, sum(i.sign * d.v) AS net, sum(abs(d.v)) AS gross
    FROM dollars d
    JOIN ref.identities i ON i.item_id = d.item_id
    GROUP BY ALL
),
shares AS (
    SELECT i.identity, abs(i.net) / i.gross AS share
    FROM instances i
    JOIN members m ON m.identity = i.identity AND i.n = m.m
    WHERE i.gross > 0 AND isfinite(i.gross) AND isfinite(i.net)
)
SELECT
    getvariable('submission_id'),
    coalesce(identity, 'ALL'),
    count(*),
    median(share),
    avg(share),
    getvariable('eval_sql_version'),
    current_timestamp::TIMESTAMP
FROM shares
GROUP BY GROUPING SETS ((identity), ());
