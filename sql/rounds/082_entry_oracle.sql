-- The synthetic oracle's forecasts for round getvariable('round_id'), as sql/oracle/010
-- makes them for the static test: the simulated dollar futures of raw.oracle_paths from
-- the oracle origins at the round's quarter (a grown synthetic panel's frontier,
-- docs/rounds.md) that are cells of the round, standardized (panel.pf_standardize) with
-- the round's frozen z, k, mu and sigma; mu = the mean over paths, sigma = their standard deviation (floored at
-- 1e-4).
WITH long AS (
    UNPIVOT (SELECT * FROM raw.oracle_paths WHERE horizon BETWEEN 1 AND 20)
    ON COLUMNS(* EXCLUDE (origin_id, horizon, path))
    INTO NAME item VALUE v
),
x AS (
    SELECT oo.gvkey, i.item, p.horizon,
           panel.pf_standardize(p.v, pr.k, o.z, pr.mu, pr.sigma) AS x
    FROM long AS p
    JOIN ref.items AS i ON i.item = p.item
    JOIN raw.oracle_origins AS oo ON oo.origin_id = p.origin_id
    JOIN rounds.rounds AS r ON r.round_id = getvariable('round_id') AND r.origin_q = oo.origin_q
    JOIN rounds.origins AS o ON o.round_id = r.round_id AND o.gvkey = oo.gvkey
    JOIN rounds.baselines AS b
      ON b.round_id = r.round_id AND b.gvkey = oo.gvkey AND b.item_id = i.item_id
    JOIN rounds.params AS pr ON pr.round_id = r.round_id AND pr.item_id = i.item_id
)
SELECT gvkey, item AS target, getvariable('origin_q')::INTEGER AS origin_q,
       horizon::TINYINT AS horizon, avg(x) AS mu,
       greatest(coalesce(stddev_samp(x), 0.0), 1e-4) AS sigma
FROM x
GROUP BY gvkey, item, horizon
ORDER BY gvkey, item, horizon;
