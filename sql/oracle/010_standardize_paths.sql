-- Oracle forecasts from raw.oracle_paths (dollar futures simulated from the true latent
-- state at each sampled origin; one column per item): every path value is standardized
-- with the ORIGIN's frozen parameters, x = clip((asinh(k v / z_t) - mu_t) / sigma_t,
-- -6, 6) (the build's panel.pf_standardize), with k from panel.item_k, (mu_t, sigma_t: the divisor) from panel.origin_params at the
-- origin quarter and z_t the origin deflator (panel.origins). mu = mean of x over paths
-- (the squared-error optimum), sigma = its standard deviation over paths (floored at
-- 1e-4). Rows follow the forecast contract (firm_id, origin_q, item_id, horizon,
-- component, mu, sigma); origins that are not eligible origins of the build are left out.
WITH long AS (
    UNPIVOT (SELECT * FROM raw.oracle_paths WHERE horizon BETWEEN 1 AND 20)
    ON COLUMNS(* EXCLUDE (origin_id, horizon, path))
    INTO NAME item VALUE v
),
x AS (
    SELECT
        po.firm_id,
        oo.origin_q,
        i.item_id,
        p.horizon,
        panel.pf_standardize(p.v, k.k, po.z, op.mu, op.sigma) AS x
    FROM long AS p
    JOIN ref.items AS i ON i.item = p.item
    JOIN raw.oracle_origins AS oo ON oo.origin_id = p.origin_id
    JOIN panel.firms AS f ON f.gvkey = oo.gvkey
    JOIN panel.origins AS po ON po.firm_id = f.firm_id AND po.origin_q = oo.origin_q
    JOIN panel.item_k AS k ON k.item_id = i.item_id
    JOIN panel.origin_params AS op ON op.item_id = i.item_id AND op.q = oo.origin_q
)
SELECT
    CAST(firm_id AS INTEGER) AS firm_id,
    CAST(origin_q AS INTEGER) AS origin_q,
    CAST(item_id AS SMALLINT) AS item_id,
    CAST(horizon AS TINYINT) AS horizon,
    CAST(0 AS SMALLINT) AS component,
    avg(x) AS mu,
    greatest(coalesce(stddev_samp(x), 0.0), 1e-4) AS sigma
FROM x
GROUP BY firm_id, origin_q, item_id, horizon
ORDER BY firm_id, origin_q, item_id, horizon;
